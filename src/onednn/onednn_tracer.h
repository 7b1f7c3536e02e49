// State shared by the two halves of libstrata_onednn.so: the dnnl_primitive_execute interposer
// (onednn_interposer.cc) and the verbose-output capture (verbose_capture.cc).
//
// Modes (STRATA_ONEDNN_MODE, set by `strata record --onednn MODE`; read once at load):
//   auto       (default) both: the interposer records what goes through a dynamically linked
//              libdnnl; oneDNN's verbose output records the executions the interposer never saw
//              (oneDNN linked statically into the framework). Decided per execution, see below.
//   interpose  the interposer only (no ONEDNN_VERBOSE: the lowest overhead).
//   verbose    the verbose output only, even where the interposer would work.
//   off        neither.
//
// Per-execution decision: oneDNN prints an execution's verbose line from inside
// dnnl_primitive_execute, on the calling thread. While the interposer runs the real function it
// marks the thread (tls_in_execute) and publishes its span (tls_execute_span); a line that arrives
// so marked belongs to that span and only adds its description (formats, attributes, descriptor).
// A line that arrives on an unmarked thread came from a oneDNN the interposer cannot see, and
// becomes a span of its own.
#pragma once

#include "strata/strata.h"

namespace strata::onednn {

enum class Mode { kOff, kAuto, kInterpose, kVerbose };

Mode mode();
// True once the capture has turned verbose output on (modes auto and verbose, library level).
bool verbose_armed();

extern thread_local bool tls_in_execute;
extern thread_local strata_span_id tls_execute_span;

}  // namespace strata::onednn
