#include "sample/sample_store.h"

#include <algorithm>

#include "format/sample_payloads.h"

namespace strata::sample {

namespace {
constexpr size_t kCountsPerChunk = 10000;  // 240 KB: within the trace's chunk bound
constexpr size_t kPointsPerTimelineChunk = 50000;
constexpr size_t kDefinitionsPerChunk = 8000;
}  // namespace

SampleStore::SampleStore(StoreOptions options) : options_(options) {}

void SampleStore::add_batch(SampleBatch&& batch) {
  for (auto& m : batch.mappings) new_mappings_.push_back(std::move(m));
  for (auto& f : batch.frames) new_frames_.push_back(std::move(f));
  for (auto& s : batch.stacks) new_stacks_.push_back(std::move(s));
  for (auto& t : batch.thread_names) thread_names_.push_back(std::move(t)), config_dirty_ = true;
  if (epoch_start_ns_ == 0 && !batch.samples.empty()) epoch_start_ns_ = batch.samples.front().time_ns;
  pending_.insert(pending_.end(), batch.samples.begin(), batch.samples.end());
}

void SampleStore::add_spans(std::span<const SpanInterval> closed, std::span<const SpanInterval> open,
                            int64_t complete_before_ns) {
  for (auto& [tid, t] : spans_) t.open.clear();
  for (const SpanInterval& s : closed) spans_[s.tid].closed.push_back(s);
  for (const SpanInterval& s : open) spans_[s.tid].open.push_back(s);
  complete_before_ = std::max(complete_before_, complete_before_ns);
  // Keep the closed spans sorted by start (newly closed ones merged in), and forget those long over.
  // At the end (everything read: INT64_MAX) nothing is forgotten: samples still in the rings, read
  // after the last spans (the in-thread mode reads rings at a watermark), fall in the last spans.
  const int64_t forget_before =
      complete_before_ == INT64_MAX ? INT64_MIN : complete_before_ - options_.span_retention_ns;
  for (auto it = spans_.begin(); it != spans_.end();) {
    ThreadSpans& t = it->second;
    auto by_start = [](const SpanInterval& a, const SpanInterval& b) { return a.start_ns < b.start_ns; };
    if (t.sorted < t.closed.size()) {
      std::sort(t.closed.begin() + static_cast<ptrdiff_t>(t.sorted), t.closed.end(), by_start);
      std::inplace_merge(t.closed.begin(), t.closed.begin() + static_cast<ptrdiff_t>(t.sorted),
                         t.closed.end(), by_start);
    }
    std::erase_if(t.closed, [&](const SpanInterval& s) { return s.end_ns < forget_before; });
    t.sorted = t.closed.size();
    if (t.closed.empty() && t.open.empty())
      it = spans_.erase(it);
    else
      ++it;
  }
}

uint64_t SampleStore::span_at(uint32_t tid, int64_t time_ns) {
  auto it = spans_.find(tid);
  if (it == spans_.end()) return 0;
  const ThreadSpans& t = it->second;
  // The innermost span holding the instant: the latest start at or before it, among spans still
  // open at it. Open spans (outermost first) and closed ones compete on their start.
  uint64_t best = 0;
  int64_t best_start = INT64_MIN;
  for (const SpanInterval& s : t.open)
    if (s.start_ns <= time_ns && s.start_ns >= best_start) best = s.span_id, best_start = s.start_ns;
  auto upper = std::upper_bound(t.closed.begin(), t.closed.begin() + static_cast<ptrdiff_t>(t.sorted),
                                time_ns, [](int64_t v, const SpanInterval& s) { return v < s.start_ns; });
  for (int scanned = 0; upper != t.closed.begin() && scanned < 100000; ++scanned) {
    --upper;
    if (upper->start_ns < best_start) break;  // an open span starting later already holds it
    if (upper->end_ns > time_ns) {
      if (upper->start_ns >= best_start) best = upper->span_id;  // same start: the closed one is inner
      break;
    }
  }
  return best;
}

void SampleStore::count(const SampleRecord& s, uint64_t span) {
  auto it = tables_.find(s.tid);
  if (it == tables_.end()) it = tables_.emplace(s.tid, CountTable(options_.table_sets)).first;
  format::SampleCount evicted;
  if (it->second.add(s.stack, span, s.event, s.weight, &evicted)) {
    ++evictions_;
    evicted.tid = s.tid;
    if (overflow_.size() < options_.overflow_capacity)
      overflow_.push_back(evicted);
    else
      lost_eviction_overflow_ += evicted.count;  // both the table and the overflow are full
  }
  samples_counted_ += s.weight;
  last_sample_ns_ = std::max(last_sample_ns_, s.time_ns);
  if (options_.timeline) timeline_[s.tid].push_back({s.time_ns, s.stack, s.event, s.weight, span});
}

void SampleStore::aggregate(bool final) {
  if (!options_.attribute) {
    for (const SampleRecord& s : pending_) count(s, 0);
    pending_.clear();
    return;
  }
  size_t kept = 0;
  for (const SampleRecord& s : pending_) {
    if (!final && s.time_ns >= complete_before_) {
      pending_[kept++] = s;  // its thread's events up to then are not all read yet
      continue;
    }
    count(s, span_at(s.tid, s.time_ns));
  }
  pending_.resize(kept);
}

bool SampleStore::write_definitions(format::StreamWriter& stream) {
  if (config_dirty_) {
    format::Properties p = config_;
    for (const auto& [tid, name] : thread_names_) p.set("thread." + std::to_string(tid), name);
    stream.write_payload(format::ChunkType::kSampleConfig, p.encode());
    config_dirty_ = false;
  }
  std::string payload;
  for (size_t at = 0; at < new_mappings_.size(); at += kDefinitionsPerChunk) {
    std::vector<format::SampleMapping> chunk;
    for (size_t i = at; i < std::min(new_mappings_.size(), at + kDefinitionsPerChunk); ++i) {
      chunk.push_back(new_mappings_[i].mapping);
      chunk.back().path = stream.intern(new_mappings_[i].path_text);
    }
    payload.clear();
    format::encode_sample_mappings(chunk, &payload);
    stream.write_payload(format::ChunkType::kSampleMappings, payload);
  }
  new_mappings_.clear();
  for (size_t at = 0; at < new_frames_.size(); at += kDefinitionsPerChunk) {
    std::vector<format::SampleFrame> chunk;
    for (size_t i = at; i < std::min(new_frames_.size(), at + kDefinitionsPerChunk); ++i) {
      chunk.push_back(new_frames_[i].frame);
      if (chunk.back().kind == format::SampleFrameKind::kPython) {
        chunk.back().function = stream.intern(new_frames_[i].function);
        chunk.back().file = stream.intern(new_frames_[i].file);
      } else if (!new_frames_[i].function.empty()) {  // generated code named by its perf map
        chunk.back().function = stream.intern(new_frames_[i].function);
      }
    }
    payload.clear();
    format::encode_sample_frames(chunk, &payload);
    stream.write_payload(format::ChunkType::kSampleFrames, payload);
  }
  new_frames_.clear();
  for (size_t at = 0; at < new_stacks_.size(); at += kDefinitionsPerChunk / 8) {
    std::vector<format::SampleStack> chunk(
        new_stacks_.begin() + static_cast<ptrdiff_t>(at),
        new_stacks_.begin() +
            static_cast<ptrdiff_t>(std::min(new_stacks_.size(), at + kDefinitionsPerChunk / 8)));
    payload.clear();
    format::encode_sample_stacks(chunk, &payload);
    stream.write_payload(format::ChunkType::kSampleStacks, payload);
  }
  new_stacks_.clear();
  return !stream.failed();
}

namespace {
void write_counts(format::StreamWriter& stream, const format::SampleCountsHeader& h,
                  const std::vector<format::SampleCount>& counts) {
  std::string payload;
  for (size_t at = 0; at < counts.size(); at += kCountsPerChunk) {
    std::vector<format::SampleCount> part(
        counts.begin() + static_cast<ptrdiff_t>(at),
        counts.begin() + static_cast<ptrdiff_t>(std::min(counts.size(), at + kCountsPerChunk)));
    payload.clear();
    format::encode_sample_counts(h, part, &payload);
    stream.write_payload(format::ChunkType::kSampleCounts, payload);
  }
}
}  // namespace

bool SampleStore::write_epoch(format::StreamWriter& stream, int64_t end_ns) {
  std::vector<format::SampleCount> counts = std::move(overflow_);
  overflow_.clear();
  for (auto& [tid, table] : tables_) table.drain(tid, &counts);
  write_counts(stream, {epoch_, epoch_start_ns_, end_ns}, counts);
  std::string payload;
  for (auto& [tid, points] : timeline_) {
    std::stable_sort(
        points.begin(), points.end(),
        [](const format::SamplePoint& a, const format::SamplePoint& b) { return a.time_ns < b.time_ns; });
    for (size_t at = 0; at < points.size(); at += kPointsPerTimelineChunk) {
      std::vector<format::SamplePoint> part(
          points.begin() + static_cast<ptrdiff_t>(at),
          points.begin() + static_cast<ptrdiff_t>(std::min(points.size(), at + kPointsPerTimelineChunk)));
      payload.clear();
      format::encode_sample_timeline(tid, part, &payload);
      stream.write_payload(format::ChunkType::kSampleTimeline, payload);
    }
  }
  timeline_.clear();
  // Tables of threads that had nothing this epoch are dropped (threads come and go).
  std::erase_if(tables_, [](const auto& entry) { return entry.second.used() == 0; });
  ++epoch_;
  epoch_start_ns_ = end_ns;
  return !stream.failed();
}

bool SampleStore::write(format::StreamWriter& stream, int64_t now_ns, bool final) {
  if (!write_definitions(stream)) return false;
  const bool have_counts = samples_counted_ > 0 || !overflow_.empty();
  if (epoch_start_ns_ == 0) epoch_start_ns_ = now_ns;
  if (final || now_ns - epoch_start_ns_ >= options_.epoch_ns) {
    if (have_counts || final) return write_epoch(stream, std::max(now_ns, last_sample_ns_));
  } else if (overflow_.size() * 2 >= options_.overflow_capacity) {
    // Half the overflow used: write it now (the same epoch's counts may come in several chunks).
    write_counts(stream, {epoch_, epoch_start_ns_, now_ns}, overflow_);
    overflow_.clear();
  }
  return !stream.failed();
}

}  // namespace strata::sample
