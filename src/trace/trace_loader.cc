#include "trace/trace_loader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <unordered_map>
#include <utility>

#include "core/activity_type.h"
#include "core/vector_growth.h"
#include "format/payloads.h"
#include "format/trace_merge.h"
#include "trace/activity_upgrade.h"
#include "trace/sample_loader.h"
#include "trace/trace_reader.h"

namespace strata::trace {
namespace {

// Per-stream state: a stream's string ids are local to it and remapped into the trace's pool.
struct StreamState {
  uint16_t process = 0;
  bool described = false;     // a Process chunk was read (a stream has one)
  LocalStringIds string_map;  // local id -> pool id (kUndefined: not defined yet)
};

using stats::Stat;

class Loader {
 public:
  Loader(TraceBuilder* builder, format::ChunkReader* reader)
      : builder_(builder),
        trace_(&builder->trace()),
        reader_(reader),
        first_span_(trace_->spans.size()),
        samples_(&trace_->samples) {}

  bool run(std::string* error) {
    // Reserve for the most spans the file can hold: no reallocation (and no 2x peak while one
    // copies), and pages never touched cost no memory.
    // (A compressed file holds more: the vectors then grow geometrically, chunk by chunk. Files of a
    // directory load into one trace: each reserve grows it geometrically too.)
    const size_t max_spans = reader_->file_size() / sizeof(SpanRecord);
    reserve_more(trace_->spans, max_spans);
    reserve_more(trace_->attr_begin, max_spans);
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
    refine_tick_clocks();
    if (reader_->version_minor() < 1) {
      // Format 1.0 has no activity types and older attribute spellings: upgraded here, once.
      UpgradeCounts up = upgrade_untyped_spans(trace_, first_span_);
      builder_->count(Stat::kLoadActivityUpgraded, up.spans_typed);
      builder_->count(Stat::kLoadLegacyKeysRenamed, up.keys_renamed);
    }
    builder_->count(Stat::kLoadFiles);
    builder_->count(Stat::kLoadBytes, reader_->file_size());
    builder_->count(Stat::kLoadCorruptChunks, reader_->corrupt_chunks());
    builder_->count(Stat::kLoadSkippedBytes, reader_->skipped_bytes());
    builder_->count(Stat::kLoadUnknownChunks, unknown_chunks_);
    if (reader_->truncated()) builder_->count(Stat::kLoadTruncatedFiles);
    for (const auto& w : reader_->warnings()) builder_->warn(w);
    return true;
  }

 private:
  void warn(const format::Chunk& chunk, const std::string& reason) {
    builder_->warn(reader_->name() + ": offset " + std::to_string(chunk.offset) + ": " + reason);
  }
  // A chunk that passed its checksum but could not be decoded: skipped, counted, and said why.
  void skip(const format::Chunk& chunk, const std::string& reason) {
    builder_->count(Stat::kLoadUndecodableChunks);
    warn(chunk, reason + "; chunk skipped");
  }

  StreamState& stream(uint64_t stream_id) {
    auto it = streams_.find(stream_id);
    if (it != streams_.end()) return it->second;
    Process p;
    p.stream_id = stream_id;
    StreamState state;
    state.process = trace_->add_process(std::move(p));
    return streams_.emplace(stream_id, std::move(state)).first->second;
  }

  // A span's process index is 16 bits: a trace holds 65,536 streams. Chunks of further streams
  // are skipped and counted (a forged file cannot wrap the index onto another process).
  bool over_stream_limit(const format::Chunk& chunk) {
    if (streams_.count(chunk.stream_id) || trace_->processes.size() <= UINT16_MAX) return false;
    builder_->count(Stat::kLoadStreamLimitChunks);
    if (!stream_limit_warned_)
      warn(chunk, "more than 65536 streams (processes); chunks of further streams skipped");
    stream_limit_warned_ = true;
    return true;
  }

  // Each problem read_*_properties reports is one stored counter left out.
  void note_problems(const format::Chunk& chunk) {
    builder_->count(Stat::kLoadBadCounters, problems_.size());
    for (const std::string& problem : problems_) warn(chunk, problem);
  }

  uint32_t map_string(StreamState& s, uint32_t local) {
    if (local == 0) return 0;
    if (uint32_t global = s.string_map.get(local); global != LocalStringIds::kUndefined) return global;
    builder_->count(Stat::kLoadUnknownStrings);
    return trace_->strings.intern("<unknown string " + std::to_string(local) + ">");
  }

  void handle(const format::Chunk& chunk) {
    using format::ChunkType;
    std::string error;
    if (chunk.type != static_cast<uint16_t>(ChunkType::kRecord) && over_stream_limit(chunk)) return;
    if (SampleChunkLoader::is_sample_chunk(chunk.type)) {  // CPU samples: trace/sample_loader.cc
      StreamState& s = stream(chunk.stream_id);
      if (!samples_.handle(chunk, s.process, [&](uint32_t id) { return map_string(s, id); }, &error))
        skip(chunk, error);  // counted (load.undecodable_chunks) and said why
      return;
    }
    switch (static_cast<ChunkType>(chunk.type)) {
      case ChunkType::kProcess:
        return handle_process(chunk);
      case ChunkType::kStrings: {
        StreamState& s = stream(chunk.stream_id);
        entries_.clear();
        if (!format::decode_strings(chunk.payload, &entries_, &error)) return skip(chunk, error);
        for (const auto& e : entries_) {
          if (e.id >= (1u << 28)) {
            builder_->count(Stat::kLoadBadStringIds);
            warn(chunk, "string id " + std::to_string(e.id) + " out of range; entry skipped");
            continue;
          }
          s.string_map.set(e.id, trace_->strings.intern(e.text));
        }
        return;
      }
      case ChunkType::kSpans:
        return handle_spans(chunk);
      case ChunkType::kClockSnapshot: {
        std::vector<format::ClockReading> readings;
        if (!format::decode_clock_snapshot(chunk.payload, &readings, &error)) return skip(chunk, error);
        ClockSnapshot snap;
        for (const auto& r : readings) snap.readings.emplace_back(r.domain, r.value);
        trace_->processes[stream(chunk.stream_id).process].clock_snapshots.push_back(std::move(snap));
        return;
      }
      case ChunkType::kStats: {
        format::Properties props;
        if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
        problems_.clear();
        read_stats_properties(props, &trace_->processes[stream(chunk.stream_id).process], true, &problems_);
        note_problems(chunk);
        return;
      }
      case ChunkType::kEnd: {
        Process& p = trace_->processes[stream(chunk.stream_id).process];
        p.ended_cleanly = true;
        format::Properties props;
        if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
        for (const auto& [key, value] : props.entries()) p.properties.set("end." + key, value);
        return;
      }
      case ChunkType::kRecord: {
        format::Properties props;
        if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
        for (const auto& [key, value] : props.entries()) trace_->record.set(key, value);
        problems_.clear();
        for (const auto& [stat, count] : record_stats(props, &problems_)) builder_->count(stat, count);
        note_problems(chunk);
        return;
      }
      default:
        break;
    }
    ++unknown_chunks_;  // a newer minor version's chunk: skipped on purpose
  }

  // The collector converts CPU ticks to ns with a calibration taken over a few ms at start. Clock
  // snapshots written later give the true tick rate over the whole run; re-map that stream's
  // tick-derived times onto it (a linear map: order and nesting are kept). Typical correction:
  // tens of ppm, i.e. tens of µs per second of run, which matters when aligning with GPU clocks.
  void refine_tick_clocks() {
    namespace k = format::keys;
    for (auto& [stream_id, state] : streams_) {
      Process& p = trace_->processes[state.process];
      auto anchor_ticks = p.properties.get_int(k::kTscAnchorTicks);
      auto anchor_ns = p.properties.get_int(k::kTscAnchorNs);
      auto used_text = p.properties.get(k::kTscNsPerTick);
      if (!anchor_ticks || !anchor_ns || !used_text) continue;
      double used = std::strtod(std::string(*used_text).c_str(), nullptr);
      // First and last snapshots holding both a monotonic and a tick reading.
      std::optional<std::pair<int64_t, int64_t>> first, last;  // (monotonic ns, ticks)
      for (const ClockSnapshot& snap : p.clock_snapshots) {
        std::optional<int64_t> mono, ticks;
        for (auto [domain, value] : snap.readings) {
          if (domain == static_cast<uint32_t>(ClockDomain::kMonotonic)) mono = value;
          if (domain == static_cast<uint32_t>(ClockDomain::kTsc)) ticks = value;
        }
        if (!mono || !ticks) continue;
        if (!first) first = {{*mono, *ticks}};
        last = {{*mono, *ticks}};
      }
      if (!first || !last || used <= 0) continue;
      const double span_ticks = time_difference(last->second, first->second);
      const double span_ns = time_difference(last->first, first->first);
      if (span_ns < 50e6 || span_ticks <= 0) continue;  // too short a baseline to improve on start-up
      const double truth = span_ns / span_ticks;
      auto remap = [&](int64_t ns) {
        // In doubles, clamped: anchors and snapshots come from the file (any int64 at all).
        double ticks = static_cast<double>(*anchor_ticks) + time_difference(ns, *anchor_ns) / used;
        return add_time_ns(first->first,
                           clamp_to_time_ns((ticks - static_cast<double>(first->second)) * truth));
      };
      for (size_t i = first_span_; i < trace_->spans.size(); ++i) {
        SpanRecord& s = trace_->spans[i];
        if (s.process != state.process || !(s.flags & kSpanFlagFromTicks)) continue;
        s.start_ns = remap(s.start_ns);
        s.end_ns = remap(s.end_ns);
      }
      char ppm[32];
      std::snprintf(ppm, sizeof(ppm), "%.3f", (truth / used - 1.0) * 1e6);
      p.properties.set("tsc_correction_ppm", ppm);
    }
  }

  void handle_process(const format::Chunk& chunk) {
    format::Properties props;
    std::string error;
    if (!format::Properties::decode(chunk.payload, &props, &error)) return skip(chunk, error);
    StreamState& s = stream(chunk.stream_id);
    // A second description of one stream is another writer claiming its id (a forged or copied
    // part): the first stays, so a process's identity cannot be replaced.
    if (std::exchange(s.described, true)) {
      builder_->count(Stat::kLoadDuplicateProcessChunks);
      return warn(chunk, duplicate_process_warning(chunk.stream_id, props));
    }
    problems_.clear();
    read_process_properties(std::move(props), &trace_->processes[s.process], &problems_);
    note_problems(chunk);
  }

  void handle_spans(const format::Chunk& chunk) {
    format::DecodedSpans decoded;
    std::string error;
    if (!format::decode_spans(chunk.payload, &decoded, &error)) return skip(chunk, error);
    StreamState& s = stream(chunk.stream_id);
    // Validate the attribute counts before copying anything, so a bad chunk is dropped whole.
    uint64_t attr_total = 0;
    for (uint32_t i = 0; i < decoded.span_count; ++i) {
      uint16_t count;
      std::memcpy(&count, decoded.span_bytes + i * sizeof(SpanRecord) + offsetof(SpanRecord, attr_count), 2);
      attr_total += count;
    }
    if (attr_total != decoded.attr_count) {
      return skip(chunk, "spans chunk attribute counts (" + std::to_string(attr_total) +
                             ") disagree with its attribute area (" + std::to_string(decoded.attr_count) +
                             ")");
    }
    const size_t first_span = trace_->spans.size();
    const size_t first_attr = trace_->attrs.size();
    // Records are appended straight from the chunk payload (8-byte aligned inside the frame buffer);
    // no value-initialization pass, no per-field copy.
    const auto* records = reinterpret_cast<const SpanRecord*>(decoded.span_bytes);
    trace_->spans.insert(trace_->spans.end(), records, records + decoded.span_count);
    const auto* attr_records = reinterpret_cast<const AttrRecord*>(decoded.attr_bytes);
    trace_->attrs.insert(trace_->attrs.end(), attr_records, attr_records + decoded.attr_count);
    reserve_more(trace_->attr_begin, decoded.span_count);
    trace_->attr_begin.back() = static_cast<uint32_t>(first_attr);
    uint32_t attr_pos = static_cast<uint32_t>(first_attr);
    // Remap names through a one-entry cache: consecutive spans usually share a name.
    uint32_t last_local = UINT32_MAX, last_global = 0;
    uint64_t clamped = 0;
    for (size_t i = first_span; i < trace_->spans.size(); ++i) {
      SpanRecord& span = trace_->spans[i];
      span.process = s.process;
      if (span.name != last_local) {
        last_local = span.name;
        last_global = map_string(s, span.name);
      }
      span.name = last_global;
      if (!is_known_level(span.level)) builder_->count(Stat::kLoadUnknownLevels);
      if (!is_known_activity(span.activity)) builder_->count(Stat::kLoadUnknownActivities);
      if (clamp_span_times(span)) ++clamped;
      attr_pos += span.attr_count;
      trace_->attr_begin.push_back(attr_pos);
    }
    if (clamped) {
      builder_->count(Stat::kLoadClampedTimes, clamped);
      warn(chunk, std::to_string(clamped) +
                      " span(s) with times beyond +-2^62 ns (corrupt or forged); "
                      "kept, moved to that bound");
    }
    for (size_t i = first_attr; i < trace_->attrs.size(); ++i) {
      AttrRecord& a = trace_->attrs[i];
      a.key = map_string(s, a.key);
      if (a.type == static_cast<uint8_t>(AttrType::kString))
        a.value.u = map_string(s, static_cast<uint32_t>(a.value.u));
    }
    trace_->processes[s.process].span_count += decoded.span_count;
    trace_->invalidate_structure();
  }

  TraceBuilder* builder_;
  Trace* trace_;
  format::ChunkReader* reader_;
  size_t first_span_;  // spans before this index came from earlier files
  std::unordered_map<uint64_t, StreamState> streams_;
  bool stream_limit_warned_ = false;
  std::vector<format::StringEntry> entries_;
  std::vector<std::string> problems_;
  uint64_t unknown_chunks_ = 0;
  SampleChunkLoader samples_;
};

// A stored counter's value: an event count (format::Properties::get_count: an integer from 0 to 2^48,
// so a forged -5 never reads as 18446744073709551611 and sums over processes cannot wrap); anything
// else is a problem, and left out.
std::optional<uint64_t> counter_value(const format::Properties& props, const std::string& key,
                                      std::string_view text, std::vector<std::string>* problems) {
  if (std::optional<uint64_t> v = props.get_count(key)) return v;
  problems->push_back("counter " + key + " = '" + std::string(text.substr(0, 32)) +
                      "' is not an event count (an integer from 0 to 2^48); ignored");
  return std::nullopt;
}

class NativeReader final : public TraceReader {
 public:
  std::string_view name() const override { return "native"; }
  std::string_view description() const override {
    return "Strata trace (.strata, or a directory of them, as `strata record` and `strata import` write)";
  }
  int probe(const ProbeInput& input) const override {
    if (input.is_directory) return 100;
    return format::has_strata_magic(input.head) ? 100 : 0;
  }
  uint64_t memory_estimate(const ProbeInput& input) const override {
    // The span and attribute records load as they are stored (64 + 16 bytes); the tracks table and
    // the span tree add about 30 bytes a span (about 0.45 of a 64-byte span), strings little.
    uint64_t bytes = input.size;
    if (input.is_directory) {
      std::error_code ec;
      for (const auto& entry : std::filesystem::directory_iterator(input.path, ec))
        if (entry.is_regular_file(ec) && entry.path().extension() == ".strata") bytes += entry.file_size(ec);
    }
    return bytes + bytes / 2;
  }
  bool read(const ProbeInput& input, std::string_view format, TraceBuilder& builder,
            std::string* error) const override {
    (void)format;
    return load_native(input.path, builder, error);
  }
};

}  // namespace

std::unique_ptr<TraceReader> make_native_reader() { return std::make_unique<NativeReader>(); }

std::string damage_of(const format::ChunkReader& reader, const std::string& file) {
  if (reader.truncated())
    return file + ": cut at offset " + std::to_string(reader.truncated_offset()) + " inside a chunk (" +
           std::to_string(reader.truncated_bytes()) + " bytes lost)";
  if (reader.corrupt_chunks() > 0 || reader.skipped_bytes() > 0)
    return file + ": " + std::to_string(reader.corrupt_chunks()) + " corrupt chunk(s), " +
           std::to_string(reader.skipped_bytes()) + " bytes skipped";
  return "";
}

std::string nothing_recovered_error(const std::string& damage) {
  return damage + "; no span could be recovered (writers flush every 100 ms: a process killed earlier, or a "
                  "file cut inside its first chunk, leaves none). Record again";
}

void read_process_properties(format::Properties props, Process* p, std::vector<std::string>* problems) {
  namespace k = format::keys;
  p->pid = props.get_int(k::kPid).value_or(0);
  p->ppid = props.get_int(k::kPpid).value_or(0);
  p->host = std::string(props.get(k::kHost).value_or(""));
  std::string argv(props.get(k::kArgv).value_or(""));
  std::replace(argv.begin(), argv.end(), '\0', ' ');
  p->command_line = argv;
  p->trace_id = std::string(props.get(k::kTraceId).value_or(""));
  p->parent_span_id = std::string(props.get(k::kParentSpanId).value_or(""));
  p->start_realtime_ns = props.get_int(k::kStartRealtimeNs).value_or(0);
  p->start_monotonic_ns = props.get_int(k::kStartMonotonicNs).value_or(0);
  if (auto level = props.get_int(k::kLevel); level && *level > 0 && *level < 256)
    p->level_gate = static_cast<uint8_t>(*level);
  // Counters stored as properties (an importer's import.* counts) go to the process's stats.
  format::Properties kept;
  for (const auto& [key, value] : props.entries()) {
    std::optional<stats::Stat> stat = stats::find(key);
    if (!stat || stats::info(*stat).disk != stats::Disk::kProcess) {
      kept.set(key, value);
    } else if (std::optional<uint64_t> v = counter_value(props, key, value, problems)) {
      p->stats.set(*stat, *v);
    }
  }
  p->properties = std::move(kept);
}

std::vector<std::pair<stats::Stat, uint64_t>> record_stats(const format::Properties& props,
                                                           std::vector<std::string>* problems) {
  std::vector<std::pair<stats::Stat, uint64_t>> out;
  for (const auto& [key, value] : props.entries()) {
    std::optional<stats::Stat> stat = stats::find(key);
    if (!stat || stats::info(*stat).disk != stats::Disk::kRecord) continue;
    if (std::optional<uint64_t> v = counter_value(props, key, value, problems)) out.emplace_back(*stat, *v);
  }
  return out;
}

std::string duplicate_process_warning(uint64_t stream_id, const format::Properties& props) {
  return "a second Process chunk for stream " + std::to_string(stream_id) + " (pid " +
         std::string(props.get(format::keys::kPid).value_or("?")).substr(0, 24) +
         "); ignored, the first one stands";
}

void read_stats_properties(const format::Properties& props, Process* p, bool thread_names,
                           std::vector<std::string>* problems) {
  for (const auto& [key, value] : props.entries()) {
    if (key.rfind(format::keys::kDroppedPrefix, 0) == 0) {
      // Cumulative counters: the last Stats chunk of a stream wins. Causes this version does not
      // know (a newer collector) are kept under their key.
      std::optional<uint64_t> v = counter_value(props, key, value, problems);
      if (!v) continue;
      if (std::optional<stats::Stat> stat = stats::find(key))
        p->stats.set(*stat, *v);
      else
        p->stats.set_unregistered(key, *v);
    } else if (std::optional<stats::Stat> stat = stats::find(key);
               stat && stats::info(*stat).source == stats::Source::kCollector) {
      // A collector's own accounting (sample.collector_cpu_ns): a counter, not a drop; last chunk wins.
      if (std::optional<uint64_t> v = counter_value(props, key, value, problems)) p->stats.set(*stat, *v);
    } else if (key.rfind("thread_name.", 0) == 0) {
      if (thread_names)
        p->thread_names[static_cast<uint32_t>(std::strtoul(key.c_str() + 12, nullptr, 10))] = value;
    } else {
      p->properties.set("stats." + key, value);
    }
  }
}

bool load_chunks(format::ChunkReader& reader, TraceBuilder& builder, std::string* error) {
  Loader loader(&builder, &reader);
  return loader.run(error);
}

bool load_chunks(format::ChunkReader& reader, Trace* trace, std::string* error) {
  TraceBuilder builder(trace);
  return load_chunks(reader, builder, error);
}

NativeInputs::~NativeInputs() {
  if (dir_fd_ >= 0) ::close(dir_fd_);
}

bool NativeInputs::list(const std::string& path, std::string* error) {
  path_ = path;
  std::error_code ec;
  if (!std::filesystem::is_directory(path, ec)) {
    names_.push_back(path);
    return true;
  }
  dir_fd_ = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd_ < 0) {
    *error = path + ": cannot open the directory: " + std::strerror(errno);
    return false;
  }
  format::PartFiles listed = format::list_part_files(dir_fd_, path);
  names_ = std::move(listed.names);
  skipped_ = std::move(listed.skipped);
  if (names_.empty()) {
    *error = path + ": directory holds no .strata files of this user" +
             (skipped_.empty() ? ""
                               : " (" + std::to_string(skipped_.size()) +
                                     " other entries not read: " + skipped_[0] + ")") +
             "; record one with `strata record -o " + path + " -- CMD`";
    return false;
  }
  return true;
}

std::string NativeInputs::shown(size_t i) const { return dir_fd_ < 0 ? names_[i] : path_ + "/" + names_[i]; }

bool NativeInputs::open(size_t i, format::ChunkReader* reader, std::string* skipped,
                        std::string* error) const {
  if (dir_fd_ < 0) {
    if (reader->open(names_[i])) return true;
    *error = reader->error();
    return false;
  }
  const int fd = ::openat(dir_fd_, names_[i].c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  struct stat st {};
  if (fd < 0 || ::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != ::geteuid()) {
    if (fd >= 0) ::close(fd);
    *skipped = shown(i) + ": no longer a regular file of this user; not read";
    return false;
  }
  if (reader->open_fd(fd, shown(i))) return true;
  *error = reader->error();
  return false;
}

bool load_native(const std::string& path, TraceBuilder& builder, std::string* error) {
  NativeInputs inputs;
  if (!inputs.list(path, error)) return false;
  for (const std::string& line : inputs.skipped()) builder.warn(line);
  builder.count(stats::Stat::kLoadDirectoryEntriesSkipped, inputs.skipped().size());
  const std::vector<SpanRecord>& spans = builder.trace().spans;
  const size_t spans_before = spans.size();
  std::string damaged;  // the first damaged file that gave no spans, and why
  for (size_t i = 0; i < inputs.size(); ++i) {
    format::ChunkReader reader;
    std::string skipped;
    if (!inputs.open(i, &reader, &skipped, error)) {
      if (skipped.empty()) return false;
      builder.warn(skipped);
      builder.count(stats::Stat::kLoadDirectoryEntriesSkipped);
      continue;
    }
    const size_t file_spans_before = spans.size();
    if (!load_chunks(reader, builder, error)) return false;
    if (spans.size() == file_spans_before && damaged.empty()) damaged = damage_of(reader, inputs.shown(i));
  }
  // A damaged trace that gave nothing back is an error, not an empty result.
  if (spans.size() == spans_before && !damaged.empty()) {
    *error = nothing_recovered_error(damaged);
    return false;
  }
  return true;
}

bool load_trace(const std::string& path, Trace* trace, std::string* error, const LoadOptions& options) {
  TraceBuilder builder(trace);
  if (!load_native(path, builder, error)) return false;
  if (options.sort_by_start) builder.finish({.structure = false, .tree = {}});
  return true;
}

}  // namespace strata::trace
