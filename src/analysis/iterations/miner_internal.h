// Pieces shared by the miner's files (pattern_miner.cc, loop_structure.cc, miner_basics.cc): the
// suffix index and its LCP-interval traversal, the subsequences the miner works on (samples, leftover
// stretches, folded levels), and Algorithm 1. Not a public interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <vector>

#include "analysis/iterations/pattern_miner.h"

namespace strata::analysis::iterations::detail {

constexpr int32_t kNoBarrier = std::numeric_limits<int32_t>::max();
// Fold levels (nested repetition folded into one element per run, loop_structure.h): level l's
// element id is the op alphabet + l; separators start above them.
constexpr int32_t kMaxFoldLevels = 8;

struct SuffixIndex {
  std::vector<int32_t> sa;
  std::vector<int32_t> lcp;
};

SuffixIndex build_index(std::span<const int32_t> seq, int32_t alphabet_size);

// Bottom-up traversal of the LCP intervals (the suffix tree's internal nodes, root excluded):
// visit(lcp, lb, rb, parent_lcp). Substrings of every length in (parent_lcp, lcp] that start at
// sa[lb] occur exactly rb - lb + 1 times.
template <typename Visit>
void for_each_lcp_interval(const std::vector<int32_t>& lcp, Visit&& visit) {
  struct Open {
    int32_t lcp;
    int32_t lb;
  };
  std::vector<Open> stack;
  stack.push_back({0, 0});
  const int32_t n = static_cast<int32_t>(lcp.size());
  for (int32_t i = 1; i <= n; ++i) {
    const int32_t cur = i < n ? lcp[i] : 0;
    int32_t lb = i - 1;
    while (cur < stack.back().lcp) {
      Open top = stack.back();
      stack.pop_back();
      lb = top.lb;
      visit(top.lcp, top.lb, i - 1, std::max(cur, stack.back().lcp));
    }
    if (cur > stack.back().lcp) stack.push_back({cur, lb});
  }
}

// A sequence to mine: the whole sequence (a view, no copy), the leftover stretches joined by unique
// separator symbols (so no repeat crosses two stretches), a sample of windows of either, or one of
// these with nested repetition folded (one element per run of a unit). Element j covers the ops
// [at(j), at_last(j)] of the op sequence (one op unless folded); separators cover none (-1).
struct Subsequence {
  std::span<const int32_t> symbols;  // the caller's sequence, or `storage`
  std::vector<int32_t> storage;
  std::vector<int32_t> to_seq;   // first op of element j, -1 for separators; empty = identity
  std::vector<int32_t> to_last;  // last op of element j; empty = to_seq
  std::vector<int32_t> noise;    // ops of element j that a folded run absorbed as extra ops; empty = 0
  int32_t alphabet = 0;
  int32_t barrier = kNoBarrier;    // symbols >= barrier are separators
  int32_t fold_from = kNoBarrier;  // symbols in [fold_from, barrier) are folded runs

  Subsequence() = default;
  Subsequence(const Subsequence&) = delete;  // `symbols` may point into `storage`
  Subsequence& operator=(const Subsequence&) = delete;
  int64_t size() const { return static_cast<int64_t>(symbols.size()); }
  int64_t at(int64_t j) const { return to_seq.empty() ? j : to_seq[j]; }
  int64_t at_last(int64_t j) const { return to_last.empty() ? at(j) : to_last[j]; }
  int64_t weight(int64_t j) const { return symbols[j] >= barrier ? 0 : at_last(j) - at(j) + 1; }
  // The ops of element j that belong to the repetition it stands for (its absorbed noise excluded).
  int64_t clean_weight(int64_t j) const { return weight(j) - (noise.empty() ? 0 : noise[j]); }
  bool folded() const { return !to_last.empty(); }
  // Ops covered by elements [b, e] (inclusive), separators excluded.
  int64_t ops_in(int64_t b, int64_t e) const;
  // The element covering op `op` of the sequence (the last element starting at or before it).
  int64_t element_of(int64_t op) const;
};

// The idle time before element j of `in` (before its first op; 0 for separators, or when the trace
// gives no times).
inline int64_t gap_in(const Subsequence& in, std::span<const int64_t> gap_before_ns, int64_t j) {
  if (gap_before_ns.empty()) return 0;
  const int64_t at = in.at(j);
  return at >= 0 ? gap_before_ns[at] : 0;
}

std::vector<int64_t> nonoverlapping_starts(const SuffixIndex& index, const RepeatCandidate& p);

// The cycle length of a loop read from a pattern's non-overlapping occurrences (sorted): extra ops
// only ever lengthen the distance between consecutive occurrences (Criterion 1), so it is the
// shortest distance that is common (at least a fifth as frequent as the most frequent one), not
// simply the most frequent (with an evaluation pass after every second iteration, cycle and cycle +
// eval are equally frequent). 0 with fewer than two occurrences.
int64_t cycle_of(const std::vector<int64_t>& starts);

// The shortest p dividing the cycle's length such that the cycle is its first p symbols repeated.
int64_t primitive_root(std::span<const int32_t> cycle);

// Non-overlapping copies of `unit` in `cycle` read cyclically (the next cycle repeats it, so a copy
// cut by the cycle's start still counts).
int64_t cyclic_copies(std::span<const int32_t> cycle, std::span<const int32_t> unit);

std::optional<RepeatCandidate> select_for_count(const SuffixIndex& index, int64_t n, int64_t iterations,
                                                int64_t epsilon, int64_t* epsilon_used);

// One attempt of Algorithm 1 at position i (seq[i] == cycle[0]). Extra ops are counted in ops: with
// `weighted` (a folded sequence, whose elements stand for several ops) an extra element counts the ops
// it covers, so that a copy of a nested unit left unfolded (an op was inserted into it) weighs what
// it holds, not one.
bool match_at(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i, int64_t max_extra_ops,
              int32_t barrier, ApproximateMatch* out, const Subsequence* weighted = nullptr);

// Algorithm 1's walk from i, with what it matched. On a folded sequence a cycle element standing for a
// folded run also takes the same element right after it, across one inserted op (counted extra):
// an op inserted between two copies of a nested unit splits their run in two.
struct Walk {
  int64_t last = 0;
  int64_t extra = 0;    // extra ops
  int64_t matched = 0;  // ops of the matched elements, noise they absorbed excluded
  int64_t noise = 0;    // noise the matched elements absorbed
};
// `seq` may be cut short to replay a match up to its last element.
bool walk(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i, int64_t max_extra_ops,
          int32_t barrier, const Subsequence* weighted, Walk* out);

// match_at's hot path, one op per element (inlined into the matching loop: matching the whole
// sequence once per boundary candidate is most of the mining time on long traces).
inline bool match_plain(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i,
                        int64_t max_extra_ops, int32_t barrier, ApproximateMatch* out) {
  const int64_t n = static_cast<int64_t>(seq.size());
  const int64_t m = static_cast<int64_t>(cycle.size());
  int64_t pos = i + 1;
  int64_t extra = 0;
  for (int64_t j = 1; j < m; ++j) {
    while (pos < n && seq[pos] != cycle[j]) {
      if (seq[pos] >= barrier || ++extra > max_extra_ops) return false;
      ++pos;
    }
    if (pos >= n) return false;
    ++pos;
  }
  *out = {i, pos - 1, extra};
  return true;
}

// Algorithm 1 over `seq`. `gap_at(j)`: the idle time before element j (0 everywhere when unknown).
template <typename GapAt>
std::vector<ApproximateMatch> match_cycle(std::span<const int32_t> seq, std::span<const int32_t> cycle,
                                          int64_t max_extra_ops, int32_t barrier, const GapAt& gap_at,
                                          const Subsequence* weighted = nullptr, bool later_start = true) {
  std::vector<ApproximateMatch> matches;
  const int64_t n = static_cast<int64_t>(seq.size());
  if (cycle.empty()) return matches;
  int64_t i = 0;
  while (i < n) {
    ApproximateMatch best;
    if (seq[i] != cycle[0] ||
        !(weighted == nullptr ? match_plain(seq, cycle, i, max_extra_ops, barrier, &best)
                              : match_at(seq, cycle, i, max_extra_ops, barrier, &best, weighted))) {
      ++i;
      continue;
    }
    // A match with extra ops may have swallowed the tail of something else (an evaluation pass that
    // starts like the cycle): a later start inside it that needs fewer extras is the better match,
    // unless less idle time precedes it. An op inserted right after the iteration's first op and
    // equal to it also makes a later start with fewer extras, but the idle gap between iterations
    // lies before the true start (and before the evaluation pass's successor, not before the pass).
    for (int64_t j = i + 1;
         later_start && best.extra_ops > 0 && j <= best.first + best.extra_ops && j <= best.last && j < n;
         ++j) {
      ApproximateMatch later;
      if (seq[j] == cycle[0] && match_at(seq, cycle, j, max_extra_ops, barrier, &later, weighted) &&
          later.extra_ops < best.extra_ops && gap_at(j) >= gap_at(best.first))
        best = later;
    }
    matches.push_back(best);
    i = best.last + 1;
  }
  return matches;
}

// Matches of `cycle` over `in` with the gaps before its elements. `later_start` false: plain greedy
// Algorithm 1, without the later-start correction (which costs up to k0 attempts per match with
// extras): enough to measure how much of a sequence a cycle explains.
std::vector<ApproximateMatch> match_over(const Subsequence& in, std::span<const int32_t> cycle, int64_t k0,
                                         std::span<const int64_t> gap_before_ns, bool later_start = true);

// Ops inside the matches (extras included), and the ops of `in` the cycle itself matched (extras,
// and noise that folded elements absorbed, excluded).
int64_t ops_inside(const Subsequence& in, const std::vector<ApproximateMatch>& matches);
int64_t ops_matched(const Subsequence& in, std::span<const int32_t> cycle,
                    const std::vector<ApproximateMatch>& matches);

}  // namespace strata::analysis::iterations::detail
