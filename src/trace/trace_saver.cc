#include "trace/trace_saver.h"

#include <unordered_set>
#include <vector>

#include "format/chunk_writer.h"
#include "format/payloads.h"
#include "format/stream_writer.h"

namespace strata::trace {
namespace {

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

// The Process chunk: what the loader read from it (properties) with the typed fields on top, so a
// process built in memory (by an importer) saves its fields even if it never had properties.
format::Properties process_properties(const Process& p) {
  namespace k = format::keys;
  format::Properties props;
  for (const auto& [key, value] : p.properties.entries())
    if (!starts_with(key, "stats.") && !starts_with(key, "end.")) props.set(key, value);
  props.set_int(std::string(k::kPid), p.pid);
  props.set_int(std::string(k::kPpid), p.ppid);
  props.set(std::string(k::kHost), p.host);
  props.set(std::string(k::kArgv), p.command_line);
  props.set(std::string(k::kTraceId), p.trace_id);
  props.set(std::string(k::kParentSpanId), p.parent_span_id);
  props.set_int(std::string(k::kStartRealtimeNs), p.start_realtime_ns);
  props.set_int(std::string(k::kStartMonotonicNs), p.start_monotonic_ns);
  if (p.level_gate) props.set_int(std::string(k::kLevel), *p.level_gate);
  for (const auto& [stat, value] : p.stats.nonzero())
    if (stats::info(stat).disk == stats::Disk::kProcess)
      props.set_int(std::string(stats::info(stat).disk_key), static_cast<int64_t>(value));
  return props;
}

}  // namespace

bool save_trace(const Trace& trace, const std::string& path, std::string* error, int zstd_level) {
  format::ChunkWriter writer;
  if (!writer.open(path)) {
    *error = writer.error();
    return false;
  }
  // Spans grouped by process, keeping their order.
  std::vector<std::vector<uint32_t>> by_process(trace.processes.size());
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    uint16_t p = trace.spans[i].process;
    if (p >= by_process.size()) {
      *error = path + ": span " + std::to_string(i) + " names process " + std::to_string(p) + " of " +
               std::to_string(trace.processes.size()) + "; the trace in memory is inconsistent";
      return false;
    }
    by_process[p].push_back(static_cast<uint32_t>(i));
  }
  std::unordered_set<uint64_t> used_ids;
  std::vector<AttrRecord> attrs;
  constexpr uint32_t kNoStreamId = UINT32_MAX;
  std::vector<uint32_t> stream_ids;
  for (size_t pi = 0; pi < trace.processes.size(); ++pi) {
    const Process& p = trace.processes[pi];
    uint64_t stream_id = p.stream_id;
    while (stream_id == 0 || !used_ids.insert(stream_id).second)
      stream_id = (uint64_t{0x5A} << 56) + pi + 1 + used_ids.size();
    format::StreamWriter stream(&writer, stream_id, zstd_level);
    if (!stream.write_properties(format::ChunkType::kProcess, process_properties(p))) break;
    // The stream's id of each pool string, looked up once: a name or key is written once per span
    // and attribute (millions), and the stream's own table hashes the text each time.
    stream_ids.assign(trace.strings.size(), kNoStreamId);
    auto stream_id_of = [&](uint64_t id) {
      if (id >= stream_ids.size()) return stream.intern(trace.strings.get(static_cast<uint32_t>(id)));
      uint32_t& known = stream_ids[id];
      if (known == kNoStreamId) known = stream.intern(trace.strings.get(static_cast<uint32_t>(id)));
      return known;
    };
    for (uint32_t i : by_process[pi]) {
      SpanRecord span = trace.spans[i];
      span.name = stream_id_of(span.name);
      attrs.assign(trace.attributes(i).begin(), trace.attributes(i).end());
      for (AttrRecord& a : attrs) {
        a.key = stream_id_of(a.key);
        if (a.type == static_cast<uint8_t>(AttrType::kString)) a.value.u = stream_id_of(a.value.u);
      }
      stream.add_span(span, attrs);
    }
    if (!stream.flush()) break;
    for (const ClockSnapshot& snap : p.clock_snapshots) {
      std::vector<format::ClockReading> readings;
      for (const auto& [domain, value] : snap.readings) readings.push_back({domain, 0, value});
      if (!stream.write_clock_snapshot(readings)) break;
    }
    format::Properties counters;
    for (const auto& [key, value] : p.properties.entries())
      if (starts_with(key, "stats.")) counters.set(key.substr(6), value);
    // Counters under the keys that every Strata version reads ("dropped.<cause>").
    for (const auto& [stat, value] : p.stats.nonzero())
      if (stats::info(stat).disk == stats::Disk::kStats)
        counters.set_int(std::string(stats::info(stat).disk_key), static_cast<int64_t>(value));
    for (const auto& [key, value] : p.stats.unregistered())
      counters.set_int(key, static_cast<int64_t>(value));
    for (const auto& [tid, name] : p.thread_names) counters.set("thread_name." + std::to_string(tid), name);
    if (!counters.entries().empty() && !stream.write_properties(format::ChunkType::kStats, counters)) break;
    if (p.ended_cleanly) {
      format::Properties end;
      for (const auto& [key, value] : p.properties.entries())
        if (starts_with(key, "end.")) end.set(key.substr(4), value);
      if (!stream.write_properties(format::ChunkType::kEnd, end)) break;
    }
  }
  if (writer.error().empty() && !trace.record.entries().empty())
    writer.write_chunk(format::ChunkType::kRecord, 0, trace.record.encode());
  if (!writer.error().empty()) {
    *error = writer.error();
    return false;
  }
  writer.close();
  return true;
}

}  // namespace strata::trace
