"""strata.dask's check of the workers before any task, its deadline, and its failure lines (issue 32
item 11): a cluster whose workers cannot import strata made the driver wait for ever and print
nothing. Kept apart from dask.py (the split and the combine); strata.dask exports preflight,
DaskAnalyzeError and DEFAULT_TIMEOUT_S."""

from __future__ import annotations

import time
from typing import Any, Dict, List, Optional

# The whole run's deadline by default (seconds): the scheduler, the workers' check and every task.
DEFAULT_TIMEOUT_S = 600.0
# The longest wait, within the deadline, for things that do not grow with the files: the scheduler to
# answer and a first worker to be connected.
_JOIN_WAIT_S = 30.0


class DaskAnalyzeError(RuntimeError):
    """One line naming the file, analysis or worker and what to do."""


class _Deadline:
    """A point in time `seconds` from now (monotonic clock)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        """Seconds left, at least a millisecond (a wait of 0 would mean no limit to some callers)."""
        return max(self.end - time.monotonic(), 0.001)


# What `preflight` runs on every worker. It is sent by value (compiled below into a module of no
# importable name, so Dask pickles its code, not a reference to strata.dask): a worker that cannot
# import strata can still run it and say so. Returns what the worker has, or what it lacks.
_PROBE_SOURCE = """
def strata_probe():
    import os, sys
    found = {"python": sys.executable}
    try:
        import strata
        from strata import _analysis
    except ModuleNotFoundError as e:
        top = (e.name or "").split(".")[0]
        found["lacks"] = ("the strata Python package" if top == "strata" else
                          "the Python module " + str(e.name) + " (strata needs it)") + " (" + str(e) + ")"
        return found
    except Exception as e:  # a strata package that does not import here
        found["lacks"] = "a strata package that imports (" + type(e).__name__ + ": " + \\
            ((str(e).splitlines() or [""])[0]) + ")"
        return found
    try:
        lib = _analysis._capi()
    except Exception as e:  # no libstrata_analysis_capi.so, or one of another C API
        found["lacks"] = "its libstrata (" + ((str(e).splitlines() or [type(e).__name__])[0]) + ")"
        return found
    found["package"] = os.path.dirname(os.path.dirname(os.path.realpath(strata.__file__)))
    found["capi"] = int(lib.strata_capi_version())
    found["libstrata"] = os.path.basename(os.path.realpath(os.path.join(os.path.dirname(lib._name),
                                                                        "libstrata.so")))
    return found
"""
_probe_namespace: Dict[str, Any] = {"__name__": "strata_dask_probe"}
exec(compile(_PROBE_SOURCE, "<strata.dask probe>", "exec"), _probe_namespace)
_probe = _probe_namespace["strata_probe"]


def _worker_problem(found: Any, here: Dict[str, Any]) -> Optional[str]:
    """What a worker's probe answer lacks compared with the driver's (None: nothing)."""
    if isinstance(found, BaseException):  # the probe itself failed there (Dask returned the error)
        return f"could not run Strata's check ({type(found).__name__}: {(str(found).splitlines() or [''])[0]})"
    if not isinstance(found, dict):
        return f"answered Strata's check with {type(found).__name__}"
    if found.get("lacks"):
        return f"lacks {found['lacks']}"
    theirs, ours = (found.get("capi"), found.get("libstrata")), (here.get("capi"), here.get("libstrata"))
    if theirs != ours:
        return (f"runs another Strata (C API {theirs[0]}, {theirs[1]}; the driver has C API {ours[0]}, "
                f"{ours[1]})")
    return None


def preflight(client: Any, deadline: Optional[_Deadline] = None) -> List[str]:
    """Checks every worker connected to `client`'s scheduler before any task: it imports this
    Strata's package and loads its library, of the driver's versions. Waits at most 30 s (and never
    past `deadline`) for a first worker. Returns the workers' addresses; raises DaskAnalyzeError
    (one line naming a worker and what it lacks) otherwise."""
    import distributed

    deadline = deadline or _Deadline(DEFAULT_TIMEOUT_S)
    here = _probe()
    if here.get("lacks"):
        raise DaskAnalyzeError(f"--dask: this Python ({here['python']}) lacks {here['lacks']}")
    join = min(_JOIN_WAIT_S, deadline.left())
    try:
        client.wait_for_workers(1, timeout=join)
    except (TimeoutError, distributed.TimeoutError):
        waited = f"{_JOIN_WAIT_S:g} s" if join >= _JOIN_WAIT_S else f"until --dask-timeout {deadline.seconds:g} s"
        raise DaskAnalyzeError(f"--dask: no worker is connected to the scheduler (waited {waited}): start "
                               f"workers with PYTHONPATH={here['package']} (docs/ranks.md)") from None
    try:
        answers = client.run(_probe, on_error="return", callback_timeout=deadline.left())
    except (TimeoutError, distributed.TimeoutError):
        raise DaskAnalyzeError(f"--dask: the workers did not answer Strata's check within {deadline.seconds:g} s "
                               "(--dask-timeout)") from None
    workers = client.scheduler_info().get("workers", {})
    problems = [(address, problem) for address, found in sorted(answers.items())
                if (problem := _worker_problem(found, here)) is not None]
    if problems:
        address, problem = problems[0]
        found = answers[address]
        about = [str(workers.get(address, {}).get("name", ""))] + \
            ([found["python"]] if isinstance(found, dict) and found.get("python") else [])
        about = [a for a in about if a and a != address]
        more = f" (and {len(problems) - 1} more of the {len(answers)} workers)" if len(problems) > 1 else ""
        raise DaskAnalyzeError(f"--dask: worker {address}" + (f" ({', '.join(about)})" if about else "") +
                               f" {problem}{more}: start every worker with PYTHONPATH={here['package']}, or "
                               "install this Strata on every host (docs/ranks.md)")
    return sorted(answers)


def terminal_safe(text: str) -> str:
    """`text` with what a terminal would act on written out, as export/text_escape.cc's
    escape_terminal: C0 and C1 controls and DEL as \\xNN (\\n, \\r, \\t), bidirectional overrides
    and lone surrogates as \\uNNNN, bytes that were not UTF-8 (surrogate escapes) as \\xNN. Worker
    names, interpreters and errors come from the workers: data, never terminal commands."""
    out = []
    for ch in text:
        cp = ord(ch)
        if 0xDC80 <= cp <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{cp - 0xDC00:02x}")
        elif cp < 0x20 or 0x7F <= cp <= 0x9F or 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069 or \
                0xD800 <= cp <= 0xDFFF:  # a lone surrogate, which no terminal encoding writes
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch) or
                       (f"\\x{cp:02x}" if cp < 0x80 else f"\\u{cp:04x}"))
        else:
            out.append(ch)
    return "".join(out)


def _failure_line(path: str, error: Exception, deadline: Optional[_Deadline]) -> str:
    import distributed

    if isinstance(error, (TimeoutError, distributed.TimeoutError)) and deadline is not None:
        return (f"{path}: no result from the workers within {deadline.seconds:g} s (--dask-timeout): a worker "
                "is stuck, or left, or the run needs more time; see the workers' logs")
    if isinstance(error, distributed.KilledWorker):
        last = getattr(getattr(error, "last_worker", None), "address", "")
        return (f"{path}: the worker running it died (killed, out of memory, or crashed) " +
                f"{getattr(error, 'allowed_failures', 0) + 1} times" + (f", last on {last}" if last else "") +
                "; see the workers' logs")
    line = str(error).splitlines()[0] if str(error) else type(error).__name__
    return line if line.startswith(path) else f"{path}: {line}"
