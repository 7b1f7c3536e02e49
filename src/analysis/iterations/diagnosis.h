// Per-loop diagnosis (DeepProf V-B): where a loop's wall time goes, ranked, with the evidence and
// what to look at next.
//
// The loop's time after its first iteration splits into four parts: ops executing (device- or
// op-bound), idle gaps between ops inside iterations (host dispatch: the host cannot issue ops fast
// enough), interval time covered by input copies and interval time without copies.
//
// The verdict follows DeepProf's reasoning (V-B), in two steps:
//  1. Is the bottleneck outside the iterations? Yes when the average interval is >> the average gap
//     between ops (`much_larger` times it) and the intervals are a material part of the loop (at
//     least `interval_share` of its time: a 10 us interval is 10x a 1 us op gap, yet nothing next
//     to a 100 ms iteration).
//  2. If so, the overlap decides: copies are negligible when the interval is >> the copy time in it
//     (overlap <= 1 / much_larger) and the loop is host-bound (CPU work in the loop, the paper's
//     graph-growth case); otherwise copy-bound (the paper's oversized-batch case, 12% overlap).
// Otherwise the part holding at least `dominant_share` of the time (device-bound for ops executing,
// host-bound for dispatch gaps, copy-bound for copies), else "balanced".
#pragma once

#include <string>
#include <vector>

#include "analysis/iterations/iteration_metrics.h"
#include "trace/trace.h"

namespace strata::analysis::iterations {

// kInputBound: the ops executing are mostly waits for the DataLoader (PyTorch's
// `enumerate(DataLoader)#...` scopes hold at least `input_share` of the loop's time).
enum class Verdict { kHostBound, kCopyBound, kDeviceBound, kBalanced, kInputBound };
// On a trace without device work, ops executing are "op-bound", not "device-bound".
std::string_view verdict_name(Verdict verdict, bool device_trace = true);

// One candidate cause. `ranked` lists the verdict first, then the other causes by share: the verdict
// is not always the largest share (12% overlap can make a loop copy-bound, see above).
struct RankedCause {
  Verdict verdict = Verdict::kBalanced;
  double share = 0;      // of the loop's wall time
  std::string evidence;  // figures behind it, one line
};

// Spans (other than the op sequence itself) overlapping the loop's intervals: candidates for the
// host work between iterations.
struct GapSpan {
  std::string name;
  std::string level;
  int64_t in_interval_ns = 0;  // clipped to the intervals
  int64_t count = 0;
  // The spans' whole durations: among equal in_interval_ns, the shortest is the most specific.
  int64_t span_ns = 0;
};

struct Diagnosis {
  int32_t loop = 0;
  bool device_trace = false;  // the ops are device work (else host ops: "op-bound")
  Verdict verdict = Verdict::kBalanced;
  std::vector<RankedCause> ranked;  // the verdict first, then the other causes by share
  std::string reason;               // which rule gave the verdict, with its figures
  std::vector<GapSpan> gap_spans;   // top spans inside the intervals
  std::string next_step;            // what to look at next
};

struct DiagnosisOptions {
  double interval_share = 0.2;  // idle time between iterations that makes the loop host/copy-bound
  double much_larger = 10;      // ">>": an order of magnitude (interval vs op gap, interval vs copies)
  double dominant_share = 0.5;
  double input_share = 0.3;  // DataLoader waits that make the loop input-bound (as strata summary's verdict)
  size_t top_gap_spans = 8;
};

Diagnosis diagnose(const trace::Trace& trace, const Classification& classes, const MetricsResult& metrics,
                   int32_t loop, const DiagnosisOptions& options = {});

}  // namespace strata::analysis::iterations
