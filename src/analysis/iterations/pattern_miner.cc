#include "analysis/iterations/pattern_miner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <unordered_map>

#include "analysis/iterations/suffix_array.h"

namespace strata::iterations {

double RepeatCandidate::share() const {
  return sequence_length > 0
             ? static_cast<double>(count) * static_cast<double>(length) / static_cast<double>(sequence_length)
             : 0.0;
}

namespace {

constexpr int32_t kNoBarrier = std::numeric_limits<int32_t>::max();

struct SuffixIndex {
  std::vector<int32_t> sa;
  std::vector<int32_t> lcp;
};

SuffixIndex build_index(std::span<const int32_t> seq, int32_t alphabet_size) {
  SuffixIndex index;
  index.sa = build_suffix_array(seq, alphabet_size);
  index.lcp = build_lcp_array(seq, index.sa);
  return index;
}

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

std::optional<RepeatCandidate> select_for_count(const SuffixIndex& index, int64_t n, int64_t iterations,
                                                int64_t epsilon, int64_t* epsilon_used) {
  if (iterations < 2 || n < 2) return std::nullopt;
  const int64_t max_length = (n + iterations - 1) / iterations - 1;  // Criterion 3: l_p < |S| / i
  if (max_length < 1) return std::nullopt;
  int64_t eps = epsilon > 0 ? epsilon : std::max<int64_t>(1, iterations / 50);
  for (;;) {
    std::optional<RepeatCandidate> best;
    for_each_lcp_interval(index.lcp, [&](int32_t node_lcp, int32_t lb, int32_t rb, int32_t parent_lcp) {
      const int64_t count = rb - lb + 1;
      if (count > iterations || count <= iterations - eps) return;  // Criterion 2
      const int64_t length = std::min<int64_t>(node_lcp, max_length);
      if (length <= parent_lcp) return;
      if (!best || length > best->length || (length == best->length && count > best->count))
        best = RepeatCandidate{count, length, index.sa[lb], lb, rb, n};
    });
    if (best) {
      if (epsilon_used != nullptr) *epsilon_used = eps;
      return best;
    }
    if (eps >= iterations) return std::nullopt;
    eps *= 2;
  }
}

struct Detection {
  std::optional<RepeatCandidate> chosen;
  std::optional<RepeatCandidate> best_share;   // the node with the largest count * length
  std::optional<RepeatCandidate> alternative;  // explains as much, but is not a coarser view of chosen
  int64_t estimated_iterations = 0;
  double explained = 0;
};

// How a candidate would cut the sequence, from its occurrences alone (no matching): iterations =
// non-overlapping occurrences; explained = the share of ops inside them. Extra ops between
// occurrences are not credited: a reading is good when the basic iteration covers most of the trace
// (Criterion 1), not when tiny patterns are merely frequent.
struct Estimate {
  int64_t iterations = 0;
  double explained = 0;
};

Estimate estimate(const SuffixIndex& index, int64_t n, const RepeatCandidate& c) {
  std::vector<int32_t> occ(index.sa.begin() + c.sa_begin, index.sa.begin() + c.sa_end + 1);
  std::sort(occ.begin(), occ.end());
  int64_t count = 0;
  int64_t last = -c.length;
  for (int32_t pos : occ)
    if (pos >= last + c.length) {
      ++count;
      last = pos;
    }
  return {count, static_cast<double>(count * c.length) / static_cast<double>(n)};
}

// The cycle length of a loop read from a pattern's non-overlapping occurrences (sorted): extra ops
// only ever lengthen the distance between consecutive occurrences (Criterion 1), so it is the
// shortest distance that is common (at least a fifth as frequent as the most frequent one), not
// simply the most frequent (with an evaluation pass after every second iteration, cycle and cycle +
// eval are equally frequent). 0 with fewer than two occurrences.
int64_t cycle_of(const std::vector<int64_t>& starts) {
  std::unordered_map<int64_t, int64_t> distance_counts;
  for (size_t k = 0; k + 1 < starts.size(); ++k) ++distance_counts[starts[k + 1] - starts[k]];
  int64_t best_count = 0;
  for (const auto& [d, c] : distance_counts) best_count = std::max(best_count, c);
  int64_t cycle_length = 0;
  for (const auto& [d, c] : distance_counts)
    if (5 * c >= best_count && (cycle_length == 0 || d < cycle_length)) cycle_length = d;
  return cycle_length;
}

std::vector<int64_t> nonoverlapping_starts(const SuffixIndex& index, const RepeatCandidate& p) {
  std::vector<int64_t> occ;
  occ.reserve(static_cast<size_t>(p.count));
  for (int32_t r = p.sa_begin; r <= p.sa_end; ++r) occ.push_back(index.sa[r]);
  std::sort(occ.begin(), occ.end());
  std::vector<int64_t> starts;
  for (int64_t pos : occ)
    if (starts.empty() || pos >= starts.back() + p.length) starts.push_back(pos);
  return starts;
}

// Detection: among the suffix-tree nodes satisfying Criterion 3 with i = c, shortlist the frequent
// ones that explain a fair share of the sequence, estimate how each cuts it, and pick the one giving
// the most iterations among those explaining nearly as much as the best.
//
// `rescore` (sampled mining): the shortlist comes from the sample, but the readings that decide (the
// best few by their share of the sample) are estimated over the whole sequence, so that the choice,
// the iteration estimate and the ambiguity do not hinge on where the windows fell.
Detection detect(std::span<const int32_t> symbols, const SuffixIndex& index, int64_t n, int64_t min_repeats,
                 double preference, const std::function<Estimate(const RepeatCandidate&)>& rescore = {}) {
  constexpr double kShortlistShare = 0.3;  // of the best count * length
  constexpr size_t kShortlist = 24;
  Detection out;
  std::vector<RepeatCandidate> kept;
  size_t prune_at = 4096;
  double best = 0;
  auto prune = [&] {
    std::erase_if(kept, [&](const RepeatCandidate& c) { return c.share() < kShortlistShare * best; });
  };
  for_each_lcp_interval(index.lcp, [&](int32_t node_lcp, int32_t lb, int32_t rb, int32_t parent_lcp) {
    const int64_t count = rb - lb + 1;
    if (count < min_repeats) return;
    const int64_t length = std::min<int64_t>(node_lcp, (n + count - 1) / count - 1);
    if (length <= parent_lcp || length < 1) return;
    RepeatCandidate c{count, length, index.sa[lb], lb, rb, n};
    const double share = c.share();
    if (share < kShortlistShare * best) return;
    if (share > best) {
      best = share;
      out.best_share = c;
    }
    kept.push_back(c);
    if (kept.size() > prune_at) {
      prune();
      prune_at = std::max<size_t>(4096, 2 * kept.size());  // amortized: never prune on every push
    }
  });
  prune();
  // Longest per count, most repeated first.
  std::sort(kept.begin(), kept.end(), [](const RepeatCandidate& a, const RepeatCandidate& b) {
    return a.count != b.count ? a.count > b.count : a.length > b.length;
  });
  kept.erase(
      std::unique(kept.begin(), kept.end(),
                  [](const RepeatCandidate& a, const RepeatCandidate& b) { return a.count == b.count; }),
      kept.end());
  if (kept.size() > kShortlist) kept.resize(kShortlist);
  if (out.best_share && std::none_of(kept.begin(), kept.end(), [&](const RepeatCandidate& c) {
        return c.count == out.best_share->count;
      }))
    kept.push_back(*out.best_share);
  std::vector<Estimate> est;
  double best_explained = 0;
  for (const RepeatCandidate& c : kept) {
    est.push_back(estimate(index, n, c));
    best_explained = std::max(best_explained, est.back().explained);
  }
  if (rescore && !kept.empty()) {
    constexpr size_t kRescored = 6;
    constexpr double kRescoreShare = 0.5;  // of the sample's best: wider than `preference`
    std::vector<size_t> order(kept.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return est[a].explained > est[b].explained; });
    std::vector<RepeatCandidate> rescored_kept;
    std::vector<Estimate> rescored_est;
    for (size_t k : order) {
      if (rescored_kept.size() >= kRescored || est[k].explained < kRescoreShare * best_explained) break;
      rescored_kept.push_back(kept[k]);
      rescored_est.push_back(rescore(kept[k]));
    }
    kept = std::move(rescored_kept);
    est = std::move(rescored_est);
    best_explained = 0;
    for (const Estimate& e : est) best_explained = std::max(best_explained, e.explained);
  }
  for (size_t k = 0; k < kept.size(); ++k) {
    if (est[k].explained < preference * best_explained || est[k].iterations < min_repeats) continue;
    if (!out.chosen || est[k].iterations > out.estimated_iterations ||
        (est[k].iterations == out.estimated_iterations && est[k].explained > out.explained)) {
      out.chosen = kept[k];
      out.estimated_iterations = est[k].iterations;
      out.explained = est[k].explained;
    }
  }
  if (!out.chosen) return out;
  // Any other reading explaining at least `preference` of the best is an alternative unless it is the
  // same loop: the same count, or a cycle holding m copies of the chosen pattern, about m times the
  // chosen cycle long (m = 1: a longer or shorter piece of the same body, whose exact occurrences
  // noise thins differently; m >= 2: m iterations at a time), up to kSameLoopRest of other ops (a
  // short evaluation pass after every m-th iteration). Counts and coverage cannot tell: noise breaks
  // the occurrences of a long pattern more often than those of a short one. A genuine alternative
  // lowers the confidence: a cycle "x y y" (y: two ops) read as "y" with an extra x every other
  // iteration (a 5-op cycle holding 2 copies of a 2-op one: a fifth is other ops), "y y y x" with y
  // one op, or an evaluation pass after every 2nd iteration longer than a tenth of the pair.
  constexpr double kSameLoopRest = 0.1;
  const int64_t c0 = out.estimated_iterations;
  const std::span<const int32_t> chosen = symbols.subspan(out.chosen->position, out.chosen->length);
  const int64_t d0 = cycle_of(nonoverlapping_starts(index, *out.chosen));
  double alt_explained = 0;
  for (size_t k = 0; k < kept.size(); ++k) {
    const int64_t c = est[k].iterations;
    if (c <= 0 || est[k].explained < preference * best_explained) continue;
    if (std::llabs(c - c0) * 10 <= c0) continue;
    const std::vector<int64_t> starts = nonoverlapping_starts(index, kept[k]);
    const int64_t d = cycle_of(starts);
    if (d0 > 0 && d > 0) {
      // Copies of the chosen pattern in one clean cycle of the other reading, taken cyclically (the
      // next cycle repeats it) so that a copy cut by the cycle's start still counts.
      const int64_t len = static_cast<int64_t>(chosen.size());
      int64_t copies = -1;
      for (size_t q = 0; q + 1 < starts.size() && copies < 0; ++q) {
        if (starts[q + 1] - starts[q] != d) continue;
        const auto begin = symbols.begin() + starts[q];
        const auto end = symbols.begin() + std::min<int64_t>(n, starts[q] + d + len - 1);
        std::vector<int64_t> at;
        for (auto it = std::search(begin, end, chosen.begin(), chosen.end()); it != end && it - begin < d;
             it = std::search(it + 1, end, chosen.begin(), chosen.end()))
          if (at.empty() || it - begin >= at.back() + len) at.push_back(it - begin);
        while (at.size() > 1 && at.back() + len > at.front() + d) at.pop_back();
        copies = static_cast<int64_t>(at.size());
      }
      if (copies >= 0 && static_cast<double>(std::llabs(d - std::max<int64_t>(1, copies) * d0)) <=
                             kSameLoopRest * static_cast<double>(d))
        continue;
    }
    if (!out.alternative || est[k].explained > alt_explained) {
      out.alternative = kept[k];
      alt_explained = est[k].explained;
    }
  }
  return out;
}

// One attempt of Algorithm 1 at position i (seq[i] == cycle[0]).
bool match_at(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i, int64_t max_extra_ops,
              int32_t barrier, ApproximateMatch* out) {
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

// Algorithm 1 over `seq`. `gap_at(j)`: the idle time before op j (0 everywhere when unknown).
template <typename GapAt>
std::vector<ApproximateMatch> match_cycle(std::span<const int32_t> seq, std::span<const int32_t> cycle,
                                          int64_t max_extra_ops, int32_t barrier, const GapAt& gap_at) {
  std::vector<ApproximateMatch> matches;
  const int64_t n = static_cast<int64_t>(seq.size());
  if (cycle.empty()) return matches;
  int64_t i = 0;
  while (i < n) {
    ApproximateMatch best;
    if (seq[i] != cycle[0] || !match_at(seq, cycle, i, max_extra_ops, barrier, &best)) {
      ++i;
      continue;
    }
    // A match with extra ops may have swallowed the tail of something else (an evaluation pass that
    // starts like the cycle): a later start inside it that needs fewer extras is the better match,
    // unless less idle time precedes it. An op inserted right after the iteration's first op and
    // equal to it also makes a later start with fewer extras, but the idle gap between iterations
    // lies before the true start (and before the evaluation pass's successor, not before the pass).
    for (int64_t j = i + 1; best.extra_ops > 0 && j <= best.first + best.extra_ops && j < n; ++j) {
      ApproximateMatch later;
      if (seq[j] == cycle[0] && match_at(seq, cycle, j, max_extra_ops, barrier, &later) &&
          later.extra_ops < best.extra_ops && gap_at(j) >= gap_at(best.first))
        best = later;
    }
    matches.push_back(best);
    i = best.last + 1;
  }
  return matches;
}

// A sequence to mine: the whole sequence (a view, no copy), the leftover stretches joined by unique
// separator symbols (so no repeat crosses two stretches), or a sample of windows of either.
struct Subsequence {
  std::span<const int32_t> symbols;  // the caller's sequence, or `storage`
  std::vector<int32_t> storage;
  std::vector<int64_t> to_seq;      // index into the whole sequence, -1 for separators; empty = identity
  std::vector<int64_t> to_sampled;  // a sample's: index into the sequence it samples, -1 for separators
  int32_t alphabet = 0;
  int32_t barrier = kNoBarrier;  // symbols >= barrier are separators

  Subsequence() = default;
  Subsequence(const Subsequence&) = delete;  // `symbols` may point into `storage`
  Subsequence& operator=(const Subsequence&) = delete;
  int64_t size() const { return static_cast<int64_t>(symbols.size()); }
  int64_t at(int64_t j) const { return to_seq.empty() ? j : to_seq[j]; }
};

// The idle time before op j of `in` (0 for separators, or when the trace gives no times).
int64_t gap_in(const Subsequence& in, std::span<const int64_t> gap_before_ns, int64_t j) {
  if (gap_before_ns.empty()) return 0;
  const int64_t at = in.at(j);
  return at >= 0 ? gap_before_ns[at] : 0;
}

struct LoopFit {
  Loop loop;
  std::vector<ApproximateMatch> matches;  // in subsequence positions
  int64_t k0 = 0;                         // the extra ops allowed per iteration
};

// From a chosen pattern P (a suffix-array interval of `sub`) to the aligned cycle and its matches
// over `target` (`sub` itself, or the whole sequence `sub` samples: a boundary candidate's iteration
// count is only meaningful over the whole, since every window edge cuts an iteration somewhere).
std::optional<LoopFit> fit_loop(const Subsequence& sub, const SuffixIndex& index, const RepeatCandidate& p,
                                std::span<const int64_t> gap_before_ns, const MinerOptions& options,
                                const Subsequence& target, int64_t max_cycle) {
  const std::vector<int64_t> starts = nonoverlapping_starts(index, p);
  if (starts.size() < 2) return std::nullopt;
  const int64_t cycle_length = cycle_of(starts);
  if (cycle_length > max_cycle) return std::nullopt;
  auto whole_cycle_at = [&](const Subsequence& in, int64_t begin) {
    if (begin < 0 || begin + cycle_length > in.size()) return false;
    for (int64_t j = begin; j < begin + cycle_length; ++j)
      if (in.symbols[j] >= in.barrier) return false;
    return true;
  };

  // Boundary candidates: the offsets in the cycle with the largest total idle gap before them (the
  // interval between iterations), the start of the periodic region (extended backwards from the
  // first occurrence), and P's own start. The one yielding the most iterations wins, then the gap.
  std::vector<double> score(cycle_length, 0.0);
  if (!gap_before_ns.empty()) {
    for (size_t k = 0; k + 1 < starts.size(); ++k) {
      if (starts[k + 1] - starts[k] != cycle_length) continue;
      for (int64_t o = 0; o < cycle_length; ++o) {
        const int64_t at = sub.at(starts[k] + o);
        if (at >= 0) score[o] += static_cast<double>(gap_before_ns[at]);
      }
    }
  }
  std::vector<int64_t> phases = {0};
  std::vector<int64_t> by_gap(cycle_length);
  for (int64_t o = 0; o < cycle_length; ++o) by_gap[o] = o;
  const size_t top = std::min<size_t>(2, by_gap.size());
  std::partial_sort(by_gap.begin(), by_gap.begin() + top, by_gap.end(), [&](int64_t x, int64_t y) {
    return score[x] > score[y] || (score[x] == score[y] && x < y);
  });
  if (!gap_before_ns.empty()) phases.insert(phases.end(), by_gap.begin(), by_gap.begin() + top);
  // The periodic region is a property of the target: in a sample it would end at a window edge. P's
  // first occurrence in the target comes no later than that of the sample's first occurrence.
  const Subsequence& t = target;
  int64_t first = starts.front();
  if (&target != &sub) {
    const auto pattern_begin = sub.symbols.begin() + p.position;
    const int64_t limit = std::min(t.size(), sub.to_sampled[starts.front()] + p.length);
    first =
        std::search(t.symbols.begin(), t.symbols.begin() + limit, pattern_begin, pattern_begin + p.length) -
        t.symbols.begin();
  }
  // The periodic region extends backwards from there over whole cycles. It is walked op by op
  // against a clean cycle aligned on `first` (from P's occurrences), with up to k0 inserted ops per
  // cycle as Algorithm 1 allows: an exact comparison with the op one cycle later stops at the first
  // inserted op, which on a trace without idle gaps (nothing else places the boundary) cuts the first
  // iteration in two. The walk stops at a cycle's (k0 + 1)-th op that does not fit, such as a set-up.
  const int64_t k0 =
      options.max_extra_ops >= 0 ? options.max_extra_ops : std::max<int64_t>(1, cycle_length / 2);
  std::span<const int32_t> aligned;
  for (size_t k = 0; k + 1 < starts.size() && aligned.empty(); ++k)
    if (starts[k + 1] - starts[k] == cycle_length && whole_cycle_at(sub, starts[k]))
      aligned = sub.symbols.subspan(starts[k], cycle_length);
  if (aligned.empty() && whole_cycle_at(t, first)) aligned = t.symbols.subspan(first, cycle_length);
  int64_t region_start = first;
  int64_t region_phase = 0;
  if (!aligned.empty()) {
    int64_t j = cycle_length - 1;  // the cycle offset expected next, walking backwards
    int64_t misfits = 0;           // ops that did not fit since the cycle's end was last passed
    for (int64_t q = first - 1; q >= 0 && t.symbols[q] < t.barrier; --q) {
      if (t.symbols[q] != aligned[j]) {
        if (++misfits > k0) break;
        continue;
      }
      region_start = q;
      region_phase = j;
      if (j == 0) misfits = 0;
      j = j == 0 ? cycle_length - 1 : j - 1;
    }
  }
  phases.push_back(region_phase);
  std::sort(phases.begin(), phases.end());
  phases.erase(std::unique(phases.begin(), phases.end()), phases.end());

  std::optional<LoopFit> best;
  for (int64_t phase : phases) {
    // The template cycle is a clean cycle (no extra ops: two occurrences of P one cycle apart)
    // rotated to the phase: read from the sequence at the phase instead, it could pick up an op
    // inserted into the next iteration.
    std::vector<int32_t> cycle;
    if (!aligned.empty()) {
      cycle.assign(aligned.begin() + phase, aligned.end());
      cycle.insert(cycle.end(), aligned.begin(), aligned.begin() + phase);
    } else {
      const int64_t at = region_start + ((phase - region_phase) % cycle_length + cycle_length) % cycle_length;
      if (!whole_cycle_at(t, at)) continue;
      cycle.assign(t.symbols.begin() + at, t.symbols.begin() + at + cycle_length);
    }
    LoopFit fit;
    fit.k0 = k0;
    fit.loop.cycle = std::move(cycle);
    fit.loop.pattern_length = p.length;
    fit.loop.pattern_count = p.count;
    fit.loop.phase = phase;
    fit.matches = match_cycle(target.symbols, fit.loop.cycle, k0, target.barrier,
                              [&](int64_t j) { return gap_in(target, gap_before_ns, j); });
    // Most iterations, then the idle gap; without a gap to tell (a trace with no idle time between
    // iterations), the loop starts where its periodic region does: the earliest first iteration.
    const auto better = [&] {
      if (fit.matches.size() != best->matches.size()) return fit.matches.size() > best->matches.size();
      if (score[phase] != score[best->loop.phase]) return score[phase] > score[best->loop.phase];
      return !fit.matches.empty() && fit.matches.front().first < best->matches.front().first;
    };
    if (!best || better()) best = std::move(fit);
  }
  return best;
}

int64_t ops_inside(const std::vector<ApproximateMatch>& matches) {
  int64_t ops = 0;
  for (const auto& m : matches) ops += m.last - m.first + 1;
  return ops;
}

// estimate() over the whole (sub)sequence, for pattern `p` (symbols of `sample`): its greedy
// non-overlapping exact occurrences, found by a scan for its first op.
Estimate estimate_over(const Subsequence& whole, const Subsequence& sample, const RepeatCandidate& c) {
  const int32_t* p = sample.symbols.data() + c.position;
  const int64_t m = c.length;
  const int32_t* s = whole.symbols.data();
  const int64_t n = whole.size();
  int64_t count = 0;
  for (int64_t i = 0; i + m <= n;) {
    if (s[i] == p[0] && std::equal(p + 1, p + m, s + i + 1)) {
      ++count;
      i += m;
    } else {
      ++i;
    }
  }
  return {count, static_cast<double>(count * m) / static_cast<double>(std::max<int64_t>(1, n))};
}

// `windows` windows of budget / windows ops each, centred at evenly spread points of `whole`, joined
// by fresh separators; separators inside a window (stretch boundaries) are renumbered densely, so the
// suffix array's alphabet stays the op alphabet plus a few.
void make_sample(const Subsequence& whole, int64_t budget, int windows, int32_t op_alphabet,
                 Subsequence* out) {
  const int64_t n = whole.size();
  const int64_t k = windows;
  const int64_t w = budget / k;
  out->storage.reserve(static_cast<size_t>(w * k + k));
  out->to_seq.reserve(static_cast<size_t>(w * k + k));
  out->to_sampled.reserve(static_cast<size_t>(w * k + k));
  int32_t separator = op_alphabet;
  int64_t prev_end = 0;
  for (int64_t p = 0; p < k; ++p) {
    const int64_t start = std::max(prev_end, std::min(n - w, (2 * p + 1) * n / (2 * k) - w / 2));
    if (p > 0) {
      out->storage.push_back(separator++);
      out->to_seq.push_back(-1);
      out->to_sampled.push_back(-1);
    }
    for (int64_t q = start; q < start + w && q < n; ++q) {
      const int32_t symbol = whole.symbols[q];
      out->storage.push_back(symbol >= op_alphabet ? separator++ : symbol);
      out->to_seq.push_back(whole.at(q));
      out->to_sampled.push_back(symbol >= op_alphabet ? -1 : q);
    }
    prev_end = std::min(n, start + w);
  }
  out->alphabet = separator;
  out->barrier = op_alphabet;
  out->symbols = out->storage;
}

struct Mined {
  RepeatCandidate pattern;
  Detection detection;
  int64_t eps_used = 0;
  LoopFit fit;             // matches in positions of the whole (sub)sequence
  int64_t sample_ops = 0;  // 0: mined on the whole (sub)sequence
};

enum class MineOutcome { kOk, kNoPattern, kNoFit };

// Pattern (Criteria 2 and 3, or detection), cycle and matches for one loop over `whole`: on a sample
// when `whole` is longer than the sample budget, growing the sample until it shows a loop that the
// whole sequence confirms (see the header).
constexpr double kMinSampleShare = 0.3;

MineOutcome mine_loop(const Subsequence& whole, bool paper, int32_t op_alphabet,
                      std::span<const int64_t> gap_before_ns, const MinerOptions& options, Mined* out) {
  const int64_t n = whole.size();
  const int windows = std::max(1, options.sample_windows);
  const int64_t min_matches = paper ? 2 : options.min_repeats;
  // The sample's fixed costs (suffix array, shortlist) should stay a small part of mining a
  // sequence of a few million ops too: at most a sixteenth of it, but no fewer than 32Ki ops.
  constexpr int64_t kMinScaledSample = int64_t{1} << 15;
  int64_t budget = options.sample_ops > kMinScaledSample
                       ? std::max(kMinScaledSample, std::min(options.sample_ops, n / 16))
                       : options.sample_ops;
  for (;;) {
    const bool exact = budget <= 0 || n <= budget || budget / windows < 2;
    Subsequence sample;
    if (!exact) make_sample(whole, budget, windows, op_alphabet, &sample);
    const Subsequence& sub = exact ? whole : sample;
    const int64_t sub_n = sub.size();
    std::optional<RepeatCandidate> pattern;
    Detection detection;
    int64_t eps_used = 0;
    std::optional<LoopFit> fit;
    {  // the index is only needed for the pattern and the cycle: freed before matching the whole
      SuffixIndex index = build_index(sub.symbols, sub.alphabet);
      if (paper && exact) {
        pattern = select_for_count(index, sub_n, options.iterations, options.epsilon, &eps_used);
      } else {
        std::function<Estimate(const RepeatCandidate&)> over_whole;
        if (!exact) over_whole = [&](const RepeatCandidate& c) { return estimate_over(whole, sub, c); };
        detection = detect(sub.symbols, index, sub_n, std::max<int64_t>(2, options.min_repeats),
                           options.count_preference, over_whole);
        pattern = detection.chosen;
      }
      // A window must hold a few iterations, or the sample's "cycle" may be a piece of one.
      const int64_t max_cycle = exact ? std::numeric_limits<int64_t>::max() : budget / windows / 4;
      if (pattern) fit = fit_loop(sub, index, *pattern, gap_before_ns, options, whole, max_cycle);
    }
    if (exact) {
      if (!pattern) return MineOutcome::kNoPattern;
      if (!fit) return MineOutcome::kNoFit;
      *out = Mined{*pattern, std::move(detection), eps_used, std::move(*fit), 0};
      return MineOutcome::kOk;
    }
    const int64_t piece = budget / windows;
    if (pattern && fit) {
      // A cycle that is k copies of a shorter one is the same loop read k iterations at a time; the
      // whole-sequence detection prefers the finer reading (most iterations, same coverage), which a
      // sample whose windows hold few iterations can miss.
      const int64_t length = static_cast<int64_t>(fit->loop.cycle.size());
      for (int64_t root = 1; root < length; ++root) {
        if (length % root != 0) continue;
        const auto& c = fit->loop.cycle;
        if (!std::equal(c.begin() + root, c.end(), c.begin())) continue;
        fit->loop.cycle.resize(static_cast<size_t>(root));
        fit->k0 = options.max_extra_ops >= 0 ? options.max_extra_ops : std::max<int64_t>(1, root / 2);
        fit->matches = match_cycle(whole.symbols, fit->loop.cycle, fit->k0, whole.barrier,
                                   [&](int64_t j) { return gap_in(whole, gap_before_ns, j); });
        break;
      }
      const std::vector<ApproximateMatch> in_sample =
          match_cycle(sub.symbols, fit->loop.cycle, fit->k0, sub.barrier,
                      [&](int64_t j) { return gap_in(sub, gap_before_ns, j); });
      const double sample_share =
          static_cast<double>(ops_inside(in_sample)) / static_cast<double>(piece * windows);
      const double share = static_cast<double>(ops_inside(fit->matches)) / static_cast<double>(n);
      // A reading must explain a fair part of the sample (windows on a long set-up only show
      // incidental repeats), and the whole sequence must bear it out (windows that all fell on a
      // stretch unlike the rest, such as another loop): otherwise look at more of the sequence.
      bool confirmed = static_cast<int64_t>(in_sample.size()) >= min_matches &&
                       sample_share >= kMinSampleShare && share >= 0.5 * sample_share;
      if (confirmed && paper) {
        // The given count picks the pattern (Criterion 2): the sampled cycle stands when the whole
        // sequence holds about that many iterations of it; otherwise the exact method decides.
        const int64_t i = options.iterations;
        const int64_t c = static_cast<int64_t>(fit->matches.size());
        const int64_t eps0 = options.epsilon > 0 ? options.epsilon : std::max<int64_t>(1, i / 50);
        int64_t eps = eps0;
        while (c <= i && c <= i - eps && eps < i) eps *= 2;
        if (c > i || c <= i - eps || i - c >= std::max(eps0, (i + 9) / 10)) {
          budget = n;
          continue;
        }
        eps_used = eps;
      }
      if (confirmed) {
        *out = Mined{*pattern, std::move(detection), eps_used, std::move(*fit), piece * windows};
        return MineOutcome::kOk;
      }
    }
    budget = budget > n / 2 ? n : 2 * budget;
  }
}

void attach_between(std::span<const int32_t> seq, MiningResult* result,
                    const std::vector<int64_t>& match_last, const std::vector<int64_t>& attach_limits) {
  auto& its = result->iterations;
  for (size_t t = 0; t < its.size(); ++t) {
    its[t].last_op = match_last[t];
    its[t].trailing_extra_ops = 0;
    const int64_t next = t + 1 < its.size() ? its[t + 1].first_op : -1;
    if (next < 0) {
      // After the last iteration: attach the longest block that also followed another iteration of
      // the same loop (the final evaluation pass); the rest is tear-down.
      int64_t attach = 0;
      int checked = 0;
      for (size_t u = 0; u + 1 < its.size() && checked < 64; ++u) {
        if (its[u].loop != its[t].loop || its[u].trailing_extra_ops <= attach) continue;
        ++checked;
        const int64_t b = its[u].trailing_extra_ops;
        const int64_t from = its[u].last_op - b + 1;
        if (match_last[t] + b >= static_cast<int64_t>(seq.size())) continue;
        if (std::equal(seq.begin() + from, seq.begin() + from + b, seq.begin() + match_last[t] + 1))
          attach = b;
      }
      its[t].last_op = match_last[t] + attach;
      its[t].trailing_extra_ops = attach;
      continue;
    }
    const int64_t gap = next - match_last[t] - 1;
    if (gap > 0 && gap <= attach_limits[its[t].loop]) {
      its[t].last_op = next - 1;
      its[t].trailing_extra_ops = gap;
    }
  }
}

}  // namespace

std::optional<RepeatCandidate> select_pattern_for_count(std::span<const int32_t> seq, int32_t alphabet_size,
                                                        int64_t iterations, int64_t epsilon,
                                                        int64_t* epsilon_used) {
  if (seq.size() < 2) return std::nullopt;
  SuffixIndex index = build_index(seq, alphabet_size);
  return select_for_count(index, static_cast<int64_t>(seq.size()), iterations, epsilon, epsilon_used);
}

std::vector<RepeatCandidate> repeat_profile(std::span<const int32_t> seq, int32_t alphabet_size,
                                            int64_t min_repeats) {
  std::vector<RepeatCandidate> out;
  if (seq.size() < 2) return out;
  SuffixIndex index = build_index(seq, alphabet_size);
  const int64_t n = static_cast<int64_t>(seq.size());
  std::unordered_map<int64_t, RepeatCandidate> by_count;
  for_each_lcp_interval(index.lcp, [&](int32_t node_lcp, int32_t lb, int32_t rb, int32_t parent_lcp) {
    const int64_t count = rb - lb + 1;
    if (count < std::max<int64_t>(2, min_repeats)) return;
    const int64_t length = std::min<int64_t>(node_lcp, (n + count - 1) / count - 1);
    if (length <= parent_lcp || length < 1) return;
    auto [it, inserted] =
        by_count.try_emplace(count, RepeatCandidate{count, length, index.sa[lb], lb, rb, n});
    if (!inserted && length > it->second.length)
      it->second = RepeatCandidate{count, length, index.sa[lb], lb, rb, n};
  });
  for (auto& [count, c] : by_count) out.push_back(c);
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.count < b.count; });
  return out;
}

std::vector<ApproximateMatch> approximate_matches(std::span<const int32_t> seq,
                                                  std::span<const int32_t> cycle, int64_t max_extra_ops) {
  return match_cycle(seq, cycle, max_extra_ops, kNoBarrier, [](int64_t) { return int64_t{0}; });
}

MiningResult mine_iterations(std::span<const int32_t> seq, std::span<const int64_t> gap_before_ns,
                             const MinerOptions& options, std::span<const int64_t> op_time_ns) {
  MiningResult result;
  const int64_t n = static_cast<int64_t>(seq.size());
  result.ops = n;
  if (!gap_before_ns.empty() && static_cast<int64_t>(gap_before_ns.size()) != n) gap_before_ns = {};
  if (!op_time_ns.empty() && static_cast<int64_t>(op_time_ns.size()) != n) op_time_ns = {};
  double total_time = 0;
  for (int64_t v : op_time_ns) total_time += static_cast<double>(std::max<int64_t>(0, v));
  if (n < 2) {
    result.error = "the main stream has " + std::to_string(n) + " op(s): nothing can repeat";
    result.ops_before = n;
    return result;
  }
  if (n >= std::numeric_limits<int32_t>::max() / 2) {
    result.error = "the main stream has " + std::to_string(n) + " ops: more than this miner indexes (2^30)";
    result.ops_before = n;
    return result;
  }
  // Branch-free (vectorized) pass: one scan of a long sequence costs as much as a few of the steps
  // that follow.
  int32_t lowest = 0;
  int32_t highest = -1;
  for (int32_t s : seq) {
    lowest = std::min(lowest, s);
    highest = std::max(highest, s);
  }
  if (lowest < 0) {
    result.error = "negative op symbol in the sequence";
    return result;
  }
  const int32_t alphabet = highest + 1;

  std::vector<int64_t> match_last;
  std::vector<int64_t> attach_limits;
  std::string notes;
  for (int loop_index = 0; loop_index < std::max(1, options.max_loops); ++loop_index) {
    Subsequence sub;
    if (loop_index == 0) {
      sub.symbols = seq;
      sub.alphabet = alphabet;
    } else {
      // Leftover stretches (not inside any iteration; iterations are ordered and disjoint) long
      // enough to hold a few iterations.
      sub.barrier = alphabet;
      int32_t separator = alphabet;
      auto add_stretch = [&](int64_t begin, int64_t end) {
        if (end - begin < 2 * options.min_repeats) return;
        if (!sub.storage.empty()) {
          sub.storage.push_back(separator++);
          sub.to_seq.push_back(-1);
        }
        sub.storage.insert(sub.storage.end(), seq.begin() + begin, seq.begin() + end);
        for (int64_t q = begin; q < end; ++q) sub.to_seq.push_back(q);
      };
      int64_t from = 0;
      for (const auto& it : result.iterations) {
        add_stretch(from, it.first_op);
        from = it.last_op + 1;
      }
      add_stretch(from, n);
      sub.symbols = sub.storage;
      sub.alphabet = separator;
      if (static_cast<double>(sub.size()) < options.min_loop_share * static_cast<double>(n)) break;
    }
    if (sub.size() < 2) break;
    const bool paper = loop_index == 0 && options.iterations > 0;
    Mined mined;
    const MineOutcome outcome = mine_loop(sub, paper, alphabet, gap_before_ns, options, &mined);
    if (outcome == MineOutcome::kNoPattern) {
      if (loop_index == 0)
        result.error =
            options.iterations > 0
                ? "no op pattern repeats close to " + std::to_string(options.iterations) +
                      " times (Criteria 2 and 3, epsilon doubled up to the count): check --iterations"
                : "no op pattern repeats at least " + std::to_string(options.min_repeats) +
                      " times: the stream does not look iterative";
      break;
    }
    if (outcome != MineOutcome::kOk) break;
    const RepeatCandidate* pattern = &mined.pattern;
    const Detection& detection = mined.detection;
    const int64_t eps_used = mined.eps_used;
    LoopFit* fit = &mined.fit;
    const int64_t min_matches = paper ? 2 : options.min_repeats;
    const int64_t ops_in = ops_inside(fit->matches);
    if (static_cast<int64_t>(fit->matches.size()) < min_matches) break;
    if (loop_index > 0 && (static_cast<double>(ops_in) < options.min_loop_share * static_cast<double>(n) ||
                           static_cast<int64_t>(fit->loop.cycle.size()) < options.min_further_cycle_ops))
      break;
    if (loop_index > 0 && total_time > 0) {
      double time_in = 0;
      for (const auto& m : fit->matches)
        for (int64_t q = m.first; q <= m.last; ++q)
          if (sub.at(q) >= 0) time_in += static_cast<double>(std::max<int64_t>(0, op_time_ns[sub.at(q)]));
      if (time_in < options.min_loop_time_share * total_time) break;
    }
    if (loop_index == 0) result.sampled_ops = mined.sample_ops;
    char sample_note[160] = "";
    if (mined.sample_ops > 0)
      std::snprintf(sample_note, sizeof sample_note, " (mined on a sample of %lld of %lld ops in %d windows)",
                    static_cast<long long>(mined.sample_ops), static_cast<long long>(sub.size()),
                    std::max(1, options.sample_windows));

    fit->loop.epsilon = eps_used;
    const int32_t loop_id = static_cast<int32_t>(result.loops.size());
    const int64_t cycle_length = static_cast<int64_t>(fit->loop.cycle.size());
    attach_limits.push_back(options.attach_limit >= 0 ? options.attach_limit : 2 * cycle_length);
    for (const auto& m : fit->matches) {
      IterationMatch it;
      it.first_op = sub.at(m.first);
      it.last_op = sub.at(m.last);
      it.loop = loop_id;
      it.inner_extra_ops = m.extra_ops;
      result.iterations.push_back(it);
    }
    if (loop_index == 0 && options.iterations <= 0) {
      result.detected = true;
      char buf[320];
      std::snprintf(
          buf, sizeof buf,
          "detected: a pattern of %lld ops occurring %lld times, read as ~%lld iterations explaining %.0f%% "
          "of the ops",
          static_cast<long long>(pattern->length), static_cast<long long>(pattern->count),
          static_cast<long long>(detection.estimated_iterations), 100.0 * detection.explained);
      notes += buf;
      notes += sample_note;
      if (detection.alternative) {
        std::snprintf(buf, sizeof buf, "; alternative reading: a pattern of %lld ops occurring %lld times",
                      static_cast<long long>(detection.alternative->length),
                      static_cast<long long>(detection.alternative->count));
        notes += buf;
      }
      result.loops.push_back(std::move(fit->loop));
      // Stash the ambiguity for the confidence below: a genuine alternative halves it.
      result.confidence = detection.alternative ? 0.5 : 0.0;
    } else {
      if (loop_index == 0) {
        char buf[160];
        std::snprintf(buf, sizeof buf,
                      "iteration count given: pattern of %lld ops repeated %lld times (epsilon %lld)",
                      static_cast<long long>(pattern->length), static_cast<long long>(pattern->count),
                      static_cast<long long>(eps_used));
        notes += buf;
        notes += sample_note;
      }
      result.loops.push_back(std::move(fit->loop));
    }
    std::sort(result.iterations.begin(), result.iterations.end(),
              [](const auto& a, const auto& b) { return a.first_op < b.first_op; });
    match_last.clear();
    for (const auto& it : result.iterations)
      match_last.push_back(it.trailing_extra_ops > 0 ? it.last_op - it.trailing_extra_ops : it.last_op);
    attach_between(seq, &result, match_last, attach_limits);
  }

  const double ambiguity = result.confidence;
  result.confidence = 0;
  if (result.iterations.empty()) {
    result.ops_before = n;
    if (result.error.empty()) result.error = "no repeated op pattern could be matched as iterations";
    result.confidence_note = notes;
    return result;
  }
  int64_t inside = 0;
  for (const auto& it : result.iterations) {
    inside += it.last_op - it.first_op + 1;
    result.loops[it.loop].iterations += 1;
    result.loops[it.loop].ops += it.last_op - it.first_op + 1;
  }
  result.ops_before = result.iterations.front().first_op;
  result.ops_after = n - 1 - result.iterations.back().last_op;
  result.ops_between = n - result.ops_before - result.ops_after - inside;
  const double explained = static_cast<double>(inside) / static_cast<double>(inside + result.ops_between);
  result.confidence = result.detected ? explained * (1.0 - ambiguity) : explained;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%s%.1f%% of the ops from the first to the last iteration lie inside iterations",
                notes.empty() ? "" : "; ", 100.0 * explained);
  result.confidence_note = notes + buf;
  return result;
}

}  // namespace strata::iterations
