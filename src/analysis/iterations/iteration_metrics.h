// Per-iteration metrics (DeepProf Table III) and their summary per loop, from the mined iterations
// and the classified tracks. Times are nanoseconds on the trace's reference clock.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "analysis/iterations/pattern_miner.h"
#include "analysis/iterations/stream_classifier.h"
#include "trace/trace.h"

namespace strata::analysis::iterations {

// One copy counted for the interval overlap: host->device copies on the main device (GPU traces),
// or top-level data copies on the main thread (CPU traces: the host-side analog of an input transfer).
struct CopyEvent {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t bytes = -1;  // -1: the trace does not say
};

struct IterationMetrics {
  int64_t index = 0;  // 0-based over all loops, in time order
  int32_t loop = 0;
  int64_t first_op = 0, last_op = 0;  // into the op sequence
  int64_t ops = 0, inner_extra_ops = 0, trailing_extra_ops = 0;
  int64_t start_ns = 0, end_ns = 0;
  int64_t time_ns = 0;
  std::optional<int64_t> interval_ns;  // idle time since the previous iteration ended (none for the first)
  int64_t copy_in_interval_ns = 0;     // union of copies inside the interval
  double overlap = 0;                  // copy_in_interval / interval
  int64_t busy_ns = 0;                 // op execution inside the iteration
  int64_t op_gap_ns = 0;               // idle time between the iteration's ops
  double avg_op_gap_ns = 0;
  // Copies feeding it: starting after the previous iteration ended (the first iteration: at most one
  // median interval of its loop before it) and before it ends.
  int64_t copies = 0;
  int64_t copy_bytes = -1;  // their bytes; -1 when a copy (or the whole trace) does not say
  bool time_outlier = false;
  bool interval_outlier = false;
  bool flagged() const { return inner_extra_ops > 0 || trailing_extra_ops > 0; }
};

struct LoopSummary {
  int32_t loop = 0;
  int64_t cycle_ops = 0;
  int64_t iterations = 0;
  int64_t flagged = 0;
  double mean_time_ns = 0, median_time_ns = 0, stddev_time_ns = 0, min_time_ns = 0, max_time_ns = 0;
  double mean_interval_ns = 0;  // over iterations that have an interval
  int64_t max_interval_ns = 0;
  int64_t max_interval_iteration = -1;
  double avg_overlap = 0;      // total copy time in intervals / total interval time
  double avg_op_gap_ns = 0;    // over all op pairs inside the loop's iterations
  double avg_copy_bytes = -1;  // per iteration whose bytes are known; -1 when none is
  int64_t time_outliers = 0, interval_outliers = 0;
  // Loop wall time split (iterations after the first): what the diagnosis ranks.
  int64_t total_ns = 0, busy_ns = 0, op_gap_ns = 0, interval_copy_ns = 0, interval_host_ns = 0;
};

struct MetricsResult {
  std::vector<uint32_t> sequence_spans;  // the op sequence mined (span indices)
  std::vector<CopyEvent> copies;
  std::vector<IterationMetrics> iterations;
  std::vector<LoopSummary> loops;
};

// The op sequence of the main track (copies excluded: they are the copy "stream"), and per op the
// idle gap before it (for choosing iteration boundaries).
void main_sequence(const trace::Trace& trace, const Classification& classes, std::vector<uint32_t>* spans,
                   std::vector<int64_t>* gap_before_ns);

std::vector<CopyEvent> input_copies(const trace::Trace& trace, const Classification& classes);

MetricsResult compute_metrics(const trace::Trace& trace, const Classification& classes,
                              std::vector<uint32_t> sequence_spans, const MiningResult& mining);

}  // namespace strata::analysis::iterations
