// Offline importers: foreign profiler output (PyTorch/Kineto Chrome trace JSON, ONNX Runtime profile
// JSON, TensorFlow trace JSON) converted into the in-memory trace (XSP III-B, "framework
// profiler conversion"). Input may be plain or gzip-compressed.
//
// Nothing is silently lost: every event skipped or malformed is counted by cause in the stats of the
// main process (stats registry, "import.<cause>"), and every event read is counted exactly once
// (accounted_events() below).
//
// The importers are readers of the model's registry (register_readers()): every command opens
// foreign traces through trace::open_trace like native ones.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "core/stats.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::import {

enum class Format { kKineto, kOnnxRuntime, kTensorFlow };

struct ImportOptions {
  std::string format = "auto";  // auto | kineto | onnxruntime | tensorflow
  // Zero bytes readable after the input's end: with kJsonPadding (64) or more the JSON is parsed in
  // place, without a copy as large as the input.
  size_t input_padding = 0;
  // Called once the converter no longer needs the input text (its events are read; before the
  // spans are handed to the trace), so the caller can free it: the text and the trace need not be
  // in memory together. May be empty.
  std::function<void()> release_input;
  // Called with increasing offsets n once the converter will not read the input before n again (the
  // windowed parse of a large Kineto file, window by window), so the caller can free those bytes
  // while the spans grow. May be empty.
  std::function<void(size_t)> release_input_before;
};

// Gives the whole memory pages inside [begin, end) back to the system (madvise MADV_DONTNEED): they
// read as zeros afterwards. For a buffer the caller owns and will not read there again (a
// release_input_before of an input held in memory).
void release_pages(const char* begin, const char* end);

// Asks for transparent huge pages (madvise MADV_HUGEPAGE) on the whole 2 MiB pages inside
// [begin, begin + bytes): a buffer of hundreds of MB filled once (the input, the span and attribute
// lists) then takes one fault per 2 MiB instead of one per 4 KiB. Advice only; a no-op where THP is
// off, and below a few MiB.
void advise_huge_pages(const void* begin, size_t bytes);

// Name as used on the command line ("kineto", "onnxruntime", "tensorflow").
std::string_view format_name(Format format);
std::optional<Format> parse_format(std::string_view name);

// Guesses the format from the (decompressed) file contents. Returns nullopt with *error set to one
// line (what the input looks like, and what to do) when it is not a trace this module understands.
std::optional<Format> detect_format(std::string_view json_text, std::string* error);

// Reads `path` (plain or .gz), converts it and appends to *out (spans sorted by start time).
// Returns false with *error set to one line naming the file, the offset or field, and the remedy.
bool import_trace(const std::string& path, trace::Trace* out, std::string* error,
                  const ImportOptions& opts = {});

// Same, from bytes already in memory (fuzzers, tests). `source_name` appears in error messages.
bool import_buffer(std::string_view bytes, const std::string& source_name, trace::Trace* out,
                   std::string* error, const ImportOptions& opts = {});

// What one import counted: the import.* stats of its main process (a copy; the trace keeps them).
using ImportStats = stats::StatSet;

// Events the importer dropped (import.* drops other than import.attribute_limit, which counts
// attributes), and the accounting identity every import keeps: each event read is exactly one of a
// span (a "B" included), an "E" that closed one, a counter event, metadata, a bound flow, or dropped:
//   (spans_written - counter_samples) + counter_events + end_events + metadata_events + flow_events
//     + dropped_events == events_read
uint64_t dropped_events(const stats::StatSet& stats);
uint64_t accounted_events(const stats::StatSet& stats);

// Converts bytes (plain or gzip JSON) into the builder, without finishing it: the reader behind
// open_trace, and the way to merge several foreign files into one trace.
bool import_into(std::string_view bytes, const std::string& source_name, trace::TraceBuilder& builder,
                 std::string* error, const ImportOptions& opts = {}, ImportStats* stats = nullptr);

// Registers the JSON reader ("json", also reached as kineto, onnxruntime, tensorflow) with the
// model's reader registry. Idempotent.
void register_readers();

bool import_buffer_with_stats(std::string_view bytes, const std::string& source_name, trace::Trace* out,
                              std::string* error, const ImportOptions& opts, ImportStats* stats);
bool import_trace_with_stats(const std::string& path, trace::Trace* out, std::string* error,
                             const ImportOptions& opts, ImportStats* stats);

}  // namespace strata::import
