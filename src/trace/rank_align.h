// Ranks of a multi-rank job and the alignment of their clocks. Each rank writes its trace on its
// own host's clock: ranks differ by an offset (seconds) and a drift (tens of ppm). The ends of the
// kernels of one collective call happen at the same instant on every rank (a collective finishes
// when the last rank's data arrived), so matching the k-th collective of a name on a rank with the
// k-th on the reference rank gives pairs (t_rank, t_ref) on which a line t_ref = t + c + e (t - x0)
// is fitted robustly (Theil-Sen, then least squares on the points within 4 robust sigmas). The
// stated uncertainty is a 99% confidence band of that line over the matched window, plus half the
// timestamp resolution; with too few matches for a slope, the offset alone is fitted and the bound
// includes what an unmeasured drift of kAssumedMaxDriftPpm could add.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace strata::trace {

// A process's rank: its "rank" property (or, in a Kineto trace imported before ranks were stated,
// the rank in its "import.meta.distributedInfo"), or -1.
int64_t process_rank(const Process& process);

struct RankClock {
  int64_t rank = -1;
  std::string host;
  std::string method;            // reference, same_host, fit, offset_only, unreliable, none
  double offset_ns = 0;          // correction added at the rank's first matched collective end
  double drift_ppm = 0;          // the rank's clock runs this much fast (+) relative to the reference
  int64_t uncertainty_ns = -1;   // bound on the remaining error of the corrected times; -1: unknown
  uint32_t matched = 0;          // collective ends matched with the reference rank
  uint32_t rejected = 0;         // of those, rejected as outliers
  int64_t residual_p90_ns = -1;  // 90th percentile of |end - reference end| after correction
};

struct AlignOptions {
  int64_t reference_rank = 0;          // the rank whose clock is kept (the lowest rank when it is absent)
  bool same_host_shares_clock = true;  // ranks on the reference's host are left as they are
  bool apply = true;                   // move the spans (false: estimate only)
  // A fit whose matched ends scatter more than this about the line is not trusted (method
  // "unreliable", times kept): collective ends are simultaneous to microseconds.
  double max_sigma_ns = 1e6;
};

inline constexpr double kAssumedMaxDriftPpm = 50;

// Estimates each rank's clock against the reference rank from its collective kernels
// (ActivityType::kCollective), moves every span of the rank's processes onto the reference clock
// (when options.apply), and writes the result into each process's properties ("clock.method",
// "clock.offset_ns", "clock.drift_ppm", "clock.uncertainty_ns", "clock.matched", "clock.rejected",
// "clock.residual_p90_ns", "clock.reference_rank"). The span order changes: call before the trace is
// sorted and structured (or sort_spans and invalidate_structure afterwards). One entry per rank,
// by rank; empty when no process has a rank.
std::vector<RankClock> align_rank_clocks(Trace* trace, const AlignOptions& options = {});

// Ranks on different hosts (or containers) may have the same process id; exports and tools key
// processes by pid. Every process whose pid an earlier process of another rank already has gets
// pid + (rank + 1) * 2^22 (above Linux's largest pid), and keeps its own in "pid.recorded".
// Returns how many were renumbered.
size_t make_pids_unique_across_ranks(Trace* trace);

}  // namespace strata::trace
