// Loads native trace files into the in-memory model (import -> sort -> tables, in Perfetto's terms).
#pragma once

#include <string>

#include "format/chunk_reader.h"
#include "model/trace.h"

namespace strata::model {

struct LoadOptions {
  bool sort_by_start = true;  // order spans by (start, depth-friendly tie break) after loading
};

// Loads `path` (a trace file, or a directory of per-process trace files) and appends it to *trace.
// Returns false with *error set to one line (file, offset, reason, what to do) when nothing usable
// could be read; damage after a valid start becomes warnings in trace->report instead.
bool load_trace(const std::string& path, Trace* trace, std::string* error,
                const LoadOptions& options = {});

// A damaged file that yields no span is an error, not an empty trace (load_trace and the streamed
// summary apply it alike): what was wrong with the file read by `reader` ("" when nothing), and the
// one-line error for it.
std::string damage_of(const format::ChunkReader& reader, const std::string& file);
std::string nothing_recovered_error(const std::string& damage);

// Same, from an already opened chunk reader (memory input for fuzzing and tests).
bool load_chunks(format::ChunkReader& reader, Trace* trace, std::string* error);

// Sorts spans by start time (then longer first, so parents precede children), keeping attributes.
void sort_spans(Trace* trace);

}  // namespace strata::model
