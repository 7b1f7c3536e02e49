// From a chosen pattern to the loop's aligned cycle and its matches over the sequence to split
// (loop_fit.cc); used by the miner (pattern_miner.cc). Not a public interface.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "analysis/iterations/loop_structure.h"
#include "analysis/iterations/miner_internal.h"

namespace strata::analysis::iterations::detail {

struct LoopFit {
  Loop loop;                              // cycle in elements of the target
  std::vector<ApproximateMatch> matches;  // in target positions
  int64_t k0 = 0;                         // the extra ops allowed per iteration
};

// The clean cycle to start from: an occurrence of pattern P followed by a full cycle (two occurrences
// one cycle apart). `given`: the detection's reading (begin, length); else read from P's occurrences.
struct CleanCycle {
  int64_t begin = -1;
  int64_t length = 0;
};

// From a chosen pattern P (a suffix-array interval of `sub`) to the aligned cycle and its matches
// over `target` (`sub` itself, or the whole sequence `sub` samples, folded alike: a boundary
// candidate's iteration count is only meaningful over the whole, since every window edge cuts an
// iteration somewhere). `anchored`: the step marks that picked the cycle, which then place the
// boundary. Empty when P occurs fewer than twice, its cycle holds more than `max_cycle_ops` ops or
// the target does not hold P.
std::optional<LoopFit> fit_loop(const Subsequence& sub, const SuffixIndex& index, const RepeatCandidate& p,
                                CleanCycle given, std::span<const int64_t> gap_before_ns,
                                const MinerOptions& options, const Subsequence& target, int64_t max_cycle_ops,
                                const StepAnchors* anchored = nullptr);

}  // namespace strata::analysis::iterations::detail
