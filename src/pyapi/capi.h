// The C API of libstrata_analysis_capi.so: what the Python package's `strata.load` (ctypes,
// python/strata/_analysis.py) calls to open a trace of any format through the reader registry, read
// its spans and attributes as columns, and run the registered analyses. A library of its own, never
// part of libstrata.so: the recorder that runs inside the user's process links no analysis code.
//
// Threads: calls on one trace may come from several threads at once (ctypes releases the GIL);
// everything but strata_capi_free is safe so. A tables object belongs to one thread.
// Conventions: a function that can fail returns 0 / NULL and leaves one line in
// strata_capi_last_error() (per thread). Column fills write into caller-allocated arrays of the
// length the matching count function returned (numpy arrays on the Python side), so a trace of a
// million spans crosses into Python as a handful of buffers, never as a million objects. Strings
// come as one byte buffer plus count+1 offsets (UTF-8, not NUL-terminated, may hold any byte).
#pragma once

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped when a signature or a struct below changes; the Python side refuses a library of another
// version (an installed package next to an older library) with one line.
#define STRATA_CAPI_VERSION 3
int strata_capi_version(void);
const char* strata_capi_last_error(void);

typedef struct strata_capi_trace strata_capi_trace;
typedef struct strata_capi_tables strata_capi_tables;

// A byte buffer and offsets: string i is bytes[offsets[i], offsets[i+1]). Owned by the object it
// came from; valid until that object is freed.
typedef struct {
  const char* bytes;
  const uint64_t* offsets;
  uint64_t count;
} strata_capi_strings;

// Opens `n` inputs as one trace (several = repeated runs or ranks, as `strata analyze A B`).
// `format`: "auto" or a reader's name or format ("native", "kineto", "nsys", ...); NULL = auto.
strata_capi_trace* strata_capi_open(const char* const* paths, size_t n, const char* format);
void strata_capi_free(strata_capi_trace* trace);

uint64_t strata_capi_span_count(const strata_capi_trace* trace);
uint64_t strata_capi_attr_count(const strata_capi_trace* trace);

// The span columns (one element per span, in the trace's order: sorted by start). A NULL pointer
// skips that column. Parent is the row of the parent span (-1: a root); stream, device and rank
// are -1 when the span has none. name codes index strata_capi_span_names().
typedef struct {
  uint64_t* id;
  int64_t* parent;
  uint64_t* parent_id;
  uint32_t* depth;
  uint8_t* link;
  uint8_t* level;
  uint8_t* kind;
  uint8_t* activity;
  int32_t* name;
  uint16_t* process;
  int64_t* pid;
  uint32_t* tid;
  int64_t* stream;
  int32_t* device;
  int64_t* rank;
  int64_t* start_ns;
  int64_t* end_ns;
  int64_t* duration_ns;
  uint64_t* correlation_id;
  uint8_t* flags;
} strata_capi_span_columns;
int strata_capi_fill_spans(const strata_capi_trace* trace, const strata_capi_span_columns* columns);
strata_capi_strings strata_capi_span_names(const strata_capi_trace* trace);

// Attributes in long form, one row per (span, attribute), spans in trace order. type: 1 int,
// 2 double, 3 string, 4 metric (core/span_record.h AttrType). int_value is set for ints,
// double_value for doubles and metrics (NaN otherwise), text codes (-1 when not a string) and key
// codes index strata_capi_attr_strings().
typedef struct {
  uint32_t* span;
  int32_t* key;
  uint8_t* type;
  int64_t* int_value;
  double* double_value;
  int32_t* text;
} strata_capi_attr_columns;
int strata_capi_fill_attrs(strata_capi_trace* trace, const strata_capi_attr_columns* columns);
// Valid after strata_capi_fill_attrs (built by its first call, unchanged by later ones).
strata_capi_strings strata_capi_attr_strings(const strata_capi_trace* trace);

// Names of the enum values a span column holds: which = 0 level, 1 kind, 2 activity, 3 link.
// Never NULL ("" for a value with no name).
const char* strata_capi_enum_name(int which, int value);

// Processes, threads, stats, the record properties and the load warnings as one JSON document
// (small: one entry per process, thread and non-zero counter).
const char* strata_capi_info_json(strata_capi_trace* trace);

// `strata summary --format json` of the trace (docs/summary.md: the contract), built on first call.
const char* strata_capi_summary_json(strata_capi_trace* trace);

// Writes the opened trace as one native .strata file (trace/trace_saver.h: every process, span,
// attribute, process stat and record property; zstd_level <= 0 stores chunks uncompressed). Opening
// the files saved from several inputs gives the trace those inputs open to (what strata.dask ships
// from a worker for the analyses that need every rank's spans). 0 with the error set on failure.
int strata_capi_save(const strata_capi_trace* trace, const char* path, int zstd_level);

// The registered analyses: JSON list of {"name", "description", "params": [...]}.
const char* strata_capi_analyses_json(void);

// Runs one registered analysis with `n` KEY=VALUE parameters (as `--param`), as `strata analyze
// --analysis NAME` does. NULL with the error set for an unknown name or a bad parameter. An
// analysis whose input is missing gives no tables and strata_capi_missing_input() says what is
// missing (the CLI's line, e.g. "no device activity ...": record deeper or import a GPU trace).
strata_capi_tables* strata_capi_run_analysis(const strata_capi_trace* trace, const char* name,
                                             const char* const* keys, const char* const* values, size_t n);
void strata_capi_tables_free(strata_capi_tables* tables);

// Per-rank partials (analysis/rank_partials.h; version 3): what strata.dask ships from a worker
// instead of the rank's trace, for the analyses that have one. strata_capi_rank_partial writes the
// records of every rank in `trace` with `n` KEY=VALUE parameters (opaque bytes; the caller frees
// *data with strata_capi_buffer_free); 0 with the error set when `name` has no partial or a
// parameter is bad.
// strata_capi_combine_partials runs analysis `name` over `n_partials` partials (each rank in one)
// with `n` KEY=VALUE parameters: the tables strata_capi_run_analysis gives on all ranks' traces.
int strata_capi_rank_partial(const strata_capi_trace* trace, const char* name, const char* const* keys,
                             const char* const* values, size_t n, char** data, uint64_t* size);
void strata_capi_buffer_free(char* data);
strata_capi_tables* strata_capi_combine_partials(const char* name, const char* const* partials,
                                                 const uint64_t* sizes, size_t n_partials,
                                                 const char* const* keys, const char* const* values,
                                                 size_t n);
const char* strata_capi_missing_input(const strata_capi_tables* tables);  // "" when none
uint64_t strata_capi_table_count(const strata_capi_tables* tables);
// Table t: name, title, notes (joined by '\n'), columns (names), rows.
const char* strata_capi_table_name(const strata_capi_tables* tables, uint64_t t);
const char* strata_capi_table_title(const strata_capi_tables* tables, uint64_t t);
const char* strata_capi_table_notes(const strata_capi_tables* tables, uint64_t t);
strata_capi_strings strata_capi_table_columns(const strata_capi_tables* tables, uint64_t t);
uint64_t strata_capi_table_rows(const strata_capi_tables* tables, uint64_t t);
// A column's type: 0 all cells empty, 1 integers (and empties), 2 reals (ints, reals and empties),
// 3 text (any text cell; numbers as the CSV prints them). Then fill by type: ints with a mask
// (1 = present), reals (NaN when empty), or text as strings (empty cells "").
int strata_capi_column_type(const strata_capi_tables* tables, uint64_t t, uint64_t c);
int strata_capi_column_ints(const strata_capi_tables* tables, uint64_t t, uint64_t c, int64_t* values,
                            uint8_t* present);
int strata_capi_column_reals(const strata_capi_tables* tables, uint64_t t, uint64_t c, double* values);
strata_capi_strings strata_capi_column_text(strata_capi_tables* tables, uint64_t t, uint64_t c);

#ifdef __cplusplus
}
#endif
