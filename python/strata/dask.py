"""strata.dask: `strata analyze` over many rank traces on a Dask cluster (issue 17 item 5).

    import strata.dask
    from distributed import Client
    result = strata.dask.analyze(["rank0.strata", "rank1.strata"], Client("tcp://host:8786"),
                                 analyses=["rank_breakdown", "idle_time"])
    print(result.csv(), end="")   # the bytes of `strata analyze A B -a ... --format csv`

or from the command line, `strata analyze TRACE... --dask tcp://HOST:PORT -a NAME --format csv`, which
runs `python3 -m strata.dask` (this module's main): one code path for both.

How the work is split: each input file is one task. A Dask worker loads the file through libstrata
(src/pyapi, the library `strata.load` uses): the parse and conversion, the costly part, run there.
Three kinds of partial come back:

- rows (`ROWS_PER_RANK`: rank_breakdown, idle_time; queue_length and comm_overlap, see
  `_rows_per_rank` and `_SORTED_ROWS`): the worker runs the analysis on its file alone and sends the
  rows, as the CSV prints each cell. Their tables have one row per (rank, ...) key computed from
  that rank's spans alone, ordered by rank first, so the combine is a stable sort by the rank
  column. queue_length's time series counts buckets from the earliest span of all ranks: it runs
  in two phases (`_two_phase`): the worker's task sends the rank's earliest start, then
  `second_phase` gets each rank's rows with --param origin_ns set to the smallest.
- compact per-rank records (`RANK_PARTIAL`: kernel_distribution, launch_stats, collective_wait,
  step_time): libstrata's partial of the analysis (src/analysis/rank_partials.h; e.g. per kernel
  name the rank's count, total and percentiles; per collective call the rank's start and end; per
  step its start and end). The driver hands all of them to libstrata's combine, which builds the
  tables; the local run is the same partial and combine over the one merged trace, so the two
  cannot drift.
- the rank's trace (`TRACE_PARTIAL`), only for comm_overlap with a --param top the driver cannot
  apply (not an integer): the worker sends its file's canonical trace as native .strata bytes
  (zstd); the driver opens those traces together through libstrata and runs the analysis (the
  same C++ merge and analysis as the local run), which reports the bad value as the local run
  does.

Every other analysis is refused with one line (`refusal`): only the rank analyses are split and
tested under Dask.

Before any task, every connected worker is checked (`preflight`): it imports this Strata's package
and loads its library, of the driver's C API and libstrata version; the tasks then run on those
workers only. A worker that cannot is named in one line with what it lacks. The whole run has a
deadline (`dask_timeout`, `strata analyze --dask-timeout`): what did not answer by then is named in
one line; nothing waits for ever on a cluster whose workers cannot run the tasks.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import logging
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

# The workers' check, the deadline and the failure lines (_dask_check.py); DaskAnalyzeError is
# strata.dask's own error.
from ._dask_check import (_JOIN_WAIT_S, DEFAULT_TIMEOUT_S, DaskAnalyzeError, _Deadline, _failure_line, preflight,
                          terminal_safe)

__all__ = ["analyze", "DaskResult", "ROWS_PER_RANK", "RANK_PARTIAL", "TRACE_PARTIAL", "DaskAnalyzeError", "main",
           "preflight", "DEFAULT_TIMEOUT_S"]


# Analyses whose table rows are per rank, from that rank's spans only, ordered by rank first
# (rank_analyses.cc: rank_breakdown's map by rank; rank_device.cc: idle_time's map by
# (rank, device, stream)). Their combine: the partials' rows, stably sorted by the rank column.
ROWS_PER_RANK = ("rank_breakdown", "idle_time")

# Cross-rank analyses with a per-rank partial in libstrata (strata_capi_rank_partial): the worker
# sends the records, the driver combines them (strata_capi_combine_partials).
RANK_PARTIAL = ("kernel_distribution", "launch_stats", "collective_wait", "step_time")

# Row analyses with a step on the driver (`_rows_per_rank`). comm_overlap with a --param top the
# driver cannot apply (not an integer) falls back to the rank's canonical trace, combined by opening
# all of them together in libstrata, whose run reports the value as the local run does; it is the
# only case that ships a trace. queue_length with a time series runs in two phases (`_two_phase`).
TRACE_PARTIAL = ("comm_overlap",)
_TWO_PHASE = ("queue_length",)
_SPLIT = ROWS_PER_RANK + RANK_PARTIAL + TRACE_PARTIAL + _TWO_PHASE


def _rows_per_rank(name: str, params: Dict[str, str]) -> bool:
    """Whether `name` with its --param values splits as rows in one phase. queue_length's summary
    and histogram are per (rank, device, stream) from that rank's spans (rank_queue.cc), ordered by
    rank first; only its time series (bucket_us other than 0) counts buckets from the earliest span
    of all ranks, which takes a second phase unless the user gave that origin (origin_ns)."""
    if name in ROWS_PER_RANK:
        return True
    if name == "queue_length":  # no series, or a series whose bucket origin the user gave
        return "origin_ns" in params or params.get("bucket_us", "0") in ("0", "")
    try:
        if name in _TOP_ON_DRIVER:  # a top the driver can apply (int, as Params::get_int reads it)
            int(params.get("top", "50"))
            return True
    except ValueError:
        pass
    return False


def _two_phase(name: str, params: Dict[str, str]) -> bool:
    """queue_length's time series counts buckets from the earliest span of all ranks: phase 1 (the
    worker's task) returns the rank's earliest start, phase 2 runs the rank's rows with --param
    origin_ns set to the smallest of them (a bucket_us that is not a number: phase 2 reports it as
    the local run does)."""
    return name in _TWO_PHASE and not _rows_per_rank(name, params)


def _traced(name: str, params: Dict[str, str]) -> bool:
    return name in TRACE_PARTIAL and not _rows_per_rank(name, params)
_REFUSAL_REASON = "it is not a rank analysis (only those are split and tested under Dask)"
# zstd level of the shipped traces: small on the network, cheap to write.
_TRACE_ZSTD_LEVEL = 3


@dataclass
class _Table:
    name: str
    columns: List[bytes]
    rows: List[List[bytes]]
    keys: Optional[List[float]] = None  # per row, the unrounded sort key of a _SORTED_ROWS table


# Row tables sorted across ranks and cut to --param top (default): comm_overlap's per-collective rows
# are per (rank, collective name) from that rank's spans, but ordered by unrounded time over all
# ranks, ties by (rank, name). The worker sends all its rows (top=0) with each row's unrounded key;
# the driver sorts and cuts them as rank_device.cc does.
_SORTED_ROWS = {"comm_overlap_by_collective": (b"time_ms", 50)}
_TOP_ON_DRIVER = ("comm_overlap",)


@dataclass
class _Partial:
    """What a worker sends back for one file: its ranks, its span count, and per analysis either the
    missing-input line or its tables (cells as the CSV prints them, before CSV quoting)."""
    path: str
    ranks: List[int]
    spans: int
    worker: str = ""  # the Dask worker's address that ran it
    # the row analyses' (missing-input line, tables), in order; None until a _two_phase one's phase 2
    results: List[Optional[Tuple[str, List[_Table]]]] = field(default_factory=list)
    trace: bytes = b""  # the file's canonical trace (native, zstd) when a TRACE_PARTIAL analysis runs
    records: Dict[str, bytes] = field(default_factory=dict)  # per RANK_PARTIAL analysis, its partial
    origin: Optional[int] = None  # the file's earliest span start (ns), sent when a _two_phase one runs

    def payload_bytes(self) -> int:
        """Bytes of cell text, records and trace: what the partial costs on the network, about (the
        cost model)."""
        cells = sum(len(c) for result in self.results if result is not None for t in result[1] for row in t.rows
                    for c in row)
        return len(self.trace) + sum(len(r) for r in self.records.values()) + cells


@dataclass
class DaskResult:
    """The combined tables of the chosen analyses, in the local run's order; `missing` holds each
    analysis that had no input on any rank, with the local run's line."""
    tables: List[_Table]
    missing: List[Tuple[str, str]]
    partial_bytes: int = 0
    spans: int = 0
    workers: List[str] = field(default_factory=list)  # per input file, the worker that ran it

    def csv(self) -> bytes:
        """The bytes `strata analyze --format csv` prints to standard output (export/table_render.cc:
        "# NAME" lines between tables when there are several)."""
        out = bytearray()
        for t in self.tables:
            if len(self.tables) > 1:
                out += b"# " + t.name.encode() + b"\n"
            out += b",".join(_csv_field(c) for c in t.columns) + b"\n"
            for row in t.rows:
                out += b",".join(_csv_field(c) for c in row) + b"\n"
        return bytes(out)


def _utf8_length(text: bytes, i: int) -> int:
    """Length of the well-formed UTF-8 sequence at i, 0 when there is none (text_escape.cc's
    utf8_length: surrogates, overlong forms and code points above U+10FFFF are not well-formed)."""
    lead = text[i]
    n = 1 if lead < 0x80 else 2 if 0xC2 <= lead <= 0xDF else 3 if 0xE0 <= lead <= 0xEF else \
        4 if 0xF0 <= lead <= 0xF4 else 0
    if n == 0 or i + n > len(text):
        return 0
    try:
        text[i:i + n].decode("utf-8")
    except UnicodeDecodeError:
        return 0
    return n


def _csv_field(text: bytes) -> bytes:
    """export/text_escape.cc's append_csv_field: quoted when it holds , " CR or LF (quotes doubled);
    bytes that are not well-formed UTF-8 become U+FFFD, one per byte."""
    try:
        text.decode("utf-8")
        clean = text
    except UnicodeDecodeError:
        out, i = bytearray(), 0
        while i < len(text):
            n = _utf8_length(text, i)
            out += text[i:i + n] if n else "\ufffd".encode()
            i += n or 1
        clean = bytes(out)
    if any(ch in clean for ch in (b",", b'"', b"\r", b"\n")):
        return b'"' + clean.replace(b'"', b'""') + b'"'
    return clean


def _raw_strings(s: Any) -> List[bytes]:
    n = int(s.count)
    if n == 0:
        return []
    offsets = [int(s.offsets[i]) for i in range(n + 1)]
    data = ctypes.string_at(s.bytes, offsets[-1]) if offsets[-1] else b""
    return [data[offsets[i]:offsets[i + 1]] for i in range(n)]


def _run_tables(lib: Any, handle: int, path: str, name: str, params: Dict[str, str]) -> Tuple[str, List[_Table]]:
    keys = [k.encode() for k in params]
    values = [v.encode() for v in params.values()]
    key_arr = (ctypes.c_char_p * max(1, len(keys)))(*keys)
    value_arr = (ctypes.c_char_p * max(1, len(values)))(*values)
    tables = lib.strata_capi_run_analysis(handle, name.encode(), key_arr, value_arr, len(keys))
    if not tables:
        raise DaskAnalyzeError(f"{path}: {name}: " + (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
    return _read_tables(lib, tables)


def _read_tables(lib: Any, tables: int) -> Tuple[str, List[_Table]]:
    """A strata_capi_tables object's missing-input line and tables (cells as the CSV prints them);
    frees the object."""
    try:
        missing = lib.strata_capi_missing_input(tables).decode("utf-8", "replace")
        out = []
        for t in range(int(lib.strata_capi_table_count(tables))):
            columns = _raw_strings(lib.strata_capi_table_columns(tables, t))
            n_rows = int(lib.strata_capi_table_rows(tables, t))
            cells = [_raw_strings(lib.strata_capi_column_text(tables, t, c)) for c in range(len(columns))]
            rows = [list(r) for r in zip(*cells)] if columns else [[] for _ in range(n_rows)]
            out.append(_Table(lib.strata_capi_table_name(tables, t).decode("utf-8", "replace"), columns, rows))
            if out[-1].name in _SORTED_ROWS:
                keys = (ctypes.c_double * max(1, n_rows))()
                lib.strata_capi_column_reals(tables, t, columns.index(_SORTED_ROWS[out[-1].name][0]),
                                             ctypes.cast(keys, ctypes.c_void_p))
                out[-1].keys = list(keys)[:n_rows]
        return missing, out
    finally:
        lib.strata_capi_tables_free(tables)


def _worker_address() -> str:
    try:
        from distributed import get_worker

        return str(get_worker().address)
    except (ImportError, ValueError):  # called outside a worker (a test, a local run)
        return ""


def _saved_trace(lib: Any, handle: int, path: str) -> bytes:
    """The opened trace as native .strata bytes (strata_capi_save into a private temporary file)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="strata-dask-") as tmp:
        out = os.path.join(tmp, "rank.strata")
        if not lib.strata_capi_save(handle, out.encode(), _TRACE_ZSTD_LEVEL):
            raise DaskAnalyzeError(f"{path}: cannot save the rank's trace for the driver: " +
                                   (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
        with open(out, "rb") as f:
            return f.read()


def _param_arrays(params: Dict[str, str]) -> Tuple[Any, Any, int]:
    keys = [k.encode() for k in params]
    values = [v.encode() for v in params.values()]
    return (ctypes.c_char_p * max(1, len(keys)))(*keys), (ctypes.c_char_p * max(1, len(values)))(*values), len(keys)


def _rank_records(lib: Any, handle: int, path: str, name: str, params: Dict[str, str]) -> bytes:
    """The file's partial of RANK_PARTIAL analysis `name` (strata_capi_rank_partial)."""
    data, size = ctypes.POINTER(ctypes.c_char)(), ctypes.c_uint64()
    if not lib.strata_capi_rank_partial(handle, name.encode(), *_param_arrays(params), ctypes.byref(data),
                                        ctypes.byref(size)):
        raise DaskAnalyzeError(f"{path}: {name}: " + (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
    try:
        return ctypes.string_at(data, size.value)
    finally:
        lib.strata_capi_buffer_free(data)


def _earliest_start(lib: Any, handle: int) -> Optional[int]:
    """The trace's earliest span start (ns; its spans are sorted by start), None without spans."""
    import numpy as np

    from . import _analysis

    n = int(lib.strata_capi_span_count(handle))
    if n == 0:
        return None
    starts = np.empty(n, dtype=np.int64)
    columns = _analysis._SpanColumns()
    columns.start_ns = starts.ctypes.data
    if lib.strata_capi_fill_spans(handle, ctypes.byref(columns)) != 1:
        raise DaskAnalyzeError("reading the trace's span starts failed: " +
                               (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
    return int(starts.min())


def rank_partial(path: str, analyses: Sequence[str], params: Dict[str, Dict[str, str]]) -> _Partial:
    """A worker's task: loads one file through libstrata, runs each ROWS_PER_RANK analysis on it
    alone, computes each RANK_PARTIAL analysis's records, saves the file's trace when a
    TRACE_PARTIAL analysis is among `analyses`, and sends its earliest span start when a _two_phase
    one is (its rows come from `second_phase` then: a placeholder holds their place)."""
    from . import _analysis  # on the worker: pandas and the C library load here, not in the driver

    trace = _analysis.load(path)
    try:
        lib = _analysis._capi()
        handle = trace._live()
        info = json.loads(lib.strata_capi_info_json(handle).decode("utf-8", "replace"))
        result = _Partial(path, [int(p["rank"]) for p in info["processes"]],
                          int(lib.strata_capi_span_count(handle)), _worker_address())
        for name in analyses:
            if _two_phase(name, params.get(name, {})):
                result.results.append(None)
                result.origin = _earliest_start(lib, handle)
            elif _rows_per_rank(name, params.get(name, {})):
                # All rows where the driver sorts across ranks and cuts to top.
                own = dict(params.get(name, {}), top="0") if name in _TOP_ON_DRIVER else params.get(name, {})
                result.results.append(_run_tables(lib, handle, path, name, own))
            elif name in RANK_PARTIAL:
                result.records[name] = _rank_records(lib, handle, path, name, params.get(name, {}))
        if any(_traced(name, params.get(name, {})) for name in analyses):
            result.trace = _saved_trace(lib, handle, path)
        return result
    finally:
        trace.close()


def second_phase(path: str, name: str, params: Dict[str, str]) -> Tuple[str, List[_Table]]:
    """Phase 2 of a _two_phase analysis on a worker: the file's rows with `params` (origin_ns set by
    the driver). The file is loaded again (phase 1 let it go: a worker holding every rank's trace
    between the phases would need their memory)."""
    from . import _analysis

    trace = _analysis.load(path)
    try:
        return _run_tables(_analysis._capi(), trace._live(), path, name, params)
    finally:
        trace.close()


def _global_origin(partials: Sequence[_Partial]) -> int:
    """The earliest span start of all ranks, as the merged trace's (0 when no rank has a span)."""
    starts = [p.origin for p in partials if p.origin is not None]
    return min(starts) if starts else 0


def _check_ranks(partials: Sequence[_Partial]) -> None:
    owner: Dict[int, str] = {}
    for p in partials:
        if not p.ranks or any(r < 0 for r in p.ranks):
            raise DaskAnalyzeError(f"{p.path}: a process without a rank; --dask combines per-rank results, so "
                                   "every process needs its rank (record under torchrun/SLURM/MPI, or run "
                                   "without --dask)")
        for r in sorted(set(p.ranks)):
            if r in owner:
                raise DaskAnalyzeError(f"{p.path}: rank {r} is also in {owner[r]}; --dask needs each rank in "
                                       "one file (run without --dask to analyze them together)")
            owner[r] = p.path


def _sorted_across_ranks(table: _Table, rows: List[List[bytes]], keys: List[float],
                         params: Dict[str, str]) -> List[List[bytes]]:
    """A _SORTED_ROWS table's rows (already in rank order): stably by the unrounded key, largest
    first, cut to --param top (0 or less: all)."""
    order = sorted(range(len(rows)), key=lambda i: -keys[i])
    top = int(params.get("top", str(_SORTED_ROWS[table.name][1])))
    if top > 0:
        order = order[:top]
    return [rows[i] for i in order]


def _combine_rows(name: str, per_file: List[List[_Table]], params: Optional[Dict[str, str]] = None) -> List[_Table]:
    """The local run's tables from the files' tables: rows stably sorted by the rank column (each
    file's rows are already in rank order, and its ranks are its own); a _SORTED_ROWS table then
    sorted by its key across ranks."""
    first = per_file[0]
    combined = []
    for k, table in enumerate(first):
        if b"rank" not in table.columns:
            raise DaskAnalyzeError(f"{name}: table {table.name} has no rank column; it cannot combine per rank")
        column = table.columns.index(b"rank")
        rows, keys = [], []
        for tables in per_file:
            if len(tables) != len(first) or tables[k].columns != table.columns:
                raise DaskAnalyzeError(f"{name}: the files gave tables of different shapes; run without --dask")
            rows.extend(tables[k].rows)
            keys.extend(tables[k].keys or [0.0] * len(tables[k].rows))
        order = sorted(range(len(rows)), key=lambda i: int(rows[i][column]))
        rows, keys = [rows[i] for i in order], [keys[i] for i in order]
        if table.name in _SORTED_ROWS:
            rows = _sorted_across_ranks(table, rows, keys, params or {})
        combined.append(_Table(table.name, table.columns, rows))
    return combined


def _combine_traces(names: Sequence[str], partials: Sequence[_Partial],
                    params: Dict[str, Dict[str, str]]) -> Dict[str, Tuple[str, List[_Table]]]:
    """Runs the TRACE_PARTIAL analyses `names` on the partials' traces opened together, in input
    order (as the local run opens the files): (missing-input line, tables) per analysis."""
    import tempfile

    from . import _analysis

    lib = _analysis._capi()
    with tempfile.TemporaryDirectory(prefix="strata-dask-") as tmp:
        files = []
        for k, p in enumerate(partials):
            files.append(os.path.join(tmp, f"{k:06d}.strata"))
            with open(files[-1], "wb") as f:
                f.write(p.trace)
        encoded = [f.encode() for f in files]
        handle = lib.strata_capi_open((ctypes.c_char_p * len(encoded))(*encoded), len(encoded), b"native")
        if not handle:
            raise DaskAnalyzeError("cannot open the ranks' traces sent by the workers: " +
                                   (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
        try:
            return {name: _run_tables(lib, handle, "the combined ranks", name, params.get(name, {}))
                    for name in names}
        finally:
            lib.strata_capi_free(handle)


def _combine_records(name: str, partials: Sequence[_Partial], params: Dict[str, str]) -> Tuple[str, List[_Table]]:
    """RANK_PARTIAL analysis `name` over the partials' records (libstrata's combine)."""
    from . import _analysis

    lib = _analysis._capi()
    records = [p.records[name] for p in partials]
    tables = lib.strata_capi_combine_partials(
        name.encode(), (ctypes.c_char_p * max(1, len(records)))(*records),
        (ctypes.c_uint64 * max(1, len(records)))(*[len(r) for r in records]), len(records),
        *_param_arrays(params))
    if not tables:
        raise DaskAnalyzeError(f"{name}: combining the ranks' partials: " +
                               (lib.strata_capi_last_error() or b"").decode("utf-8", "replace"))
    return _read_tables(lib, tables)


def combine(analyses: Sequence[str], partials: Sequence[_Partial],
            params: Optional[Dict[str, Dict[str, str]]] = None) -> DaskResult:
    """Joins the workers' partials into the local run's tables (as `strata analyze` over all files)."""
    _check_ranks(partials)
    result = DaskResult([], [], sum(p.payload_bytes() for p in partials), sum(p.spans for p in partials),
                        [p.worker for p in partials])
    params = params or {}
    traced_names = [n for n in analyses if _traced(n, params.get(n, {}))]
    traced = _combine_traces(traced_names, partials, params) if traced_names else {}
    row_index = 0
    for name in analyses:
        if name in traced or name in RANK_PARTIAL:
            missing, tables = traced[name] if name in traced else \
                _combine_records(name, partials, params.get(name, {}))
            if missing:
                result.missing.append((name, missing))
            result.tables.extend(tables)
            continue
        results = [p.results[row_index] for p in partials]
        row_index += 1
        if any(r is None for r in results):
            raise DaskAnalyzeError(f"{name}: phase 2 (each rank's rows with the ranks' common origin) has not "
                                   "run on these partials: strata.dask.analyze runs both phases")
        present = [tables for missing, tables in results if not missing]
        if not present:
            result.missing.append((name, results[0][0]))
            continue
        result.tables.extend(_combine_rows(name, present, params.get(name, {})))
    return result


def refusal(name: str) -> Optional[str]:
    """The one line --dask prints for an analysis it cannot split; None for one it can."""
    if name in _SPLIT:
        return None
    return (f"{name} is local-only under --dask: {_REFUSAL_REASON}; run it without --dask (--dask splits "
            f"{', '.join(_SPLIT)})")


def _params_per_analysis(analyses: Sequence[str], params: Dict[str, Any]) -> Dict[str, Dict[str, str]]:
    """Each analysis gets the --param keys it reads (as the local run's check_param_keys: a key that
    no chosen analysis reads is an error)."""
    from . import _analysis

    declared = {e["name"]: set(e["params"]) for e in json.loads(_analysis._capi().strata_capi_analyses_json())}
    text = {k: ("true" if v is True else "false" if v is False else str(v)) for k, v in params.items()}
    for key in text:
        if not any(key in declared.get(n, ()) for n in analyses):
            raise DaskAnalyzeError(f"--param {key}: none of the chosen analyses ({', '.join(analyses)}) reads it")
    return {n: {k: v for k, v in text.items() if k in declared.get(n, ())} for n in analyses}


def analyze(paths: Sequence[Any], client: Any, analyses: Sequence[str] = _SPLIT,
            dask_timeout: Union[float, _Deadline] = DEFAULT_TIMEOUT_S, **params: Any) -> DaskResult:
    """Runs `analyses` over the rank traces `paths` on the Dask `client`'s workers (one task per
    file) and combines the partials; result.csv() equals `strata analyze PATHS... --format csv`.
    Every worker is checked first (`preflight`) and runs the tasks only if it passes; the whole run
    ends within `dask_timeout` seconds. Raises DaskAnalyzeError (one line) for an analysis that
    cannot be split, a file without ranks, a worker that lacks Strata, a task that failed on a
    worker, or the deadline."""
    # main's deadline began before it connected to the scheduler
    deadline = dask_timeout if isinstance(dask_timeout, _Deadline) else _Deadline(dask_timeout)
    paths = [os.path.abspath(os.fspath(p)) for p in paths]
    analyses = list(analyses)
    if not paths:
        raise DaskAnalyzeError("no input file")
    if not analyses:
        raise DaskAnalyzeError("name the analyses to run (-a NAME); --dask splits " + ", ".join(_SPLIT))
    for name in analyses:
        if (line := refusal(name)) is not None:
            raise DaskAnalyzeError(line)
    per_analysis = _params_per_analysis(analyses, params)
    workers = preflight(client, deadline)
    futures = client.map(rank_partial, paths, analyses=analyses, params=per_analysis, pure=False,
                         workers=workers, allow_other_workers=False)
    try:
        partials = [_task_result(path, future, deadline) for path, future in zip(paths, futures)]
        _check_ranks(partials)
        _run_second_phase(client, analyses, partials, per_analysis, deadline)
    except DaskAnalyzeError:
        try:
            client.cancel(futures)  # nothing of this run stays queued on a shared cluster
        except Exception:  # noqa: BLE001 - a client that lost its scheduler: the line below says why
            pass
        raise
    return combine(analyses, partials, per_analysis)


def _run_second_phase(client: Any, analyses: Sequence[str], partials: List[_Partial],
                      params: Dict[str, Dict[str, str]], deadline: Optional[_Deadline] = None) -> None:
    """Phase 2 of each _two_phase analysis: every file's rows with the ranks' common origin, into the
    placeholder phase 1 left in the partial's results (each file's task preferably on the worker
    that ran its phase 1)."""
    row_index = 0
    for name in analyses:
        own = params.get(name, {})
        if name in RANK_PARTIAL or _traced(name, own):
            continue
        if _two_phase(name, own):
            with_origin = dict(own, origin_ns=str(_global_origin(partials)))
            futures = [client.submit(second_phase, p.path, name, with_origin, pure=False,
                                     workers=[p.worker] if p.worker else None, allow_other_workers=True)
                       for p in partials]
            for p, future in zip(partials, futures):
                p.results[row_index] = _task_result(p.path, future, deadline)
        row_index += 1


def _task_result(path: str, future: Any, deadline: Optional[_Deadline] = None) -> Any:
    """A worker task's result; its failure, a worker that died running it, or the deadline as one
    DaskAnalyzeError line naming the file."""
    try:
        return future.result() if deadline is None else future.result(timeout=deadline.left())
    except DaskAnalyzeError:
        raise
    except ModuleNotFoundError as e:
        raise DaskAnalyzeError(f"{path}: a Dask worker cannot import {e.name}: start the workers with "
                               "PYTHONPATH=<strata>/lib/python (or install Strata on every host)") from None
    except Exception as e:  # noqa: BLE001 - any worker failure becomes the one line
        raise DaskAnalyzeError(_failure_line(path, e, deadline)) from None


def main(argv: Optional[Sequence[str]] = None) -> int:
    """`python3 -m strata.dask --scheduler ADDR -a NAME [-p K=V] FILE...` (what `strata analyze --dask`
    runs): prints the CSV of the local run; one error line and status 1 otherwise."""
    parser = argparse.ArgumentParser(prog="strata analyze --dask", description=main.__doc__)
    parser.add_argument("--scheduler", required=True, help="the Dask scheduler, tcp://HOST:PORT")
    parser.add_argument("-a", "--analysis", action="append", default=[])
    parser.add_argument("-p", "--param", action="append", default=[])
    parser.add_argument("--format", default="csv")
    parser.add_argument("--timeout", type=float, default=None,
                        help="the whole run's deadline in seconds (strata analyze --dask-timeout; default "
                        f"$STRATA_DASK_TIMEOUT, else {DEFAULT_TIMEOUT_S:g}); the scheduler is waited for at most "
                        f"{_JOIN_WAIT_S:g} s of it")
    parser.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    prog = "strata analyze"
    try:
        timeout = args.timeout if args.timeout is not None else \
            float(os.environ.get("STRATA_DASK_TIMEOUT") or DEFAULT_TIMEOUT_S)
    except ValueError:
        print(f"{prog}: STRATA_DASK_TIMEOUT={os.environ['STRATA_DASK_TIMEOUT']!r} is not a number of seconds",
              file=sys.stderr)
        return 2
    if not 0 < timeout < 1e9:
        print(f"{prog}: --dask-timeout must be a positive number of seconds", file=sys.stderr)
        return 2
    if args.format != "csv":
        print(f"{prog}: --dask prints --format csv only (got {args.format})", file=sys.stderr)
        return 1
    names = [n for a in args.analysis for n in a.split(",") if n]
    params = {}
    for text in args.param:
        key, eq, value = text.partition("=")
        if not eq or not key:
            print(f"{prog}: --param needs KEY=VALUE, e.g. --param trim=0.2", file=sys.stderr)
            return 2
        params[key] = value
    missing_files = [f for f in args.files if not os.path.exists(f)]
    if missing_files:
        print(f"{prog}: {missing_files[0]}: no such file or directory", file=sys.stderr)
        return 1
    # Dask's own log lines (a scheduler that cannot be reached, asyncio's unretrieved futures) would
    # make the one error line several.
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    logging.getLogger("distributed").setLevel(logging.CRITICAL)
    try:
        from distributed import Client
    except ImportError:
        print(f"{prog}: --dask needs Dask's distributed package in {sys.executable} (apt-get install "
              "python3-distributed; Strata's driver runs isolated, python3 -I, so PYTHONPATH and the user's "
              "site-packages do not count: set STRATA_PYTHON to an interpreter that has it)", file=sys.stderr)
        return 1
    try:
        deadline = _Deadline(timeout)
        with Client(args.scheduler, timeout=min(_JOIN_WAIT_S, timeout)) as client:
            result = analyze(args.files, client, names, dask_timeout=deadline, **params)
    except DaskAnalyzeError as e:  # names workers, files and errors from the workers: escaped
        print(f"{prog}: {terminal_safe(str(e))}", file=sys.stderr)
        return 1
    except OSError as e:  # the scheduler cannot be reached (distributed raises OSError on timeout)
        line = str(e).splitlines()[0] if str(e) else type(e).__name__
        print(f"{prog}: {terminal_safe(f'--dask {args.scheduler}: {line}')}", file=sys.stderr)
        return 1
    for name, line in result.missing:  # libstrata's line already names the analysis, as the local run's
        print(line if line.startswith(name + ": ") else f"{name}: {line}", file=sys.stderr)
    sys.stdout.buffer.write(result.csv())
    sys.stdout.flush()
    return 1 if len(result.missing) == len(names) else 0


if __name__ == "__main__":
    # Through the package's module, not __main__: the workers unpickle strata.dask.rank_partial by name.
    from strata.dask import main as _main

    sys.exit(_main())
