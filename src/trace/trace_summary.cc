#include "trace/trace_summary.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/activity_type.h"
#include "core/level.h"
#include "format/chunk_reader.h"
#include "format/payloads.h"
#include "format/sample_payloads.h"
#include "trace/sample_loader.h"
#include "trace/trace_builder.h"
#include "trace/trace_loader.h"

namespace strata::trace {
namespace {

void add_sample_mode(TraceSummary* s, const std::string& mode) {
  if (!mode.empty() && std::find(s->sample_modes.begin(), s->sample_modes.end(), mode) == s->sample_modes.end())
    s->sample_modes.push_back(mode);
}

constexpr int64_t kNoTime = std::numeric_limits<int64_t>::max();

// Earliest start and latest end of a set of spans.
struct TimeRange {
  int64_t first = kNoTime;
  int64_t last = std::numeric_limits<int64_t>::min();
  void add(const SpanRecord& s) {
    first = std::min(first, s.start_ns);
    last = std::max(last, s.end_ns);
  }
  bool empty() const { return first == kNoTime; }
};

// String ids a stream has defined, as merged intervals [begin, end): the ids of a stream are
// handed out in order, so a well-formed stream needs one interval. A fragmented (hostile) one
// stops being tracked past a bound instead of growing without limit.
class DefinedIds {
 public:
  void add(uint32_t id) {
    if (!tracked_) return;
    auto next = ranges_.upper_bound(id);
    if (next != ranges_.begin()) {
      auto prev = std::prev(next);
      if (id < prev->second) return;
      if (id == prev->second) {
        prev->second = id + 1;
        if (next != ranges_.end() && next->first == prev->second) {
          prev->second = next->second;
          ranges_.erase(next);
        }
        return;
      }
    }
    if (next != ranges_.end() && next->first == id + 1) {
      uint32_t end = next->second;
      ranges_.erase(next);
      ranges_.emplace(id, end);
      return;
    }
    if (ranges_.size() >= kMaxRanges) {
      tracked_ = false;
      ranges_.clear();
      return;
    }
    ranges_.emplace(id, id + 1);
  }
  // True when `id` is defined (or when ids are no longer tracked: nothing is reported then).
  bool contains(uint32_t id) const {
    if (id == 0 || !tracked_) return true;
    auto next = ranges_.upper_bound(id);
    return next != ranges_.begin() && id < std::prev(next)->second;
  }

 private:
  static constexpr size_t kMaxRanges = 1 << 16;
  std::map<uint32_t, uint32_t> ranges_;
  bool tracked_ = true;
};

// The loader re-maps a stream's tick-derived times onto the rate its clock snapshots show over
// the whole run (trace_loader.cc, refine_tick_clocks); the summary's time range follows it. The
// map is linear and increasing, so the extremes of the mapped times are the mapped extremes.
struct TickRefinement {
  std::optional<std::pair<int64_t, int64_t>> first, last;  // (monotonic ns, ticks) of snapshots

  void add_snapshot(const ClockSnapshot& snap) {
    std::optional<int64_t> mono, ticks;
    for (auto [domain, value] : snap.readings) {
      if (domain == static_cast<uint32_t>(ClockDomain::kMonotonic)) mono = value;
      if (domain == static_cast<uint32_t>(ClockDomain::kTsc)) ticks = value;
    }
    if (!mono || !ticks) return;
    if (!first) first = {{*mono, *ticks}};
    last = {{*mono, *ticks}};
  }

  // Applies the refinement to `range` (times of tick-derived spans) and notes the correction in
  // the process's properties, as the loader does. False when the loader would not refine.
  bool apply(Process* p, TimeRange* range) const {
    namespace k = format::keys;
    auto anchor_ticks = p->properties.get_int(k::kTscAnchorTicks);
    auto anchor_ns = p->properties.get_int(k::kTscAnchorNs);
    auto used_text = p->properties.get(k::kTscNsPerTick);
    if (!anchor_ticks || !anchor_ns || !used_text || !first || !last) return false;
    double used = std::strtod(std::string(*used_text).c_str(), nullptr);
    if (used <= 0) return false;
    const double span_ticks = time_difference(last->second, first->second);
    const double span_ns = time_difference(last->first, first->first);
    if (span_ns < 50e6 || span_ticks <= 0) return false;
    const double truth = span_ns / span_ticks;
    auto remap = [&](int64_t ns) {
      // In doubles, clamped: anchors and snapshots come from the file (any int64 at all).
      double ticks = static_cast<double>(*anchor_ticks) + time_difference(ns, *anchor_ns) / used;
      return add_time_ns(first->first,
                         clamp_to_time_ns((ticks - static_cast<double>(first->second)) * truth));
    };
    if (!range->empty()) {
      range->first = remap(range->first);
      range->last = remap(range->last);
    }
    char ppm[32];
    std::snprintf(ppm, sizeof(ppm), "%.3f", (truth / used - 1.0) * 1e6);
    p->properties.set("tsc_correction_ppm", ppm);
    return true;
  }
};

struct StreamState {
  size_t process = 0;
  bool described = false;  // a Process chunk was read
  DefinedIds strings;
  TickRefinement ticks;
  TimeRange plain, from_ticks;
  std::vector<std::pair<uint8_t, uint64_t>> per_level;  // few levels: a short list beats a map
  uint64_t& level_count(uint8_t level) {
    for (auto& [l, n] : per_level)
      if (l == level) return n;
    return per_level.emplace_back(level, 0).second;
  }
};

// A process's dropped-event counters (its Stats-chunk stats) by stat name, added to *drops.
void add_drops(const Process& p, std::map<std::string, uint64_t>* drops) {
  for (const auto& [stat, count] : p.stats.nonzero())
    if (stats::info(stat).disk == stats::Disk::kStats) (*drops)[std::string(stats::info(stat).name)] += count;
  for (const auto& [key, count] : p.stats.unregistered()) (*drops)[key] += count;
}

// One file's chunks, summarized as the loader would load them.
class FileSummarizer {
 public:
  FileSummarizer(TraceSummary* out, format::ChunkReader* reader) : out_(out), reader_(reader) {}

  bool run(std::string* error);

 private:
  static constexpr size_t kMaxStreams = 65536;  // the loader's process index is 16 bits

  void warn(const format::Chunk& chunk, const std::string& reason) {
    if (out_->warnings.size() < TraceBuilder::kMaxWarnings)
      out_->warnings.push_back(reader_->name() + ": offset " + std::to_string(chunk.offset) + ": " + reason);
  }
  // As the loader: a chunk with a valid checksum whose payload cannot be decoded is skipped, counted.
  void skip(const format::Chunk& chunk, const std::string& reason) {
    out_->stats.add(stats::Stat::kLoadUndecodableChunks);
    warn(chunk, reason + "; chunk skipped");
  }
  // As the loader: each problem is one stored counter left out.
  void note_problems(const format::Chunk& chunk) {
    out_->stats.add(stats::Stat::kLoadBadCounters, problems_.size());
    for (const std::string& problem : problems_) warn(chunk, problem);
  }
  StreamState* stream(const format::Chunk& chunk);
  void handle(const format::Chunk& chunk);
  void handle_process(const format::Chunk& chunk, StreamState& s);
  void handle_stats(const format::Chunk& chunk, StreamState& s);
  void handle_samples(const format::Chunk& chunk, const StreamState& s);
  void handle_spans(const format::Chunk& chunk, StreamState& s);
  void check_string(const StreamState& s, uint32_t id) {
    if (!s.strings.contains(id)) out_->stats.add(stats::Stat::kLoadUnknownStrings);
  }
  void finish();

  TraceSummary* out_;
  format::ChunkReader* reader_;
  std::unordered_map<uint64_t, StreamState> streams_;
  std::vector<uint64_t> stream_order_;
  std::vector<format::StringEntry> entries_;
  std::vector<std::string> problems_;
  uint64_t unknown_chunks_ = 0;
  bool stream_limit_warned_ = false;
};

StreamState* FileSummarizer::stream(const format::Chunk& chunk) {
  auto it = streams_.find(chunk.stream_id);
  if (it != streams_.end()) return &it->second;
  if (out_->processes.size() >= kMaxStreams) {
    out_->stats.add(stats::Stat::kLoadStreamLimitChunks);
    if (!std::exchange(stream_limit_warned_, true))
      warn(chunk,
           "more than 65536 streams (processes); chunks of further streams skipped");  // the loader's words
    return nullptr;
  }
  Process p;
  p.stream_id = chunk.stream_id;
  StreamState state;
  state.process = out_->processes.size();
  out_->processes.push_back(std::move(p));
  out_->clock_snapshot_counts.push_back(0);
  stream_order_.push_back(chunk.stream_id);
  return &streams_.emplace(chunk.stream_id, std::move(state)).first->second;
}

bool FileSummarizer::run(std::string* error) {
  format::Chunk chunk;
  for (;;) {
    auto status = reader_->next(&chunk);
    if (status == format::ChunkReader::Status::kEnd) break;
    if (status == format::ChunkReader::Status::kError) {
      *error = reader_->error();
      return false;
    }
    handle(chunk);
  }
  finish();
  using stats::Stat;
  stats::StatSet& st = out_->stats;
  st.add(Stat::kLoadFiles);
  st.add(Stat::kLoadBytes, reader_->file_size());
  st.add(Stat::kLoadCorruptChunks, reader_->corrupt_chunks());
  st.add(Stat::kLoadSkippedBytes, reader_->skipped_bytes());
  st.add(Stat::kLoadUnknownChunks, unknown_chunks_);
  if (reader_->truncated()) st.add(Stat::kLoadTruncatedFiles);
  for (const auto& w : reader_->warnings())
    if (out_->warnings.size() < TraceBuilder::kMaxWarnings) out_->warnings.push_back(w);
  return true;
}

void FileSummarizer::handle(const format::Chunk& chunk) {
  using format::ChunkType;
  const auto type = static_cast<ChunkType>(chunk.type);
  if (type == ChunkType::kRecord) {
    format::Properties props;
    std::string error;
    if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
    for (const auto& [key, value] : props.entries()) out_->record.set(key, value);
    problems_.clear();
    for (const auto& [stat, count] : record_stats(props, &problems_)) out_->stats.add(stat, count);
    note_problems(chunk);
    return;
  }
  const bool samples = SampleChunkLoader::is_sample_chunk(chunk.type);
  if (!samples && (chunk.type < static_cast<uint16_t>(ChunkType::kProcess) ||
                   chunk.type > static_cast<uint16_t>(ChunkType::kEnd))) {
    ++unknown_chunks_;  // a newer minor version's chunk: skipped on purpose
    return;
  }
  // As the loader: every chunk but the Record belongs to a stream (sample chunks too), and the
  // stream limit applies to all of them.
  StreamState* s = stream(chunk);
  if (s == nullptr) return;
  if (samples) return handle_samples(chunk, *s);
  Process& p = out_->processes[s->process];
  std::string error;
  switch (type) {
    case ChunkType::kProcess:
      return handle_process(chunk, *s);
    case ChunkType::kStrings:
      entries_.clear();
      if (!format::decode_strings(chunk.payload, &entries_, &error)) return skip(chunk, error);
      for (const auto& e : entries_) {
        if (e.id >= (1u << 28)) {
          out_->stats.add(stats::Stat::kLoadBadStringIds);
          warn(chunk, "string id " + std::to_string(e.id) + " out of range; entry skipped");
          continue;
        }
        s->strings.add(e.id);
      }
      return;
    case ChunkType::kSpans:
      return handle_spans(chunk, *s);
    case ChunkType::kClockSnapshot: {
      std::vector<format::ClockReading> readings;
      if (!format::decode_clock_snapshot(chunk.payload, &readings, &error)) return skip(chunk, error);
      ClockSnapshot snap;
      for (const auto& r : readings) snap.readings.emplace_back(r.domain, r.value);
      s->ticks.add_snapshot(snap);
      if (p.clock_snapshots.size() < 2)
        p.clock_snapshots.push_back(std::move(snap));
      else
        p.clock_snapshots.back() = std::move(snap);  // keep the first and the latest
      ++out_->clock_snapshot_counts[s->process];
      return;
    }
    case ChunkType::kStats:
      return handle_stats(chunk, *s);
    case ChunkType::kEnd: {
      p.ended_cleanly = true;
      format::Properties props;
      if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
      for (const auto& [key, value] : props.entries()) p.properties.set("end." + key, value);
      return;
    }
    default:
      return;
  }
}

// CPU samples: their total and how they were taken (the counts chunks and the configuration). Every
// sample chunk is decoded as the loader decodes it (trace/sample_loader.cc), so the same chunks are
// counted undecodable and the same string references unknown.
void FileSummarizer::handle_samples(const format::Chunk& chunk, const StreamState& s) {
  using format::ChunkType;
  std::string error;
  switch (static_cast<ChunkType>(chunk.type)) {
    case ChunkType::kSampleConfig: {
      format::Properties props;
      if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
      add_sample_mode(out_, std::string(props.get("mode").value_or("")));
      return;
    }
    case ChunkType::kSampleMappings: {
      std::vector<format::SampleMapping> mappings;
      if (!format::decode_sample_mappings(chunk.payload, &mappings, &error)) return skip(chunk, error);
      for (const auto& m : mappings) check_string(s, m.path);
      return;
    }
    case ChunkType::kSampleFrames: {
      std::vector<format::SampleFrame> frames;
      if (!format::decode_sample_frames(chunk.payload, &frames, &error)) return skip(chunk, error);
      for (const auto& f : frames) {
        if (f.kind != format::SampleFrameKind::kPython) continue;
        check_string(s, f.function);
        check_string(s, f.file);
      }
      return;
    }
    case ChunkType::kSampleStacks: {
      std::vector<format::SampleStack> stacks;
      if (!format::decode_sample_stacks(chunk.payload, &stacks, &error)) return skip(chunk, error);
      return;
    }
    case ChunkType::kSampleCounts: {
      format::SampleCountsHeader h;
      std::vector<format::SampleCount> counts;
      if (!format::decode_sample_counts(chunk.payload, &h, &counts, &error)) return skip(chunk, error);
      for (const auto& c : counts) out_->samples += c.count;
      return;
    }
    case ChunkType::kSampleTimeline: {
      uint32_t tid = 0;
      std::vector<format::SamplePoint> points;
      if (!format::decode_sample_timeline(chunk.payload, &tid, &points, &error)) return skip(chunk, error);
      return;
    }
    default:
      return skip(chunk, "not a sample chunk");
  }
}

void FileSummarizer::handle_process(const format::Chunk& chunk, StreamState& s) {
  format::Properties props;
  std::string error;
  if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
  if (std::exchange(s.described, true)) {  // another writer claiming this stream's id: the loader's rule
    out_->stats.add(stats::Stat::kLoadDuplicateProcessChunks);
    return warn(chunk, duplicate_process_warning(chunk.stream_id, props));
  }
  problems_.clear();
  read_process_properties(std::move(props), &out_->processes[s.process], &problems_);
  note_problems(chunk);
}

void FileSummarizer::handle_stats(const format::Chunk& chunk, StreamState& s) {
  format::Properties props;
  std::string error;
  if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
  problems_.clear();
  read_stats_properties(props, &out_->processes[s.process], /*thread_names=*/false, &problems_);
  note_problems(chunk);
}

void FileSummarizer::handle_spans(const format::Chunk& chunk, StreamState& s) {
  format::DecodedSpans decoded;
  std::string error;
  if (!format::decode_spans(chunk.payload, &decoded, &error)) return skip(chunk, error);
  uint64_t attr_total = 0;
  for (uint32_t i = 0; i < decoded.span_count; ++i) {
    uint16_t count;
    std::memcpy(&count, decoded.span_bytes + i * sizeof(SpanRecord) + offsetof(SpanRecord, attr_count), 2);
    attr_total += count;
  }
  if (attr_total != decoded.attr_count) {
    return skip(chunk, "spans chunk attribute counts (" + std::to_string(attr_total) +
                           ") disagree with its attribute area (" + std::to_string(decoded.attr_count) + ")");
  }
  if (reader_->version_minor() < 1) out_->format_1_0_spans += decoded.span_count;
  uint32_t last_name = UINT32_MAX;  // names are checked when they change, as the loader counts them
  uint64_t clamped = 0;
  for (uint32_t i = 0; i < decoded.span_count; ++i) {
    SpanRecord span;
    std::memcpy(&span, decoded.span_bytes + i * sizeof(SpanRecord), sizeof(span));
    if (span.name != last_name) {
      last_name = span.name;
      check_string(s, span.name);
    }
    if (!is_known_level(span.level)) out_->stats.add(stats::Stat::kLoadUnknownLevels);
    if (!is_known_activity(span.activity)) out_->stats.add(stats::Stat::kLoadUnknownActivities);
    ++s.level_count(span.level);
    ++out_->spans_per_kind[span.kind];
    ++out_->spans_per_activity[span.activity];
    if (span.flags & kSpanFlagUnfinished) ++out_->unfinished;
    if (clamp_span_times(span)) ++clamped;  // as the loader keeps them
    (span.flags & kSpanFlagFromTicks ? s.from_ticks : s.plain).add(span);
  }
  for (uint32_t i = 0; i < decoded.attr_count; ++i) {
    AttrRecord a;
    std::memcpy(&a, decoded.attr_bytes + i * sizeof(AttrRecord), sizeof(a));
    check_string(s, a.key);
    if (a.type == static_cast<uint8_t>(AttrType::kString)) check_string(s, static_cast<uint32_t>(a.value.u));
  }
  out_->processes[s.process].span_count += decoded.span_count;
  out_->spans += decoded.span_count;
  if (clamped) {
    out_->stats.add(stats::Stat::kLoadClampedTimes, clamped);
    warn(chunk, std::to_string(clamped) +
                    " span(s) with times beyond +-2^62 ns (corrupt or forged); "
                    "kept, moved to that bound");
  }
}

void FileSummarizer::finish() {
  for (uint64_t id : stream_order_) {
    StreamState& s = streams_.at(id);
    Process& p = out_->processes[s.process];
    s.ticks.apply(&p, &s.from_ticks);
    for (const TimeRange& range : {s.plain, s.from_ticks}) {
      if (range.empty()) continue;
      out_->first_ns = std::min(out_->first_ns, range.first);
      out_->last_ns = std::max(out_->last_ns, range.last);
    }
    for (auto [level, count] : s.per_level) {
      out_->spans_per_level[level] += count;
      out_->spans_per_process_level[{p.pid, level}] += count;
    }
    add_drops(p, &out_->drops);
  }
}

}  // namespace

TraceSummary summarize(const Trace& trace) {
  TraceSummary s;
  s.processes = trace.processes;
  for (const Process& p : trace.processes) s.clock_snapshot_counts.push_back(p.clock_snapshots.size());
  s.record = trace.record;
  for (const stats::StatInfo& info : stats::all_stats())  // what reading found, not the tree
    if (info.scope == stats::Scope::kTrace && info.source != stats::Source::kCorrelation)
      if (uint64_t v = trace.stats.get(info.id)) s.stats.set(info.id, v);
  s.warnings = trace.warnings;
  s.spans = trace.spans.size();
  TimeRange range;
  for (const SpanRecord& span : trace.spans) {
    s.spans_per_level[span.level] += 1;
    s.spans_per_kind[span.kind] += 1;
    s.spans_per_activity[span.activity] += 1;
    s.spans_per_process_level[{trace.process(span).pid, span.level}] += 1;
    if (span.flags & kSpanFlagUnfinished) s.unfinished += 1;
    range.add(span);
  }
  if (!range.empty()) {
    s.first_ns = range.first;
    s.last_ns = range.last;
  }
  for (const Process& p : trace.processes) add_drops(p, &s.drops);
  s.samples = trace.samples.total();
  for (const auto& [process, config] : trace.samples.config)
    add_sample_mode(&s, std::string(config.get("mode").value_or("")));
  return s;
}

bool summarize_file(const std::string& path, TraceSummary* out, std::string* error) {
  *out = TraceSummary();
  out->first_ns = kNoTime;
  out->last_ns = std::numeric_limits<int64_t>::min();
  NativeInputs inputs;
  if (!inputs.list(path, error)) return false;
  out->stats.add(stats::Stat::kLoadDirectoryEntriesSkipped, inputs.skipped().size());
  for (const std::string& line : inputs.skipped()) out->warnings.push_back(line);
  std::string damaged;  // the first damaged file that gave no spans
  for (size_t i = 0; i < inputs.size(); ++i) {
    format::ChunkReader reader;
    std::string skipped;
    if (!inputs.open(i, &reader, &skipped, error)) {
      if (skipped.empty()) return false;
      out->stats.add(stats::Stat::kLoadDirectoryEntriesSkipped);
      out->warnings.push_back(skipped);
      continue;
    }
    const uint64_t spans_before = out->spans;
    FileSummarizer summarizer(out, &reader);
    if (!summarizer.run(error)) return false;
    if (out->spans == spans_before && damaged.empty()) damaged = damage_of(reader, inputs.shown(i));
  }
  if (out->spans == 0 && !damaged.empty()) {  // as load_trace: nothing recovered is an error
    *error = nothing_recovered_error(damaged);
    return false;
  }
  if (out->first_ns == kNoTime) out->first_ns = out->last_ns = 0;
  return true;
}

bool drop_keeps_event(std::string_view cause) {
  std::optional<stats::Stat> stat = stats::find(cause);
  if (!stat) stat = stats::find(std::string(format::keys::kDroppedPrefix) + std::string(cause));
  return stat && stats::keeps_event(*stat);
}

bool summarize_chunks(format::ChunkReader& reader, TraceSummary* out, std::string* error) {
  *out = TraceSummary();
  out->first_ns = kNoTime;
  out->last_ns = std::numeric_limits<int64_t>::min();
  FileSummarizer summarizer(out, &reader);
  if (!summarizer.run(error)) return false;
  if (out->first_ns == kNoTime) out->first_ns = out->last_ns = 0;
  return true;
}

std::vector<BufferLoss> buffer_losses(const TraceSummary& summary) {
  std::vector<BufferLoss> out;
  for (const Process& p : summary.processes) {
    const uint64_t lost = p.stats.get(stats::Stat::kCollectorBufferFull);
    if (lost == 0) continue;
    BufferLoss loss;
    loss.pid = p.pid;
    loss.lost_spans = lost;
    loss.kept_spans = p.span_count;
    loss.budget_bytes =
        static_cast<uint64_t>(std::max<int64_t>(0, p.properties.get_int("buffer_bytes").value_or(0)));
    loss.needed_bytes = loss.budget_bytes + loss.lost_spans * 32;
    out.push_back(loss);
  }
  std::sort(out.begin(), out.end(), [](const BufferLoss& a, const BufferLoss& b) {
    return a.lost_spans * (b.kept_spans + b.lost_spans) > b.lost_spans * (a.kept_spans + a.lost_spans);
  });
  return out;
}

}  // namespace strata::trace
