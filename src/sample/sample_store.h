// The writer's side of sampling: attributes each sample to the span open on its thread at its
// instant, aggregates (thread, stack, span, event) counts in per-thread DCPI tables, keeps the
// per-thread timeline, and writes the sample chunks (definitions before the counts that use them;
// counts and timeline once per epoch). Runs on the session's writer thread in-process, or on the
// `strata attach` loop.
//
// Attribution is a join by thread and time against the spans the writer itself pairs: a sample at
// time t on thread T goes to the innermost span of T that was open at t (latest start <= t < end).
// Samples newer than what the writer has read from every thread wait for the next drain, so a span
// that began just before a sample is always known when the sample is attributed.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <unordered_map>
#include <vector>

#include "format/properties.h"
#include "format/stream_writer.h"
#include "sample/count_table.h"
#include "sample/sample_types.h"

namespace strata::sample {

struct SpanInterval {
  uint32_t tid = 0;
  int64_t start_ns = 0;  // on the samples' clock (CLOCK_MONOTONIC)
  int64_t end_ns = 0;    // INT64_MAX while open
  uint64_t span_id = 0;
};

struct StoreOptions {
  int64_t epoch_ns = 1'000'000'000;
  bool timeline = true;     // per-sample times (the Chrome export draws them)
  bool attribute = true;    // join with spans (false: every sample has span 0, aggregated at once)
  uint32_t table_sets = 256;        // per-thread table: sets x 4 ways
  size_t overflow_capacity = 65536;  // evicted entries held until the next write
  int64_t span_retention_ns = 2'000'000'000;  // closed spans kept for samples that arrive late
};

class SampleStore {
 public:
  explicit SampleStore(StoreOptions options = {});

  void set_config(format::Properties config) { config_ = std::move(config); config_dirty_ = true; }
  void add_batch(SampleBatch&& batch);
  // The spans the writer closed since the last call and those open now; everything with a time
  // before `complete_before_ns` has been read from every thread.
  void add_spans(std::span<const SpanInterval> closed, std::span<const SpanInterval> open, int64_t complete_before_ns);
  // Attributes and counts the samples that can be (all of them when `final`).
  void aggregate(bool final);
  // Definitions now; counts and timeline when the epoch ended at `now_ns` (or `final`).
  bool write(format::StreamWriter& stream, int64_t now_ns, bool final);

  uint64_t lost_eviction_overflow() const { return lost_eviction_overflow_; }
  uint64_t samples_counted() const { return samples_counted_; }
  uint64_t evictions() const { return evictions_; }
  uint32_t epoch() const { return epoch_; }
  // The span a sample at `time_ns` on `tid` is attributed to (tests).
  uint64_t span_at(uint32_t tid, int64_t time_ns);

 private:
  struct ThreadSpans {
    std::vector<SpanInterval> closed;  // sorted by start up to `sorted`
    size_t sorted = 0;
    std::vector<SpanInterval> open;    // outermost first
  };
  void count(const SampleRecord& s, uint64_t span);
  bool write_definitions(format::StreamWriter& stream);
  bool write_epoch(format::StreamWriter& stream, int64_t end_ns);

  StoreOptions options_;
  format::Properties config_;
  bool config_dirty_ = false;
  std::vector<std::pair<uint32_t, std::string>> thread_names_;
  std::vector<MappingDef> new_mappings_;
  std::vector<FrameDef> new_frames_;
  std::vector<format::SampleStack> new_stacks_;
  std::vector<SampleRecord> pending_;
  std::unordered_map<uint32_t, ThreadSpans> spans_;
  int64_t complete_before_ = INT64_MIN;
  std::map<uint32_t, CountTable> tables_;
  std::vector<format::SampleCount> overflow_;
  std::map<uint32_t, std::vector<format::SamplePoint>> timeline_;
  uint32_t epoch_ = 0;
  int64_t epoch_start_ns_ = 0;
  int64_t last_sample_ns_ = 0;
  uint64_t lost_eviction_overflow_ = 0;
  uint64_t samples_counted_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace strata::sample
