// CPU samples of a loaded trace (docs/trace-format.md, "Samples"): mappings, frames, stacks, the
// DCPI counts per (process, thread, stack, span, event, epoch), and each sample's time when the
// trace kept the timeline. Ids are global to the trace (the loader remaps every stream's own);
// frame and stack id 0 are never used (an undefined reference maps to frame 0, "unknown").
//
//   for (const trace::SampleCount& c : trace.samples.counts)
//     for (uint32_t f : trace.samples.stack(c.stack))      // leaf first
//       describe(trace.samples.frame(f));                   // (mapping, offset) or Python (function, file,
//       line)
//
// Native frames are resolved to names when read (symbolize::Symbolizer, through the mapping's path
// and build id); the span a sample was taken in is `span_id` (0: none) in the sample's process.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "format/properties.h"
#include "format/sample_payloads.h"

namespace strata::trace {

struct SampleMapping {
  uint16_t process = 0;
  uint64_t start = 0, end = 0, file_offset = 0;
  int64_t time_ns = 0;
  uint32_t path = 0;     // string pool id
  std::string build_id;  // raw bytes (may be empty)
  uint8_t flags = 0;     // format::SampleMappingFlags
};

struct SampleFrame {
  format::SampleFrameKind kind = format::SampleFrameKind::kAddress;
  uint16_t process = 0;
  uint32_t mapping = 0;   // kNative: index into SampleData::mappings
  uint64_t offset = 0;    // kNative: file offset (callers: return address - 1); kAddress/kKernel: address
  uint32_t function = 0;  // kPython: string pool ids; kNative: generated code's name (0: none)
  uint32_t file = 0;
  uint32_t line = 0;
};

struct SampleCount {
  uint16_t process = 0;
  uint32_t tid = 0;
  uint32_t stack = 0;
  uint64_t span_id = 0;  // 0: no span open on the thread
  uint32_t event = 0;    // index into the process's events (SampleData::events)
  uint32_t epoch = 0;
  uint64_t count = 0;
};

struct SamplePoint {
  uint16_t process = 0;
  uint32_t tid = 0;
  int64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint32_t stack = 0;
  uint32_t event = 0;
  uint32_t weight = 1;
  uint64_t span_id = 0;
};

class SampleData {
 public:
  std::vector<SampleMapping> mappings{SampleMapping{}};  // index 0: none
  std::vector<SampleFrame> frames{SampleFrame{}};        // index 0: unknown
  std::vector<uint32_t> stack_frames;                    // frames of every stack, leaf first
  std::vector<uint32_t> stack_begin{0, 0};               // stack i: [stack_begin[i], stack_begin[i+1])
  std::vector<SampleCount> counts;
  std::vector<SamplePoint> timeline;
  std::map<uint16_t, format::Properties> config;  // per process: what its SampleConfig chunks said
  uint64_t undefined_references = 0;              // ids used before (or without) their definition
  uint64_t chunks_skipped = 0;                    // sample chunks that could not be decoded

  bool empty() const { return counts.empty() && timeline.empty(); }
  size_t stack_count() const { return stack_begin.size() - 1; }
  std::span<const uint32_t> stack(uint32_t id) const {
    if (id + 1 >= stack_begin.size()) return {};
    return {stack_frames.data() + stack_begin[id], stack_frames.data() + stack_begin[id + 1]};
  }
  const SampleFrame& frame(uint32_t id) const { return id < frames.size() ? frames[id] : frames[0]; }
  const SampleMapping& mapping(uint32_t id) const { return id < mappings.size() ? mappings[id] : mappings[0]; }
  // The process's event names ("task-clock", ...), from its SampleConfig; {"samples"} when unknown.
  std::vector<std::string> events(uint16_t process) const;
  // CPU time one sample of event 0 stands for (0 when unknown).
  uint64_t period_ns(uint16_t process) const;
  // Total samples (weighted) over all counts.
  uint64_t total() const;
  // Appends a stack (frames leaf first); returns its id. For tests and importers.
  uint32_t add_stack(std::span<const uint32_t> frames);
};

}  // namespace strata::trace
