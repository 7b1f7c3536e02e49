// `strata profile --format pprof`: the samples as gzip-compressed profile.proto (perftools.profiles,
// github.com/google/pprof/proto/profile.proto), the format `pprof`, Parca and Pyroscope read.
#pragma once

#include <string>

#include "profile/profile.h"
#include "trace/trace.h"

namespace strata::exporter {

// One pprof Sample per (thread, stack, span) count of the event: locations leaf first, values
// [samples, CPU nanoseconds] (period_ns per sample; 0 when unknown), labels "op" (innermost
// layer-level span) and "layer" (outermost) where a span was open, and "thread" (numeric tid).
// One Location per frame (a Python frame's line, a native frame's file offset as its address) and one
// Function per function name. Returns the gzip bytes; empty with *error when compression failed.
std::string format_profile_pprof(const trace::Trace& trace, const profile::ProfileOptions& options,
                                 profile::FrameNamer& namer, std::string* error);

}  // namespace strata::exporter
