// From a chosen pattern to the aligned cycle and its matches (loop_fit.h): the clean cycle, the
// boundary candidates (idle gaps, the periodic region's start, a training step's mark) and the
// candidate that yields the most iterations.
#include "analysis/iterations/loop_fit.h"

#include <algorithm>
#include <optional>

namespace strata::analysis::iterations::detail {
namespace {

// A clean cycle of the loop: a view of the sequence, or of `rotated` when it had to be rotated.
struct AlignedCycle {
  std::vector<int32_t> rotated;
  std::span<const int32_t> view;
};

// Whether a whole cycle of `in` starts at `begin` (no separator inside it).
bool whole_cycle_at(const Subsequence& in, int64_t begin, int64_t cycle_length) {
  if (begin < 0 || begin + cycle_length > in.size()) return false;
  for (int64_t j = begin; j < begin + cycle_length; ++j)
    if (in.symbols[j] >= in.barrier) return false;
  return true;
}

// The clean cycle to start from: the detection's (`given`), else two occurrences of P one cycle
// apart; empty when none is clean.
void align_clean_cycle(const Subsequence& sub, const RepeatCandidate& p, CleanCycle given,
                       const std::vector<int64_t>& starts, int64_t cycle_length, AlignedCycle* aligned) {
  if (given.begin >= 0) {
    aligned->view = sub.symbols.subspan(given.begin, cycle_length);
    // Rotated to start where P does (the periodic region is walked back from P's first
    // occurrence): the detection's cycle starts where its run does, which may be before P.
    const auto pattern = sub.symbols.subspan(p.position, p.length);
    for (int64_t e = 0; e < cycle_length; ++e) {
      bool fits = true;
      for (int64_t i = 0; i < p.length && fits; ++i)
        fits = pattern[i] == aligned->view[(e + i) % cycle_length];
      if (!fits) continue;
      aligned->rotated.assign(aligned->view.begin() + e, aligned->view.end());
      aligned->rotated.insert(aligned->rotated.end(), aligned->view.begin(), aligned->view.begin() + e);
      aligned->view = aligned->rotated;
      break;
    }
    return;
  }
  for (size_t k = 0; k + 1 < starts.size() && aligned->view.empty(); ++k)
    if (starts[k + 1] - starts[k] == cycle_length && whole_cycle_at(sub, starts[k], cycle_length))
      aligned->view = sub.symbols.subspan(starts[k], cycle_length);
}

// The total idle gap before each offset of the cycle, over the clean cycle's matches in `sub`.
std::vector<double> gap_scores(const Subsequence& sub, std::span<const int32_t> aligned, int64_t cycle_length,
                               std::span<const int64_t> gap_before_ns) {
  std::vector<double> score(cycle_length, 0.0);
  if (gap_before_ns.empty() || aligned.empty()) return score;
  for (const ApproximateMatch& m : match_over(sub, aligned, 0, {})) {
    for (int64_t o = 0; o < cycle_length; ++o) {
      const int64_t at = sub.at(m.first + o);
      if (at >= 0) score[o] += static_cast<double>(gap_before_ns[at]);
    }
  }
  return score;
}

// Offset 0, and the (at most two) offsets with the largest idle gap before them.
std::vector<int64_t> phases_by_gap(const std::vector<double>& score, int64_t cycle_length, bool has_gaps) {
  std::vector<int64_t> phases = {0};
  std::vector<int64_t> by_gap(cycle_length);
  for (int64_t o = 0; o < cycle_length; ++o) by_gap[o] = o;
  const size_t top = std::min<size_t>(2, by_gap.size());
  std::partial_sort(by_gap.begin(), by_gap.begin() + top, by_gap.end(), [&](int64_t x, int64_t y) {
    return score[x] > score[y] || (score[x] == score[y] && x < y);
  });
  if (has_gaps) phases.insert(phases.end(), by_gap.begin(), by_gap.begin() + top);
  return phases;
}

// P's first occurrence in the target. The periodic region is a property of the target: in a sample
// it would end at a window edge. P's first occurrence in the target comes no later than that of the
// sample's first occurrence. Empty when the target does not hold P.
std::optional<int64_t> first_occurrence_in_target(const Subsequence& sub, const RepeatCandidate& p,
                                                  int64_t first_in_sub, const Subsequence& target) {
  if (&target == &sub) return first_in_sub;
  const Subsequence& t = target;
  const auto pattern_begin = sub.symbols.begin() + p.position;
  const int64_t mapped = t.element_of(sub.at(first_in_sub));
  const int64_t limit = std::min(t.size(), mapped + p.length);
  int64_t first =
      std::search(t.symbols.begin(), t.symbols.begin() + limit, pattern_begin, pattern_begin + p.length) -
      t.symbols.begin();
  if (first >= limit)  // folded differently at a window edge: look further
    first = std::search(t.symbols.begin(), t.symbols.end(), pattern_begin, pattern_begin + p.length) -
            t.symbols.begin();
  if (first >= t.size()) return std::nullopt;
  return first;
}

struct PeriodicRegion {
  int64_t start = 0;  // its first element in the target
  int64_t phase = 0;  // the cycle offset at that element
};

// The periodic region extends backwards from `first` over whole cycles. It is walked op by op
// against a clean cycle aligned on `first` (from P's occurrences), with up to k0 inserted ops per
// cycle as Algorithm 1 allows: an exact comparison with the op one cycle later stops at the first
// inserted op, which on a trace without idle gaps (nothing else places the boundary) cuts the first
// iteration in two. The walk stops at a cycle's (k0 + 1)-th op that does not fit, such as a set-up.
PeriodicRegion walk_region_back(const Subsequence& t, std::span<const int32_t> aligned, int64_t first,
                                int64_t k0) {
  PeriodicRegion region{first, 0};
  if (aligned.empty()) return region;
  const int64_t cycle_length = static_cast<int64_t>(aligned.size());
  int64_t j = cycle_length - 1;  // the cycle offset expected next, walking backwards
  int64_t misfits = 0;           // ops that did not fit since the cycle's end was last passed
  for (int64_t q = first - 1; q >= 0 && t.symbols[q] < t.barrier; --q) {
    if (t.symbols[q] != aligned[j]) {
      if (++misfits > k0) break;
      continue;
    }
    region.start = q;
    region.phase = j;
    if (j == 0) misfits = 0;
    j = j == 0 ? cycle_length - 1 : j - 1;
  }
  return region;
}

// The cycle offset right after the training step's mark, or -1 when the cycle holds none.
int64_t phase_after_step_mark(std::span<const int32_t> aligned, const StepAnchors& anchored) {
  const int64_t cycle_length = static_cast<int64_t>(aligned.size());
  const auto is_mark = [&](int32_t x) {
    return x >= 0 && static_cast<size_t>(x) < anchored.is_anchor.size() && anchored.is_anchor[x];
  };
  int64_t after_mark = -1;
  for (int64_t o = 0; o < cycle_length; ++o)
    if (is_mark(aligned[o]) && !is_mark(aligned[(o + 1) % cycle_length])) after_mark = (o + 1) % cycle_length;
  return after_mark;
}

// The boundary candidates worth a match over the whole target, sorted and unique.
std::vector<int64_t> narrow_phases(std::vector<int64_t> phases, const std::vector<double>& score,
                                   PeriodicRegion region, std::span<const int32_t> aligned, bool has_gaps,
                                   const StepAnchors* anchored) {
  phases.push_back(region.phase);
  // Each candidate costs a match over the whole sequence: with idle gaps, a candidate with less than
  // half the largest gap score cannot win the tie-break that decides between equal counts, and a
  // count of its own differs only at the ends (kept: the region's start, which decides on traces
  // whose gaps tell nothing).
  if (has_gaps && !aligned.empty()) {
    double top_score = 0;
    for (int64_t ph : phases) top_score = std::max(top_score, score[ph]);
    if (top_score > 0)
      std::erase_if(phases, [&](int64_t ph) { return ph != region.phase && 2 * score[ph] < top_score; });
  }
  // A training step ends with its optimizer step: when the step marks picked the cycle, the boundary
  // is right after the mark (the next step's data and zero_grad start the next iteration), whatever
  // the idle gaps say (an evaluation pass can be preceded by more idle time than a step).
  if (anchored != nullptr && !aligned.empty()) {
    const int64_t after_mark = phase_after_step_mark(aligned, *anchored);
    if (after_mark >= 0) phases = {after_mark};
  }
  std::sort(phases.begin(), phases.end());
  phases.erase(std::unique(phases.begin(), phases.end()), phases.end());
  return phases;
}

}  // namespace

std::optional<LoopFit> fit_loop(const Subsequence& sub, const SuffixIndex& index, const RepeatCandidate& p,
                                CleanCycle given, std::span<const int64_t> gap_before_ns,
                                const MinerOptions& options, const Subsequence& target, int64_t max_cycle_ops,
                                const StepAnchors* anchored) {
  const std::vector<int64_t> starts = nonoverlapping_starts(index, p);
  if (starts.size() < 2) return std::nullopt;
  const int64_t cycle_length = given.length > 0 ? given.length : cycle_of(starts);
  AlignedCycle aligned;
  align_clean_cycle(sub, p, given, starts, cycle_length, &aligned);
  if (given.begin >= 0 && sub.ops_in(given.begin, given.begin + cycle_length - 1) > max_cycle_ops)
    return std::nullopt;
  if (given.begin < 0 && !aligned.view.empty() &&
      sub.ops_in(aligned.view.data() - sub.symbols.data(),
                 aligned.view.data() - sub.symbols.data() + cycle_length - 1) > max_cycle_ops)
    return std::nullopt;

  // Boundary candidates: the offsets in the cycle with the largest total idle gap before them (the
  // interval between iterations), the start of the periodic region (extended backwards from the
  // first occurrence), and P's own start. The one yielding the most iterations wins, then the gap.
  const bool has_gaps = !gap_before_ns.empty();
  const std::vector<double> score = gap_scores(sub, aligned.view, cycle_length, gap_before_ns);
  std::vector<int64_t> phases = phases_by_gap(score, cycle_length, has_gaps);
  const std::optional<int64_t> first_in_target = first_occurrence_in_target(sub, p, starts.front(), target);
  if (!first_in_target) return std::nullopt;
  const int64_t first = *first_in_target;
  const Subsequence& t = target;
  // k0 in ops (Algorithm 1 counts a folded element's ops): half the cycle's.
  int64_t cycle_ops = cycle_length;
  if (given.begin >= 0) cycle_ops = sub.ops_in(given.begin, given.begin + cycle_length - 1);
  const int64_t k0 = options.max_extra_ops >= 0 ? options.max_extra_ops : std::max<int64_t>(1, cycle_ops / 2);
  if (aligned.view.empty() && whole_cycle_at(t, first, cycle_length))
    aligned.view = t.symbols.subspan(first, cycle_length);
  const PeriodicRegion region = walk_region_back(t, aligned.view, first, k0);
  phases = narrow_phases(std::move(phases), score, region, aligned.view, has_gaps, anchored);

  std::optional<LoopFit> best;
  for (int64_t phase : phases) {
    // The template cycle is a clean cycle (no extra ops: two occurrences of P one cycle apart)
    // rotated to the phase: read from the sequence at the phase instead, it could pick up an op
    // inserted into the next iteration.
    std::vector<int32_t> cycle;
    if (!aligned.view.empty()) {
      cycle.assign(aligned.view.begin() + phase, aligned.view.end());
      cycle.insert(cycle.end(), aligned.view.begin(), aligned.view.begin() + phase);
    } else {
      const int64_t at = region.start + ((phase - region.phase) % cycle_length + cycle_length) % cycle_length;
      if (!whole_cycle_at(t, at, cycle_length)) continue;
      cycle.assign(t.symbols.begin() + at, t.symbols.begin() + at + cycle_length);
    }
    LoopFit fit;
    fit.k0 = k0;
    fit.loop.cycle = std::move(cycle);
    fit.loop.pattern_length = p.length;
    fit.loop.pattern_count = p.count;
    fit.loop.phase = phase;
    // Anchored at the optimizer step, the template starts right after one: ops before a later start
    // that needs fewer extras (the tail of an evaluation pass that begins like the step) belong to the
    // previous step whatever idle time precedes them, so the later-start correction ignores gaps.
    fit.matches = match_over(target, fit.loop.cycle, k0,
                             anchored != nullptr ? std::span<const int64_t>{} : gap_before_ns);
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

}  // namespace strata::analysis::iterations::detail
