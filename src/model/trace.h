// The in-memory trace: processes, spans (64-byte records, one column), attributes and strings.
// Everything an analysis sees; it never learns which tracer produced a span.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/level.h"
#include "core/span_record.h"
#include "format/properties.h"
#include "model/samples.h"
#include "model/string_pool.h"

namespace strata::model {

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
  format::Properties properties;         // everything the writer said, known keys or not
  std::map<std::string, uint64_t> drops;  // dropped events by cause
  std::map<uint32_t, std::string> thread_names;
  std::vector<ClockSnapshot> clock_snapshots;
  bool ended_cleanly = false;  // an End chunk was seen
  uint64_t span_count = 0;
};

// What happened while loading: everything not loaded is counted here, never silently lost.
struct LoadReport {
  std::vector<std::string> warnings;  // one line each, file and offset included
  uint64_t corrupt_chunks = 0;
  uint64_t skipped_bytes = 0;
  uint64_t unknown_chunks = 0;
  uint64_t truncated_files = 0;
  uint64_t unknown_strings = 0;  // ids referenced but never defined
  uint64_t unknown_levels = 0;   // spans with a level this version does not know (kept)
  uint64_t unknown_activities = 0;  // spans with an activity type this version does not know (kept)
  // Spans of files written before format 1.1, typed at load (model/activity_upgrade.h), and their
  // attributes renamed from an old spelling to the canonical key.
  uint64_t activity_upgraded = 0;
  uint64_t legacy_keys_renamed = 0;
  uint64_t clamped_times = 0;    // spans with a time beyond +-2^62 ns, moved to that bound (kept)
  uint64_t stream_limit_chunks = 0;  // chunks of streams past the 65,536 a trace holds (skipped)
  uint64_t files = 0;
  uint64_t bytes = 0;
};

class Trace {
 public:
  StringPool strings;
  std::vector<Process> processes;
  std::vector<SpanRecord> spans;
  std::vector<AttrRecord> attrs;
  std::vector<uint32_t> attr_begin{0};  // attrs of span i: [attr_begin[i], attr_begin[i+1])
  format::Properties record;            // what `strata record` wrote (command, exit status, ...)
  SampleData samples;                   // CPU samples (`strata record --sample`, `strata attach`)
  LoadReport report;

  std::string_view name(const SpanRecord& span) const { return strings.get(span.name); }
  std::span<const AttrRecord> attributes(size_t span_index) const {
    return {attrs.data() + attr_begin[span_index], attrs.data() + attr_begin[span_index + 1]};
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

  // Events lost, over all processes: drop causes that keep their event (drop_keeps_event) left out.
  uint64_t total_drops() const;
  void reserve(size_t span_count, size_t attr_count);
};

}  // namespace strata::model
