// The miner's building blocks: suffix index, Criteria 2 and 3, the repeat profile, cycles read from
// occurrences, and Algorithm 1 (approximate matching).
#include <algorithm>
#include <limits>
#include <unordered_map>

#include "analysis/iterations/miner_internal.h"
#include "analysis/iterations/pattern_miner.h"
#include "analysis/iterations/suffix_array.h"

namespace strata::analysis::iterations {

double RepeatCandidate::share() const {
  return sequence_length > 0
             ? static_cast<double>(count) * static_cast<double>(length) / static_cast<double>(sequence_length)
             : 0.0;
}

namespace detail {

SuffixIndex build_index(std::span<const int32_t> seq, int32_t alphabet_size) {
  SuffixIndex index;
  index.sa = build_suffix_array(seq, alphabet_size);
  index.lcp = build_lcp_array(seq, index.sa);
  return index;
}

int64_t Subsequence::ops_in(int64_t b, int64_t e) const {
  if (!folded()) {
    int64_t ops = e - b + 1;
    if (barrier != kNoBarrier)
      for (int64_t j = b; j <= e; ++j) ops -= symbols[j] >= barrier;
    return ops;
  }
  int64_t ops = 0;
  for (int64_t j = b; j <= e; ++j) ops += weight(j);
  return ops;
}

int64_t Subsequence::element_of(int64_t op) const {
  if (to_seq.empty()) return op;
  // Separators (-1) break monotonicity: search the last element whose first op is <= op among the
  // non-separator elements, by a binary search that steps over separators.
  int64_t lo = 0;
  int64_t hi = size() - 1;
  int64_t found = 0;
  while (lo <= hi) {
    int64_t mid = lo + (hi - lo) / 2;
    int64_t probe = mid;
    while (probe <= hi && to_seq[probe] < 0) ++probe;
    if (probe > hi) {
      hi = mid - 1;
      continue;
    }
    if (to_seq[probe] <= op) {
      found = probe;
      lo = probe + 1;
    } else {
      hi = mid - 1;
    }
  }
  return found;
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

int64_t primitive_root(std::span<const int32_t> cycle) {
  const int64_t length = static_cast<int64_t>(cycle.size());
  for (int64_t root = 1; root < length; ++root)
    if (length % root == 0 && std::equal(cycle.begin() + root, cycle.end(), cycle.begin())) return root;
  return length;
}

int64_t cyclic_copies(std::span<const int32_t> cycle, std::span<const int32_t> unit) {
  const int64_t d = static_cast<int64_t>(cycle.size());
  const int64_t len = static_cast<int64_t>(unit.size());
  if (len == 0 || len > d) return 0;
  std::vector<int32_t> twice(cycle.begin(), cycle.end());
  twice.insert(twice.end(), cycle.begin(), cycle.begin() + (len - 1));
  std::vector<int64_t> at;
  for (auto it = std::search(twice.begin(), twice.end(), unit.begin(), unit.end());
       it != twice.end() && it - twice.begin() < d;
       it = std::search(it + 1, twice.end(), unit.begin(), unit.end()))
    if (at.empty() || it - twice.begin() >= at.back() + len) at.push_back(it - twice.begin());
  while (at.size() > 1 && at.back() + len > at.front() + d) at.pop_back();
  return static_cast<int64_t>(at.size());
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

bool walk(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i, int64_t max_extra_ops,
          int32_t barrier, const Subsequence* weighted, Walk* out) {
  const int64_t n = static_cast<int64_t>(seq.size());
  const int64_t m = static_cast<int64_t>(cycle.size());
  Walk w;
  auto take = [&](int64_t p) {
    if (weighted == nullptr) {
      ++w.matched;
      return;
    }
    w.matched += weighted->clean_weight(p);
    w.noise += weighted->weight(p) - weighted->clean_weight(p);
  };
  int64_t pos = i;
  for (int64_t j = 0; j < m; ++j) {
    while (pos < n && seq[pos] != cycle[j]) {
      if (j == 0 || seq[pos] >= barrier) return false;
      w.extra += weighted != nullptr ? weighted->weight(pos) : 1;
      if (w.extra > max_extra_ops) return false;
      ++pos;
    }
    if (pos >= n) return false;
    take(pos++);
    if (weighted == nullptr || cycle[j] < weighted->fold_from || cycle[j] >= barrier) continue;
    // A folded run split by one inserted op: "M x M" where the cycle has one M.
    const int32_t next = cycle[(j + 1) % m];  // after the last element: the next iteration's first
    while (pos + 1 < n && seq[pos] != cycle[j] && seq[pos] != next && seq[pos] < weighted->fold_from &&
           seq[pos + 1] == cycle[j] && w.extra + 1 <= max_extra_ops) {
      ++w.extra;
      ++pos;
      take(pos++);
    }
  }
  w.last = pos - 1;
  *out = w;
  return true;
}

bool match_at(std::span<const int32_t> seq, std::span<const int32_t> cycle, int64_t i, int64_t max_extra_ops,
              int32_t barrier, ApproximateMatch* out, const Subsequence* weighted) {
  if (weighted == nullptr) return match_plain(seq, cycle, i, max_extra_ops, barrier, out);
  Walk w;
  if (!walk(seq, cycle, i, max_extra_ops, barrier, weighted, &w)) return false;
  *out = {i, w.last, w.extra};
  return true;
}

std::vector<ApproximateMatch> match_over(const Subsequence& in, std::span<const int32_t> cycle, int64_t k0,
                                         std::span<const int64_t> gap_before_ns, bool later_start) {
  return match_cycle(
      in.symbols, cycle, k0, in.barrier, [&](int64_t j) { return gap_in(in, gap_before_ns, j); },
      in.folded() ? &in : nullptr, later_start);
}

int64_t ops_inside(const Subsequence& in, const std::vector<ApproximateMatch>& matches) {
  int64_t ops = 0;
  for (const auto& m : matches) ops += in.folded() ? in.ops_in(m.first, m.last) : m.last - m.first + 1;
  return ops;
}

int64_t ops_matched(const Subsequence& in, std::span<const int32_t> cycle,
                    const std::vector<ApproximateMatch>& matches) {
  int64_t ops = 0;
  for (const auto& m : matches) {
    if (!in.folded()) {
      ops += m.last - m.first + 1 - m.extra_ops;
      continue;
    }
    // The elements Algorithm 1 matched (it is greedy: replaying it from the match's start finds them).
    Walk w;
    if (walk(in.symbols.first(static_cast<size_t>(m.last) + 1), cycle, m.first,
             std::numeric_limits<int64_t>::max() / 4, in.barrier, &in, &w))
      ops += w.matched;
  }
  return ops;
}

}  // namespace detail

using detail::build_index;
using detail::for_each_lcp_interval;

std::optional<RepeatCandidate> select_pattern_for_count(std::span<const int32_t> seq, int32_t alphabet_size,
                                                        int64_t iterations, int64_t epsilon,
                                                        int64_t* epsilon_used) {
  if (seq.size() < 2) return std::nullopt;
  detail::SuffixIndex index = build_index(seq, alphabet_size);
  return detail::select_for_count(index, static_cast<int64_t>(seq.size()), iterations, epsilon, epsilon_used);
}

std::vector<RepeatCandidate> repeat_profile(std::span<const int32_t> seq, int32_t alphabet_size,
                                            int64_t min_repeats) {
  std::vector<RepeatCandidate> out;
  if (seq.size() < 2) return out;
  detail::SuffixIndex index = build_index(seq, alphabet_size);
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
  return detail::match_cycle(seq, cycle, max_extra_ops, detail::kNoBarrier,
                             [](int64_t) { return int64_t{0}; });
}

}  // namespace strata::analysis::iterations
