// The in-memory trace: processes, spans (64-byte records, one column), attributes and strings.
// Everything an analysis sees; it never learns which tracer produced a span.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/level.h"
#include "core/span_record.h"
#include "core/stats.h"
#include "format/properties.h"
#include "trace/samples.h"
#include "trace/string_pool.h"

namespace strata::trace {

struct ClockSnapshot {
  std::vector<std::pair<uint32_t, int64_t>> readings;  // (ClockDomain, value)
};

struct Process {
  uint64_t stream_id = 0;
  int64_t pid = 0;
  int64_t ppid = 0;
  std::string host;
  std::string command_line;  // arguments joined by spaces (for display)
  std::string trace_id;      // 32 hex digits (W3C trace-context)
  std::string parent_span_id;  // 16 hex digits, from an inherited traceparent, or empty
  int64_t start_realtime_ns = 0;
  int64_t start_monotonic_ns = 0;
  std::optional<uint8_t> level_gate;
  format::Properties properties;  // everything the writer said, known keys or not (stats apart)
  stats::StatSet stats;           // this process's counters: collector drops, importer counts
  std::map<uint32_t, std::string> thread_names;
  std::vector<ClockSnapshot> clock_snapshots;
  bool ended_cleanly = false;  // an End chunk was seen
  uint64_t span_count = 0;
};

class SpanTree;
class TrackTable;
struct TraceStructure;

class Trace {
 public:
  StringPool strings;
  std::vector<Process> processes;
  std::vector<SpanRecord> spans;
  std::vector<AttrRecord> attrs;
  // attrs of span i: spans[i].attr_count records from attrs[attr_begin[i]] (one entry per span, plus
  // the end of attrs). Sorting spans moves these offsets, never the attributes.
  std::vector<uint32_t> attr_begin{0};
  format::Properties record;            // what `strata record` wrote (command, exit status, ...)
  stats::StatSet stats;                 // trace-wide counters: reading (load.*), the span tree (tree.*)
  std::vector<std::string> warnings;    // what went wrong while reading, one line each (file, offset)
  SampleData samples;                   // CPU samples (`strata record --sample`, `strata attach`)

  std::string_view name(const SpanRecord& span) const { return strings.get(span.name); }
  std::span<const AttrRecord> attributes(size_t span_index) const {
    return {attrs.data() + attr_begin[span_index], spans[span_index].attr_count};
  }
  const Process& process(const SpanRecord& span) const { return processes[span.process]; }

  // Builders, for importers and tests.
  uint16_t add_process(Process process);
  size_t add_span(const SpanRecord& span, std::span<const AttrRecord> attributes = {});
  AttrRecord int_attr(std::string_view key, int64_t value);
  AttrRecord double_attr(std::string_view key, double value);
  AttrRecord string_attr(std::string_view key, std::string_view value);
  AttrRecord metric(std::string_view key, double value);

  // Attribute lookup by key; nullopt when absent.
  std::optional<AttrRecord> find_attr(size_t span_index, std::string_view key) const;
  std::string attr_value_string(const AttrRecord& attr) const;

  // A stat summed over the trace and every process.
  uint64_t stat(stats::Stat stat) const;
  // Events lost, over all processes (the Stats-chunk counters): drops that keep their event
  // (stats::keeps_event: collector.end_lost, collector.string_truncated) left out.
  uint64_t total_drops() const;
  void reserve(size_t span_count, size_t attr_count);

  // Structure, built once when a trace is opened (TraceBuilder::finish): the tracks table and the
  // span tree, kept with the trace so every command step uses the same ones. A trace assembled by
  // hand (tests, generators) gets them built on first use; code that changes the spans afterwards
  // calls invalidate_structure() (sort_spans and add_span do). Not thread-safe before it is built.
  const TrackTable& tracks() const;
  const SpanTree& tree() const;
  bool has_structure() const;
  void invalidate_structure() { structure_.reset(); }
  void set_structure(std::shared_ptr<const TraceStructure> structure) { structure_ = std::move(structure); }

 private:
  const TraceStructure& structure() const;
  mutable std::shared_ptr<const TraceStructure> structure_;
};

}  // namespace strata::trace
