"""strata.load(): a trace of any format as pandas DataFrames, and the analyses of `strata analyze`.

The work is done by libstrata_analysis_capi.so (src/pyapi/capi.h) through ctypes: the reader
registry opens the file, the C side fills numpy arrays column by column (no Python object per span),
and the analyses are the registered ones, run as `strata analyze --analysis NAME` runs them.
"""

from __future__ import annotations

import ctypes
import json
import os
from typing import Any, Dict, List, Optional, Union

import numpy as np
import pandas as pd

from . import _native_library_paths
from ._errors import MissingInputError, StrataError

__all__ = ["load", "analyses", "Trace", "Tables", "StrataError", "MissingInputError"]

_CAPI_VERSION = 3  # STRATA_CAPI_VERSION in src/pyapi/capi.h
_LEVEL, _KIND, _ACTIVITY, _LINK = 0, 1, 2, 3
_ATTR_TYPES = {1: "int", 2: "double", 3: "string", 4: "metric"}


class _Strings(ctypes.Structure):
    _fields_ = [("bytes", ctypes.c_void_p), ("offsets", ctypes.POINTER(ctypes.c_uint64)),
                ("count", ctypes.c_uint64)]


# (field, numpy dtype) of strata_capi_span_columns, in the struct's order.
_SPAN_FIELDS = [
    ("id", np.uint64), ("parent", np.int64), ("parent_id", np.uint64), ("depth", np.uint32),
    ("link", np.uint8), ("level", np.uint8), ("kind", np.uint8), ("activity", np.uint8),
    ("name", np.int32), ("process", np.uint16), ("pid", np.int64), ("tid", np.uint32),
    ("stream", np.int64), ("device", np.int32), ("rank", np.int64), ("start_ns", np.int64),
    ("end_ns", np.int64), ("duration_ns", np.int64), ("correlation_id", np.uint64), ("flags", np.uint8),
]
_ATTR_FIELDS = [("span", np.uint32), ("key", np.int32), ("type", np.uint8), ("int_value", np.int64),
                ("double_value", np.float64), ("text", np.int32)]


def _struct_of(fields):
    return type("_Columns", (ctypes.Structure,),
                {"_fields_": [(name, ctypes.c_void_p) for name, _ in fields]})


_SpanColumns = _struct_of(_SPAN_FIELDS)
_AttrColumns = _struct_of(_ATTR_FIELDS)
_lib: Optional[ctypes.CDLL] = None


def _capi() -> ctypes.CDLL:
    """libstrata_analysis_capi.so of this installation or build tree (found as libstrata.so is)."""
    global _lib
    if _lib is not None:
        return _lib
    paths = _native_library_paths("libstrata_analysis_capi.so")
    path = next((p for p in paths if os.path.exists(p)), None)
    if path is None:
        raise StrataError("libstrata_analysis_capi.so not found (looked in: " +
                          ", ".join(os.path.normpath(p) for p in paths) +
                          "); install Strata, or build it and set STRATA_BUILD_DIR=<build dir>")
    lib = ctypes.CDLL(os.path.normpath(path))
    lib.strata_capi_version.restype = ctypes.c_int
    if lib.strata_capi_version() != _CAPI_VERSION:
        raise StrataError(f"{path}: C API version {lib.strata_capi_version()}, this package needs "
                          f"{_CAPI_VERSION}: the library and the Python package come from different builds")
    vp, u64, sz, cstr = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t, ctypes.c_char_p
    signatures = {
        "strata_capi_last_error": ([], cstr),
        "strata_capi_open": ([ctypes.POINTER(cstr), sz, cstr], vp),
        "strata_capi_free": ([vp], None),
        "strata_capi_save": ([vp, cstr, ctypes.c_int], ctypes.c_int),
        "strata_capi_span_count": ([vp], u64),
        "strata_capi_attr_count": ([vp], u64),
        "strata_capi_fill_spans": ([vp, ctypes.POINTER(_SpanColumns)], ctypes.c_int),
        "strata_capi_span_names": ([vp], _Strings),
        "strata_capi_fill_attrs": ([vp, ctypes.POINTER(_AttrColumns)], ctypes.c_int),
        "strata_capi_attr_strings": ([vp], _Strings),
        "strata_capi_enum_name": ([ctypes.c_int, ctypes.c_int], cstr),
        "strata_capi_info_json": ([vp], cstr),
        "strata_capi_summary_json": ([vp], cstr),
        "strata_capi_analyses_json": ([], cstr),
        "strata_capi_run_analysis": ([vp, cstr, ctypes.POINTER(cstr), ctypes.POINTER(cstr), sz], vp),
        "strata_capi_tables_free": ([vp], None),
        "strata_capi_rank_partial": ([vp, cstr, ctypes.POINTER(cstr), ctypes.POINTER(cstr), sz, ctypes.POINTER(ctypes.POINTER(ctypes.c_char)), ctypes.POINTER(u64)],
                                     ctypes.c_int),
        "strata_capi_buffer_free": ([ctypes.POINTER(ctypes.c_char)], None),
        "strata_capi_combine_partials": ([cstr, ctypes.POINTER(cstr), ctypes.POINTER(u64), sz, ctypes.POINTER(cstr),
                                          ctypes.POINTER(cstr), sz], vp),
        "strata_capi_missing_input": ([vp], cstr),
        "strata_capi_table_count": ([vp], u64),
        "strata_capi_table_name": ([vp, u64], cstr),
        "strata_capi_table_title": ([vp, u64], cstr),
        "strata_capi_table_notes": ([vp, u64], cstr),
        "strata_capi_table_columns": ([vp, u64], _Strings),
        "strata_capi_table_rows": ([vp, u64], u64),
        "strata_capi_column_type": ([vp, u64, u64], ctypes.c_int),
        "strata_capi_column_ints": ([vp, u64, u64, vp, vp], ctypes.c_int),
        "strata_capi_column_reals": ([vp, u64, u64, vp], ctypes.c_int),
        "strata_capi_column_text": ([vp, u64, u64], _Strings),
    }
    for name, (args, res) in signatures.items():
        fn = getattr(lib, name)
        fn.argtypes, fn.restype = args, res
    _lib = lib
    return lib


def _error(lib: ctypes.CDLL) -> str:
    return (lib.strata_capi_last_error() or b"").decode("utf-8", "replace")


def _strings(s: _Strings) -> List[str]:
    n = int(s.count)
    if n == 0:
        return []
    offsets = np.ctypeslib.as_array(s.offsets, shape=(n + 1,)).tolist()
    data = ctypes.string_at(s.bytes, offsets[-1]) if offsets[-1] else b""
    return [data[offsets[i]:offsets[i + 1]].decode("utf-8", "replace") for i in range(n)]


def _categorical(codes: np.ndarray, names: List[str]) -> pd.Categorical:
    """Codes into `names` (-1: missing) as a Categorical; names that repeat share one category."""
    unique = list(dict.fromkeys(names))
    if len(unique) != len(names):
        position = {name: i for i, name in enumerate(unique)}
        remap = np.array([position[n] for n in names] + [-1], dtype=np.int32)
        codes = remap[codes]  # -1 indexes the trailing -1
    return pd.Categorical.from_codes(codes, categories=unique)


def _enum_column(lib: ctypes.CDLL, values: np.ndarray, which: int, ordered: bool = False) -> pd.Categorical:
    """An enum column (level, kind, activity, link) as a Categorical of the values present, ordered
    by value (levels: application < model < layer < ... < device)."""
    present = np.flatnonzero(np.bincount(values, minlength=256)) if len(values) else np.array([], int)
    names = [lib.strata_capi_enum_name(which, int(v)).decode() for v in present]
    remap = np.full(256, -1, dtype=np.int32)
    remap[present] = np.arange(len(present), dtype=np.int32)
    return pd.Categorical.from_codes(remap[values], categories=names, ordered=ordered)


def _fill(lib_fn, handle, struct_type, fields, n: int) -> Dict[str, np.ndarray]:
    arrays = {name: np.empty(n, dtype=dtype) for name, dtype in fields}
    columns = struct_type(*(arrays[name].ctypes.data for name, _ in fields))
    if lib_fn(handle, ctypes.byref(columns)) != 1:
        raise StrataError("reading the trace's columns failed")
    return arrays


class Tables(dict):
    """The tables of an analysis that gives several (name -> DataFrame), shown one after another
    with their titles in a notebook."""

    def _repr_html_(self) -> str:
        parts = []
        for name, df in self.items():
            title = df.attrs.get("title") or name
            parts.append(f"<h4>{_html_escape(title)}</h4>" + df._repr_html_())
        return "\n".join(parts)


def _html_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class Trace:
    """A trace opened by strata.load(). DataFrames are built on first access and kept."""

    def __init__(self, handle: int, paths: List[str]) -> None:
        self._handle = handle
        self.paths = paths
        self._spans: Optional[pd.DataFrame] = None
        self._attributes: Optional[pd.DataFrame] = None
        self._info: Optional[Dict[str, Any]] = None

    # -- lifetime -------------------------------------------------------------------------------
    def close(self) -> None:
        """Frees the native trace (the DataFrames already built stay valid)."""
        if self._handle:
            _capi().strata_capi_free(self._handle)
            self._handle = 0

    def __enter__(self) -> "Trace":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass

    def _live(self) -> int:
        if not self._handle:
            raise ValueError("the trace is closed")
        return self._handle

    # -- spans and attributes -------------------------------------------------------------------
    @property
    def spans(self) -> pd.DataFrame:
        """One row per span, in the trace's order (by start). `parent` is the row of the parent
        span (-1: a root), `link` how the tree found it; stream, device and rank are -1 when none."""
        if self._spans is None:
            lib = _capi()
            h = self._live()
            n = int(lib.strata_capi_span_count(h))
            a = _fill(lib.strata_capi_fill_spans, h, _SpanColumns, _SPAN_FIELDS, n)
            names = _strings(lib.strata_capi_span_names(h))
            a["name"] = _categorical(a["name"], names)
            a["level"] = _enum_column(lib, a["level"], _LEVEL, ordered=True)
            a["kind"] = _enum_column(lib, a["kind"], _KIND)
            a["activity"] = _enum_column(lib, a["activity"], _ACTIVITY)
            a["link"] = _enum_column(lib, a["link"], _LINK)
            order = ["id", "parent", "parent_id", "depth", "link", "level", "kind", "activity", "name",
                     "process", "pid", "tid", "stream", "device", "rank", "start_ns", "end_ns",
                     "duration_ns", "correlation_id", "flags"]
            self._spans = pd.DataFrame({k: a[k] for k in order}, copy=False)
        return self._spans

    @property
    def attributes(self) -> pd.DataFrame:
        """Span attributes in long form: one row per (span, attribute). `span` is the span's row in
        .spans; int_value is set for ints (<NA> otherwise), double_value for doubles and metrics
        (NaN otherwise), text for strings."""
        if self._attributes is None:
            lib = _capi()
            h = self._live()
            n = int(lib.strata_capi_attr_count(h))
            a = _fill(lib.strata_capi_fill_attrs, h, _AttrColumns, _ATTR_FIELDS, n)
            strings = _strings(lib.strata_capi_attr_strings(h))
            type_names = [_ATTR_TYPES.get(v, f"type({v})") for v in range(256)]
            self._attributes = pd.DataFrame({
                "span": a["span"].astype(np.int64),
                "key": _categorical(a["key"], strings).remove_unused_categories(),
                "type": _categorical(a["type"].astype(np.int32), type_names).remove_unused_categories(),
                "int_value": pd.arrays.IntegerArray(a["int_value"], a["type"] != 1),
                "double_value": a["double_value"],
                "text": _categorical(a["text"], strings).remove_unused_categories(),
            }, copy=False)
        return self._attributes

    def attribute(self, key: str) -> pd.Series:
        """One attribute's values, indexed by span row (spans without it are absent)."""
        attrs = self.attributes
        rows = attrs[attrs["key"] == key]
        types = set(rows["type"].astype(str))
        if types <= {"int"}:
            values = rows["int_value"].astype("Int64")
        elif types <= {"int", "double", "metric"}:
            values = rows["double_value"].where(rows["type"] != "int", rows["int_value"].astype("float64"))
        else:
            values = rows["text"].astype(object).where(rows["type"] == "string",
                                                        rows["double_value"].astype(object))
        return pd.Series(values.to_numpy(), index=rows["span"].to_numpy(), name=key)

    # -- small tables ---------------------------------------------------------------------------
    def summary(self) -> Dict[str, Any]:
        """What `strata summary --format json` prints (docs/summary.md): the workload and its steps,
        process roles, the step time breakdown, the device shares, the bottleneck, the findings and
        the top ops."""
        raw = _capi().strata_capi_summary_json(self._live())
        return json.loads(raw.decode("utf-8", "replace"))

    def _document(self) -> Dict[str, Any]:
        if self._info is None:
            raw = _capi().strata_capi_info_json(self._live())
            self._info = json.loads(raw.decode("utf-8", "replace"))
        return self._info

    @property
    def processes(self) -> pd.DataFrame:
        """One row per process (stream) of the trace: pid, rank, host, command line, span count, ..."""
        df = pd.DataFrame(self._document()["processes"])
        return df.set_index("process") if not df.empty else df

    @property
    def threads(self) -> pd.DataFrame:
        """Named threads: process, pid, tid, name."""
        return pd.DataFrame(self._document()["threads"], columns=["process", "pid", "tid", "name"])

    @property
    def stats(self) -> pd.DataFrame:
        """Non-zero counters (loading, the span tree, collector drops, importer counts), trace-wide
        (scope "trace") and per process, each with its severity, source and description."""
        return pd.DataFrame(self._document()["stats"],
                            columns=["scope", "process", "pid", "name", "value", "severity", "source",
                                     "description"])

    @property
    def record(self) -> Dict[str, str]:
        """What `strata record` wrote about the run (command, exit status, ...)."""
        return dict(self._document()["record"])

    @property
    def warnings(self) -> List[str]:
        """What went wrong while reading, one line each."""
        return list(self._document()["warnings"])

    # -- analyses -------------------------------------------------------------------------------
    def analysis(self, name: str, **params: Any) -> Union[pd.DataFrame, Tables]:
        """Runs a registered analysis (as `strata analyze --analysis NAME --param KEY=VALUE`).
        Returns its table as a DataFrame (title and notes in .attrs), or a Tables dict when it
        gives several. Raises MissingInputError when the trace lacks what it needs, ValueError for
        an unknown name or parameter."""
        lib = _capi()
        keys = [str(k).encode() for k in params]
        values = [_param_text(v).encode() for v in params.values()]
        key_arr = (ctypes.c_char_p * max(1, len(keys)))(*keys)
        value_arr = (ctypes.c_char_p * max(1, len(values)))(*values)
        handle = lib.strata_capi_run_analysis(self._live(), name.encode(), key_arr, value_arr, len(keys))
        if not handle:
            raise ValueError(_error(lib))
        try:
            missing = lib.strata_capi_missing_input(handle).decode("utf-8", "replace")
            if missing:
                raise MissingInputError(missing)
            tables = Tables()
            for t in range(int(lib.strata_capi_table_count(handle))):
                df = _table(lib, handle, t)
                tables[df.attrs["name"]] = df
        finally:
            lib.strata_capi_tables_free(handle)
        if len(tables) == 1:
            return next(iter(tables.values()))
        return tables

    def _repr_html_(self) -> str:
        """A notebook's view: the inputs, span and process counts, spans per level."""
        if not self._handle:
            return f"<p>strata.Trace {_html_escape(', '.join(self.paths))} (closed)</p>"
        levels = self.spans["level"].value_counts(sort=False).to_frame("spans")
        return (f"<p><b>strata.Trace</b> {_html_escape(', '.join(self.paths))}: {len(self.spans)} spans, "
                f"{len(self._document()['processes'])} processes</p>" + levels._repr_html_())

    def __repr__(self) -> str:
        return (f"<strata.Trace {', '.join(self.paths)}: {int(_capi().strata_capi_span_count(self._live()))} "
                f"spans, {len(self._document()['processes'])} processes>" if self._handle
                else f"<strata.Trace {', '.join(self.paths)} (closed)>")


def _param_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _table(lib: ctypes.CDLL, handle: int, t: int) -> pd.DataFrame:
    """Table t of an analysis result, each column typed as its cells are: int64 (Int64 with empty
    cells), float64 (NaN for empty cells), or str."""
    rows = int(lib.strata_capi_table_rows(handle, t))
    names = _strings(lib.strata_capi_table_columns(handle, t))
    data = {}
    for c, column in enumerate(names):
        kind = lib.strata_capi_column_type(handle, t, c)
        if kind == 1:
            values = np.empty(rows, dtype=np.int64)
            present = np.empty(rows, dtype=np.uint8)
            lib.strata_capi_column_ints(handle, t, c, values.ctypes.data, present.ctypes.data)
            mask = present == 0
            data[c] = pd.arrays.IntegerArray(values, mask) if mask.any() else values
        elif kind in (0, 2):
            values = np.empty(rows, dtype=np.float64)
            lib.strata_capi_column_reals(handle, t, c, values.ctypes.data)
            data[c] = values
        else:
            data[c] = np.array(_strings(lib.strata_capi_column_text(handle, t, c)), dtype=object)
    df = pd.DataFrame(data, index=pd.RangeIndex(rows))
    df.columns = names  # names may repeat; a dict could not hold them
    df.attrs["name"] = lib.strata_capi_table_name(handle, t).decode("utf-8", "replace")
    df.attrs["title"] = lib.strata_capi_table_title(handle, t).decode("utf-8", "replace")
    notes = lib.strata_capi_table_notes(handle, t).decode("utf-8", "replace")
    df.attrs["notes"] = notes.split("\n") if notes else []
    return df


def load(path: Any, *more_paths: Any, format: str = "auto") -> Trace:
    paths = [os.fspath(p) for p in (path, *more_paths)]
    for p in paths:
        if not os.path.exists(p):
            raise FileNotFoundError(f"{p}: no such file or directory")
    lib = _capi()
    raw = [p.encode() for p in paths]
    arr = (ctypes.c_char_p * len(raw))(*raw)
    handle = lib.strata_capi_open(arr, len(raw), (format or "auto").encode())
    if not handle:
        raise StrataError(_error(lib))
    return Trace(handle, paths)


def analyses() -> pd.DataFrame:
    """Every registered analysis: name, description, and the parameters it reads."""
    entries = json.loads(_capi().strata_capi_analyses_json().decode())
    return pd.DataFrame(entries, columns=["name", "description", "params"])
