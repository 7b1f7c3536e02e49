"""Strata for Python: the span API, the profiling schedule, and trace analysis.

    import strata
    with strata.span("predict", level="model", batch=8):
        model(x)

    @strata.span("train_step", level="model")
    def step(batch): ...

Analysis (any format `strata` reads; pandas DataFrames; docs/python-api.md)::

    trace = strata.load("run.strata")          # or a Kineto JSON, an nsys SQLite export, ...
    trace.spans                                # one row per span
    trace.analysis("layer_table", trim=0.1)    # any `strata analyze` table

Windows of steps, as torch.profiler's schedule (one trace file per active window)::

    with strata.profile(schedule=strata.schedule(wait=1, warmup=1, active=2),
                        on_trace_ready=print) as prof:
        for batch in loader:
            train_step(batch)
            prof.step()

When the process is not being recorded (not started by ``strata record`` and no ``strata.start``),
every span call returns immediately. A recording started from inside the process records PyTorch ops
from layer level on, as ``strata record --level layer`` does; what it cannot record here (library
interposers, CUPTI, the sampler) is said in one line on stderr and returned by ``not_recorded()``
(docs/python-api.md, "In a plain process"). The native runtime (libstrata.so) is found in this order: the
library already loaded into the process by ``strata record`` (LD_PRELOAD), ``$STRATA_LIB``, the
library folder of the Strata installation or build tree this package belongs to
(``_install_layout.py``, written by ``cmake --install``, says where it is relative to this package;
the build tree's ``lib/python/strata`` has it two folders up), then, for the source checkout's
``python/strata``, ``$STRATA_BUILD_DIR/lib`` and ``<repo>/build/lib``.
"""

from __future__ import annotations

import ctypes
import functools
import os
import sys
from typing import Any, Dict, List, Optional, Tuple

__all__ = [
    "LEVELS", "span", "begin", "end", "instant", "counter", "set_thread_name", "is_recording",
    "level_enabled", "get_level", "set_level", "current_traceparent", "inject_context", "start",
    "stop", "flush", "not_recorded", "load", "analyses", "profile", "schedule", "ProfilerAction", "StrataError",
    "MissingInputError",
]

# Level names and numbers: read from libstrata.so (strata_levels) once it is loaded, below, so the
# package and the library cannot disagree. Empty when the library was not found or is too old.
LEVELS: Dict[str, int] = {}
_LEVELS_MISSING = ""  # why LEVELS is empty: the error a level name then raises


def _level(level: Any) -> int:
    if isinstance(level, int):
        return level
    try:
        return LEVELS[level]
    except KeyError:
        if not LEVELS and _lib is None:
            return 0  # nothing records without the library (said once on stderr if asked to record)
        if not LEVELS:
            raise ValueError(f"level {level!r}: {_LEVELS_MISSING}") from None
        raise ValueError(f"unknown level {level!r}; one of {', '.join(LEVELS)}") from None


def _library_dir() -> str:
    """The folder of this installation's native libraries (libstrata.so and the tracers)."""
    # realpath: `strata record` reaches the installed package through a link (lib/strata/python).
    here = os.path.dirname(os.path.realpath(__file__))
    try:
        from ._install_layout import LIBDIR_FROM_PACKAGE  # installed tree
    except ImportError:
        LIBDIR_FROM_PACKAGE = os.path.join("..", "..")  # build tree: <build>/lib/python/strata
    return os.path.normpath(os.path.join(here, LIBDIR_FROM_PACKAGE))


def _native_library_paths(filename: str) -> List[str]:
    """Where a native library of this Strata may be, in order: this installation's (or build tree's)
    library folder, then, for the source checkout's python/strata, $STRATA_BUILD_DIR/lib and
    <repo>/build/lib."""
    here = os.path.dirname(os.path.abspath(__file__))
    paths = [os.path.join(_library_dir(), filename)]
    if os.environ.get("STRATA_BUILD_DIR"):
        paths.append(os.path.join(os.environ["STRATA_BUILD_DIR"], "lib", filename))
    paths.append(os.path.join(here, "..", "..", "build", "lib", filename))
    return paths


def _load_native() -> Optional[ctypes.CDLL]:
    candidates = []
    # Already in the process (preloaded by `strata record`): use that instance, not a second copy.
    try:
        main = ctypes.CDLL(None)
        if hasattr(main, "strata_span_begin"):
            return main
    except OSError:
        pass
    if os.environ.get("STRATA_LIB"):
        candidates.append(os.environ["STRATA_LIB"])
    candidates += _native_library_paths("libstrata.so")
    for path in candidates:
        if os.path.exists(path):
            return ctypes.CDLL(os.path.normpath(path), mode=ctypes.RTLD_GLOBAL)
    if os.environ.get("STRATA_OUTPUT"):
        # Asked to record, but nothing to record with: say so once instead of writing nothing.
        sys.stderr.write("strata: STRATA_OUTPUT is set but libstrata.so was not found (looked in: " +
                         ", ".join(os.path.normpath(p) for p in candidates) +
                         "); set STRATA_LIB=/path/to/libstrata.so or STRATA_BUILD_DIR=<build dir>\n")
    return None


_lib = _load_native()
if _lib is not None:
    _u64, _i64, _int, _dbl, _str = ctypes.c_uint64, ctypes.c_int64, ctypes.c_int, ctypes.c_double, ctypes.c_char_p
    _lib.strata_span_begin_n.argtypes = [_str, ctypes.c_size_t, _int]
    _lib.strata_span_begin_n.restype = _u64
    _lib.strata_span_end.argtypes = [_u64]
    _lib.strata_span_set_int.argtypes = [_u64, _str, _i64]
    _lib.strata_span_set_double.argtypes = [_u64, _str, _dbl]
    _lib.strata_span_set_string.argtypes = [_u64, _str, _str]
    _lib.strata_span_set_metric.argtypes = [_u64, _str, _dbl]
    _lib.strata_instant.argtypes = [_str, _int]
    _lib.strata_counter.argtypes = [_str, _dbl]
    _lib.strata_set_thread_name.argtypes = [_str]
    _lib.strata_level_enabled.argtypes = [_int]
    _lib.strata_set_level.argtypes = [_int]
    _lib.strata_current_traceparent.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    _lib.strata_start.argtypes = [_str, _int]


def _read_levels(lib: Optional[ctypes.CDLL]) -> Tuple[Dict[str, int], str]:
    """The library's levels, outermost first, with the CLI's alias "runtime" (for runtime_api);
    or ({}, why) when there is no library or it predates strata_levels."""
    if lib is None:
        return {}, ("level names come from libstrata.so, which was not found; install Strata, or set "
                    "STRATA_LIB=/path/to/libstrata.so (or pass the level's number)")
    try:
        listing = lib.strata_levels
    except AttributeError:
        return {}, ("the libstrata.so loaded has no strata_levels (older than this package); use the "
                    "libstrata.so of this installation (STRATA_LIB) or pass the level's number")
    listing.argtypes = [ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_int), ctypes.c_int]
    listing.restype = ctypes.c_int
    count = listing(None, None, 0)
    names, values = (ctypes.c_char_p * count)(), (ctypes.c_int * count)()
    listing(names, values, count)
    levels = {names[i].decode(): values[i] for i in range(count)}
    if "runtime_api" in levels:
        levels["runtime"] = levels["runtime_api"]  # the alias `--level runtime` also accepts
    return levels, ""


LEVELS, _LEVELS_MISSING = _read_levels(_lib)

# Variables libstrata sets for child processes (a STRATA_OUTPUT owner's private directory for its
# descendants' streams). Loaded after Python started, its setenv is invisible to os.environ, which
# subprocess and inject_context() use: copy them over, or a child would take the owner's file.
_CHILD_VARS = ("STRATA_OUTPUT", "STRATA_OUTPUT_DIR", "STRATA_OUTPUT_OWNER")


def _sync_child_environment() -> None:
    try:
        getenv = ctypes.CDLL(None).getenv
    except (OSError, AttributeError):
        return
    getenv.restype = ctypes.c_char_p
    getenv.argtypes = [ctypes.c_char_p]
    for key in _CHILD_VARS:
        raw = getenv(key.encode())
        if raw is None:
            os.environ.pop(key, None)
        elif os.environ.get(key) != os.fsdecode(raw):
            os.environ[key] = os.fsdecode(raw)


def _wrap_os_exit() -> None:
    """os._exit skips atexit: stop (flush) the recording first. With libstrata preloaded, its _exit
    does the same; this covers a libstrata loaded through STRATA_LIB (multiprocessing and DataLoader
    workers end with os._exit)."""
    real_exit = os._exit
    if getattr(real_exit, "_strata_wrapped", False):
        return

    @functools.wraps(real_exit)
    def _exit(status):
        try:
            _lib.strata_stop()
        finally:
            real_exit(status)

    _exit._strata_wrapped = True
    os._exit = _exit


if _lib is not None:
    _sync_child_environment()
    _wrap_os_exit()


def _gate(level: int) -> bool:
    return _lib is not None and _lib.strata_level_enabled(level) == 1


def _set_attr(span_id: int, key: str, value: Any) -> None:
    k = key.encode()
    if isinstance(value, bool) or isinstance(value, int):
        _lib.strata_span_set_int(span_id, k, int(value))
    elif isinstance(value, float):
        _lib.strata_span_set_double(span_id, k, value)
    else:
        _lib.strata_span_set_string(span_id, k, str(value).encode())


def begin(name: str, level: Any = "model", **attributes: Any) -> int:
    """Starts a span; returns its id (0 when not recorded). End it with end(id)."""
    lv = _level(level)
    if not _gate(lv):
        return 0
    raw = name.encode()
    span_id = _lib.strata_span_begin_n(raw, len(raw), lv)
    if span_id:
        for key, value in attributes.items():
            _set_attr(span_id, key, value)
    return span_id


def end(span_id: int) -> None:
    if span_id:
        _lib.strata_span_end(span_id)


class span:  # noqa: N801 - used as `with strata.span(...)` and `@strata.span(...)`
    """A span as a context manager or decorator. Keyword arguments become attributes."""

    __slots__ = ("name", "level", "attributes", "id")

    def __init__(self, name: str, level: Any = "model", **attributes: Any) -> None:
        self.name = name
        self.level = _level(level)
        self.attributes = attributes
        self.id = 0

    def __enter__(self) -> "span":
        self.id = begin(self.name, self.level, **self.attributes)
        return self

    def __exit__(self, *exc: Any) -> None:
        end(self.id)
        self.id = 0

    def set(self, key: str, value: Any) -> None:
        if self.id:
            _set_attr(self.id, key, value)

    def metric(self, key: str, value: float) -> None:
        if self.id:
            _lib.strata_span_set_metric(self.id, key.encode(), float(value))

    def __call__(self, fn):
        name, level, attributes = self.name, self.level, self.attributes

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            span_id = begin(name, level, **attributes)
            try:
                return fn(*args, **kwargs)
            finally:
                end(span_id)

        return wrapper


def instant(name: str, level: Any = "model") -> None:
    lv = _level(level)
    if _gate(lv):
        _lib.strata_instant(name.encode(), lv)


def counter(name: str, value: float) -> None:
    if _lib is not None:
        _lib.strata_counter(name.encode(), float(value))


def set_thread_name(name: str) -> None:
    if _lib is not None:
        _lib.strata_set_thread_name(name.encode())


def is_recording() -> bool:
    return _lib is not None and _lib.strata_is_recording() == 1


def level_enabled(level: Any) -> bool:
    return _gate(_level(level))


def get_level() -> int:
    return _lib.strata_get_level() if _lib is not None else 0


def set_level(level: Any) -> int:
    """Changes the recorded level of the running recording; returns the previous one. Not recording:
    returns 0 and says so on stderr (once); strata.start(path, level) takes the level to start at."""
    value = _level(level)
    if not is_recording():
        from . import _inprocess
        _inprocess.say_once("strata.set_level: this process is not recording (no strata record, STRATA_OUTPUT "
                            "or strata.start): nothing changes; pass the level to strata.start(path, level)")
        return 0
    previous = _lib.strata_set_level(value)
    if value > previous:
        from . import _inprocess
        _inprocess.arm(value)
    return previous


def current_traceparent() -> Optional[str]:
    """W3C traceparent of the innermost open span of this thread (None when not recording)."""
    if _lib is None:
        return None
    buf = ctypes.create_string_buffer(64)
    n = _lib.strata_current_traceparent(buf, len(buf))
    return buf.value.decode() if n else None


def inject_context(env: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    """Returns a copy of `env` (default os.environ) with TRACEPARENT set to the current context, for
    subprocess.run(..., env=strata.inject_context()) or an outgoing request's headers."""
    out = dict(os.environ if env is None else env)
    if out.get("STRATA_OUTPUT"):  # the child writes its own stream where the owner merges it
        for key in ("STRATA_OUTPUT_DIR", "STRATA_OUTPUT_OWNER"):
            if key in os.environ and key not in out:
                out[key] = os.environ[key]
    tp = current_traceparent()
    if tp:
        out["TRACEPARENT"] = tp
    return out


def start(path: str, level: Any = "model") -> bool:
    """Starts recording this process into `path` (when not started by `strata record`), down to
    `level`. Returns False when it cannot, with one line on stderr saying why (already recording,
    a path that cannot be created, ...). What `strata record --level` would add that cannot be set up
    from inside a running process (library interposers, CUPTI, the sampler) is said on stderr, once,
    and listed by not_recorded(); PyTorch ops are traced from layer level on (docs/python-api.md)."""
    if _lib is None:
        raise RuntimeError("libstrata.so not found: set STRATA_LIB or install Strata")
    value = _level(level)
    if LEVELS and value < min(LEVELS.values()):
        raise ValueError(f"strata.start: level {level!r} records nothing; the outermost level is "
                         f"{min(LEVELS, key=LEVELS.get)!r} ({min(LEVELS.values())})")
    if _lib.strata_start(os.fsencode(path), value) != 1:
        return False  # libstrata said why on stderr (already recording, a path it cannot create, ...)
    from . import _inprocess
    _inprocess.forget()  # of an earlier recording stopped without strata.stop (strata_stop, exit)
    _inprocess.arm(value)
    return True


def not_recorded() -> Dict[str, str]:
    """What the running recording asked for (its level) but this process cannot record, by level
    name, with why (the lines strata.start wrote); empty when everything asked for is recorded or
    nothing is recording."""
    from . import _inprocess
    return _inprocess.not_recorded()


def stop() -> None:
    if _lib is not None:
        _lib.strata_stop()
        from . import _inprocess
        _inprocess.forget()


def flush() -> None:
    if _lib is not None:
        _lib.strata_flush()


# The analysis side (pandas, libstrata_analysis_capi.so) is imported on first use: `import strata`
# in a recorded program stays as light as the span API.
def load(path: Any, *more_paths: Any, format: str = "auto") -> "Any":
    """Opens a trace of any format `strata` reads (several paths: one trace of repeated runs or
    ranks, as `strata analyze A B`). Returns a strata.Trace (spans, processes, attributes, stats,
    analysis tables as pandas DataFrames)."""
    from . import _analysis
    return _analysis.load(path, *more_paths, format=format)


def analyses() -> "Any":
    """The registered analyses (name, description, parameters) as a DataFrame."""
    from . import _analysis
    return _analysis.analyses()


from ._errors import MissingInputError, StrataError  # noqa: E402
from ._profiler import ProfilerAction, profile, schedule  # noqa: E402  (after the span API it uses)

if _lib is not None and is_recording() and "layer" in LEVELS and get_level() >= LEVELS["layer"]:
    # Recording since libstrata was loaded (STRATA_OUTPUT, or preloaded by strata record): PyTorch ops
    # are traced as strata.start would have them (strata record's own startup hook is the same one).
    from . import _inprocess
    _inprocess.arm(get_level(), collectors=False)
