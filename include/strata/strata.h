/* Strata span API (C). XSP's startSpan/finishSpan: mark regions of a program at a level.
 *
 * Nothing here needs a running recorder: when the process is not being recorded (no STRATA_OUTPUT /
 * STRATA_OUTPUT_DIR in the environment and no strata_start call), every call returns at once.
 * Spans deeper than the configured level are dropped at the call site for the price of one load and
 * compare. Thread-safe; the hot path takes no lock.
 */
#ifndef STRATA_STRATA_H_
#define STRATA_STRATA_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Levels, outermost first. The numbers are stable: they are written into trace files. */
#define STRATA_LEVEL_APPLICATION 10
#define STRATA_LEVEL_ITERATION 15
#define STRATA_LEVEL_MODEL 20
#define STRATA_LEVEL_LAYER 30
#define STRATA_LEVEL_LIBRARY 40
#define STRATA_LEVEL_RUNTIME_API 50
#define STRATA_LEVEL_DEVICE 60
#define STRATA_LEVEL_CPU_SAMPLE 70

#define STRATA_KIND_SPAN 1
#define STRATA_KIND_LAUNCH 2
#define STRATA_KIND_EXECUTION 3
#define STRATA_KIND_INSTANT 4
#define STRATA_KIND_COUNTER 5
#define STRATA_KIND_SAMPLE 6

/* Activity types: what work a span is (strata::ActivityType; stable numbers written into trace
 * files, docs/trace-format.md). Spans begun with strata_span_begin are annotations. */
#define STRATA_ACTIVITY_KERNEL 1
#define STRATA_ACTIVITY_MEMCPY_HTOD 2
#define STRATA_ACTIVITY_MEMCPY_DTOH 3
#define STRATA_ACTIVITY_MEMCPY_DTOD 4
#define STRATA_ACTIVITY_MEMCPY_HTOH 5
#define STRATA_ACTIVITY_MEMCPY_PTOP 6
#define STRATA_ACTIVITY_MEMCPY_OTHER 7
#define STRATA_ACTIVITY_MEMSET 8
#define STRATA_ACTIVITY_SYNC 9
#define STRATA_ACTIVITY_COLLECTIVE 10
#define STRATA_ACTIVITY_RUNTIME_CALL 40
#define STRATA_ACTIVITY_DRIVER_CALL 41
#define STRATA_ACTIVITY_LIBRARY_CALL 42
#define STRATA_ACTIVITY_CPU_OP 60
#define STRATA_ACTIVITY_TENSOR_COPY 61
#define STRATA_ACTIVITY_PYTHON_FUNCTION 62
#define STRATA_ACTIVITY_ANNOTATION 63

/* 0 means "no span" (not recording, gated by level, or dropped): every call accepts it and does nothing. */
typedef uint64_t strata_span_id;

/* Starts a span on the calling thread. Its parent is the innermost open span of this thread, or
 * the span named by the inherited TRACEPARENT. The name is copied. */
strata_span_id strata_span_begin(const char* name, int level);
strata_span_id strata_span_begin_n(const char* name, size_t name_len, int level);
/* The same for a tracer that says what activity the span is (STRATA_ACTIVITY_*): a framework op, a
 * library call, ... An activity outside 0-255 is recorded as 0 (unknown). */
strata_span_id strata_span_begin_as(const char* name, size_t name_len, int level, int activity);
/* Ends a span begun on any thread (ends may come out of order). */
void strata_span_end(strata_span_id span);

/* Attributes describe a span (batch size, shapes); metrics measure it (flops, bytes). */
void strata_span_set_int(strata_span_id span, const char* key, int64_t value);
/* `count` integer attributes at once (keys[i] = values[i]): cheaper than one call each. */
void strata_span_set_ints(strata_span_id span, const char* const* keys, const int64_t* values, size_t count);
void strata_span_set_double(strata_span_id span, const char* key, double value);
void strata_span_set_string(strata_span_id span, const char* key, const char* value);
void strata_span_set_metric(strata_span_id span, const char* key, double value);

void strata_instant(const char* name, int level);
void strata_counter(const char* name, double value);
/* Names the calling thread in exports. */
void strata_set_thread_name(const char* name);

/* 1 when spans at `level` are being recorded now. */
int strata_level_enabled(int level);
/* The recorded level (deepest level kept), 0 when not recording. */
int strata_get_level(void);
/* Changes the level at run time; returns the previous one. */
int strata_set_level(int level);
/* The levels this library knows, outermost first: fills names[i] (static strings: "application",
 * ..., "cpu_sample") and values[i] for i < capacity and returns how many levels there are (call
 * with capacity 0 to count them). The Python package reads its LEVELS from here. */
int strata_levels(const char** names, int* values, int capacity);

/* Context propagation (W3C trace-context). Writes "00-<trace id>-<span id>-01" for the innermost
 * open API span of this thread (or the process's root context) into buf; returns its length (55),
 * or 0 when not recording or buf is too small (size must be >= 56). */
int strata_current_traceparent(char* buf, size_t size);
/* Sets TRACEPARENT in this process's environment to the current context, so child processes
 * started after this call join the trace under the current span. Returns 1 on success. */
int strata_inject_traceparent_env(void);

/* Explicit control, for programs that are not started by `strata record`. level: deepest level to
 * keep. Returns 1 on success, 0 on failure or if already recording (either way one line on stderr says
 * why). */
int strata_start(const char* path, int level);
/* Flushes everything and closes the trace. Safe to call more than once. */
void strata_stop(void);
/* Writes buffered events to the file now. */
void strata_flush(void);
int strata_is_recording(void);

#ifdef __cplusplus
}
#endif

#endif /* STRATA_STRATA_H_ */
