// The native reader: Strata trace files (one file, or a directory of per-process files) into the
// TraceBuilder. Registered as "native" in the reader registry (trace_reader.h), which is how
// commands open traces; load_trace() stays for code that only ever reads native files.
#pragma once

#include <memory>
#include <string>

#include "format/chunk_reader.h"
#include "model/trace.h"
#include "model/trace_builder.h"

namespace strata::model {

class TraceReader;
std::unique_ptr<TraceReader> make_native_reader();

// Feeds one chunk stream (a file, or memory for fuzzing and tests) to the builder. False with *error
// set to one line (file, offset, reason, what to do) when nothing usable could be read; damage after
// a valid start becomes stats (load.*) and warnings instead.
bool load_chunks(format::ChunkReader& reader, TraceBuilder& builder, std::string* error);
// A file, or every .strata file of a directory (in name order).
bool load_native(const std::string& path, TraceBuilder& builder, std::string* error);

struct LoadOptions {
  bool sort_by_start = true;  // false: spans stay in file order (writer and reader benchmarks)
};

// load_native + TraceBuilder::finish without building the structure (built on first use).
bool load_trace(const std::string& path, Trace* trace, std::string* error, const LoadOptions& options = {});
// load_chunks into *trace, unsorted (fuzzing).
bool load_chunks(format::ChunkReader& reader, Trace* trace, std::string* error);

}  // namespace strata::model
