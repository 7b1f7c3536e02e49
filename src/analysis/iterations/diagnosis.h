// Per-loop diagnosis (DeepProf V-B): where a loop's wall time goes, ranked, with the evidence and
// what to look at next.
//
// The loop's time after its first iteration splits into four parts: ops executing (device- or
// op-bound), idle gaps between ops inside iterations (host dispatch: the host cannot issue ops fast
// enough), interval time covered by input copies (copy-bound) and interval time without copies
// (host-bound: CPU work in the training loop, the paper's graph-growth case). As in DeepProf, a loop
// that idles between iterations (at least `interval_share` of its time, intervals >= 10x the gaps
// between ops) is copy-bound when copies fill most of that idle time and host-bound otherwise;
// else the verdict is the part holding at least `dominant_share` of the time, else "balanced".
#pragma once

#include <string>
#include <vector>

#include "analysis/iterations/iteration_metrics.h"
#include "model/trace.h"

namespace strata::iterations {

enum class Verdict { kHostBound, kCopyBound, kDeviceBound, kBalanced };
std::string_view verdict_name(Verdict verdict);

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
};

struct Diagnosis {
  int32_t loop = 0;
  Verdict verdict = Verdict::kBalanced;
  std::vector<RankedCause> ranked;  // highest share first
  std::vector<GapSpan> gap_spans;   // top spans inside the intervals
  std::string next_step;            // what to look at next
};

struct DiagnosisOptions {
  double interval_share = 0.2;  // idle time between iterations that makes the loop host/copy-bound
  double dominant_share = 0.5;
  size_t top_gap_spans = 8;
};

Diagnosis diagnose(const model::Trace& trace, const Classification& classes, const MetricsResult& metrics,
                   int32_t loop, const DiagnosisOptions& options = {});

}  // namespace strata::iterations
