// Writes an in-memory trace back to the native chunked format: one stream per process (Process
// properties, strings, spans, clock snapshots, Stats with drops and thread names, End), plus the
// Record chunk. load_trace(save_trace(t)) gives back every process field, span, attribute, process
// stat and record property (trace-wide stats, load.* and tree.*, describe one reading: not saved).
#pragma once

#include <string>

#include "trace/trace.h"

namespace strata::trace {

// zstd_level <= 0 stores chunks uncompressed. Returns false with *error set to one line (file and
// reason) when the file cannot be written.
bool save_trace(const Trace& trace, const std::string& path, std::string* error, int zstd_level = 0);

}  // namespace strata::trace
