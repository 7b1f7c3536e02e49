// Offline importers: foreign profiler output (PyTorch/Kineto Chrome trace JSON, ONNX Runtime profile
// JSON, TensorFlow trace JSON) converted into the in-memory trace model (XSP III-B, "framework
// profiler conversion"). Input may be plain or gzip-compressed.
//
// Nothing is silently lost: every event skipped or malformed is counted by cause in the drops map of
// the process it belonged to (or of the first process), with keys "import.<cause>".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "model/trace.h"

namespace strata::import {

enum class Format { kKineto, kOnnxRuntime, kTensorFlow };

struct ImportOptions {
  std::string format = "auto";  // auto | kineto | onnxruntime | tensorflow
};

// Name as used on the command line ("kineto", "onnxruntime", "tensorflow").
std::string_view format_name(Format format);
std::optional<Format> parse_format(std::string_view name);

// Guesses the format from the (decompressed) file contents. Returns nullopt with *error set to one
// line (what the input looks like, and what to do) when it is not a trace this module understands.
std::optional<Format> detect_format(std::string_view json_text, std::string* error);

// Reads `path` (plain or .gz), converts it and appends to *out (spans sorted by start time).
// Returns false with *error set to one line naming the file, the offset or field, and the remedy.
bool import_trace(const std::string& path, model::Trace* out, std::string* error,
                  const ImportOptions& opts = {});

// Same, from bytes already in memory (fuzzers, tests). `source_name` appears in error messages.
bool import_buffer(std::string_view bytes, const std::string& source_name, model::Trace* out,
                   std::string* error, const ImportOptions& opts = {});

// What one import produced, for the CLI summary (also derivable from the trace itself).
struct ImportStats {
  Format format = Format::kKineto;
  uint64_t events_read = 0;      // JSON events seen in the trace's event array
  uint64_t spans_written = 0;    // records added to the trace (spans, instants, counter samples)
  uint64_t metadata_events = 0;  // ph "M": consumed (process/thread names), not spans
  uint64_t flow_events = 0;      // flow events bound to their slices: consumed as links, not spans
  uint64_t dropped_events = 0;   // counted by cause in the main process's drops ("import.*")
  uint64_t end_events = 0;       // ph "E" that closed a "B": the pair is one span, counted at its "B"
  uint64_t counter_events = 0;   // ph "C" imported ...
  uint64_t counter_samples = 0;  // ... as this many counter records (one per numeric series)
  uint64_t unfinished_spans = 0;  // "B" without a usable "E": kept, flagged unfinished (in spans_written)
  // Every event read is exactly one of: a span (a "B" included), an "E" that closed one, a counter
  // event, metadata, a bound flow, or dropped:
  //   (spans_written - counter_samples) + counter_events + end_events + metadata_events + flow_events
  //     + dropped_events == events_read
  uint64_t accounted_events() const {
    return spans_written - counter_samples + counter_events + end_events + metadata_events + flow_events +
           dropped_events;
  }
};

bool import_buffer_with_stats(std::string_view bytes, const std::string& source_name, model::Trace* out,
                              std::string* error, const ImportOptions& opts, ImportStats* stats);
bool import_trace_with_stats(const std::string& path, model::Trace* out, std::string* error,
                             const ImportOptions& opts, ImportStats* stats);

}  // namespace strata::import
