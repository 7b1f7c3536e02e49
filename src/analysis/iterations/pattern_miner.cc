#include "analysis/iterations/pattern_miner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>

#include "analysis/iterations/loop_structure.h"
#include "analysis/iterations/miner_internal.h"

namespace strata::analysis::iterations {

namespace {

using detail::kMaxFoldLevels;
using detail::StepAnchors;
using detail::Subsequence;
using detail::SuffixIndex;

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
// iteration somewhere).
std::optional<LoopFit> fit_loop(const Subsequence& sub, const SuffixIndex& index, const RepeatCandidate& p,
                                CleanCycle given, std::span<const int64_t> gap_before_ns,
                                const MinerOptions& options, const Subsequence& target, int64_t max_cycle_ops,
                                const StepAnchors* anchored = nullptr) {
  const std::vector<int64_t> starts = detail::nonoverlapping_starts(index, p);
  if (starts.size() < 2) return std::nullopt;
  const int64_t cycle_length = given.length > 0 ? given.length : detail::cycle_of(starts);
  auto whole_cycle_at = [&](const Subsequence& in, int64_t begin) {
    if (begin < 0 || begin + cycle_length > in.size()) return false;
    for (int64_t j = begin; j < begin + cycle_length; ++j)
      if (in.symbols[j] >= in.barrier) return false;
    return true;
  };
  std::span<const int32_t> aligned;
  std::vector<int32_t> rotated;
  if (given.begin >= 0) {
    aligned = sub.symbols.subspan(given.begin, cycle_length);
    // Rotated to start where P does (the periodic region below is walked back from P's first
    // occurrence): the detection's cycle starts where its run does, which may be before P.
    const auto pattern = sub.symbols.subspan(p.position, p.length);
    for (int64_t e = 0; e < cycle_length; ++e) {
      bool fits = true;
      for (int64_t i = 0; i < p.length && fits; ++i) fits = pattern[i] == aligned[(e + i) % cycle_length];
      if (!fits) continue;
      rotated.assign(aligned.begin() + e, aligned.end());
      rotated.insert(rotated.end(), aligned.begin(), aligned.begin() + e);
      aligned = rotated;
      break;
    }
  } else {
    for (size_t k = 0; k + 1 < starts.size() && aligned.empty(); ++k)
      if (starts[k + 1] - starts[k] == cycle_length && whole_cycle_at(sub, starts[k]))
        aligned = sub.symbols.subspan(starts[k], cycle_length);
  }
  if (given.begin >= 0 && sub.ops_in(given.begin, given.begin + cycle_length - 1) > max_cycle_ops)
    return std::nullopt;
  if (given.begin < 0 && !aligned.empty() &&
      sub.ops_in(aligned.data() - sub.symbols.data(),
                 aligned.data() - sub.symbols.data() + cycle_length - 1) > max_cycle_ops)
    return std::nullopt;

  // Boundary candidates: the offsets in the cycle with the largest total idle gap before them (the
  // interval between iterations), the start of the periodic region (extended backwards from the
  // first occurrence), and P's own start. The one yielding the most iterations wins, then the gap.
  std::vector<double> score(cycle_length, 0.0);
  if (!gap_before_ns.empty() && !aligned.empty()) {
    for (const ApproximateMatch& m : detail::match_over(sub, aligned, 0, {})) {
      for (int64_t o = 0; o < cycle_length; ++o) {
        const int64_t at = sub.at(m.first + o);
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
  const auto pattern_begin = sub.symbols.begin() + p.position;
  int64_t first = starts.front();
  if (&target != &sub) {
    const int64_t mapped = t.element_of(sub.at(starts.front()));
    const int64_t limit = std::min(t.size(), mapped + p.length);
    first =
        std::search(t.symbols.begin(), t.symbols.begin() + limit, pattern_begin, pattern_begin + p.length) -
        t.symbols.begin();
    if (first >= limit)  // folded differently at a window edge: look further
      first = std::search(t.symbols.begin(), t.symbols.end(), pattern_begin, pattern_begin + p.length) -
              t.symbols.begin();
    if (first >= t.size()) return std::nullopt;
  }
  // The periodic region extends backwards from there over whole cycles. It is walked op by op
  // against a clean cycle aligned on `first` (from P's occurrences), with up to k0 inserted ops per
  // cycle as Algorithm 1 allows: an exact comparison with the op one cycle later stops at the first
  // inserted op, which on a trace without idle gaps (nothing else places the boundary) cuts the first
  // iteration in two. The walk stops at a cycle's (k0 + 1)-th op that does not fit, such as a set-up.
  // k0 in ops (Algorithm 1 counts a folded element's ops): half the cycle's.
  int64_t cycle_ops = cycle_length;
  if (given.begin >= 0) cycle_ops = sub.ops_in(given.begin, given.begin + cycle_length - 1);
  const int64_t k0 = options.max_extra_ops >= 0 ? options.max_extra_ops : std::max<int64_t>(1, cycle_ops / 2);
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
  // Each candidate costs a match over the whole sequence: with idle gaps, a candidate with less than
  // half the largest gap score cannot win the tie-break that decides between equal counts, and a
  // count of its own differs only at the ends (kept: the region's start, which decides on traces
  // whose gaps tell nothing).
  if (!gap_before_ns.empty() && !aligned.empty()) {
    double top_score = 0;
    for (int64_t ph : phases) top_score = std::max(top_score, score[ph]);
    if (top_score > 0)
      std::erase_if(phases, [&](int64_t ph) { return ph != region_phase && 2 * score[ph] < top_score; });
  }
  // A training step ends with its optimizer step: when the step marks picked the cycle, the boundary
  // is right after the mark (the next step's data and zero_grad start the next iteration), whatever
  // the idle gaps say (an evaluation pass can be preceded by more idle time than a step).
  if (anchored != nullptr && !aligned.empty()) {
    int64_t after_mark = -1;
    for (int64_t o = 0; o < cycle_length; ++o) {
      const int32_t x = aligned[o];
      const bool mark =
          x >= 0 && static_cast<size_t>(x) < anchored->is_anchor.size() && anchored->is_anchor[x];
      const int32_t y = aligned[(o + 1) % cycle_length];
      const bool next_mark =
          y >= 0 && static_cast<size_t>(y) < anchored->is_anchor.size() && anchored->is_anchor[y];
      if (mark && !next_mark) after_mark = (o + 1) % cycle_length;
    }
    if (after_mark >= 0) phases = {after_mark};
  }
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
    // Anchored at the optimizer step, the template starts right after one: ops before a later start
    // that needs fewer extras (the tail of an evaluation pass that begins like the step) belong to the
    // previous step whatever idle time precedes them, so the later-start correction ignores gaps.
    fit.matches = detail::match_over(target, fit.loop.cycle, k0,
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

// `windows` windows of budget / windows ops each, centred at evenly spread points of `whole`, joined
// by fresh separators; separators inside a window (stretch boundaries) are renumbered densely, so the
// suffix array's alphabet stays the op alphabet plus a few.
void make_sample(const Subsequence& whole, int64_t budget, int windows, int32_t barrier, Subsequence* out) {
  const int64_t n = whole.size();
  const int64_t k = windows;
  const int64_t w = budget / k;
  out->storage.reserve(static_cast<size_t>(w * k + k));
  out->to_seq.reserve(static_cast<size_t>(w * k + k));
  int32_t separator = barrier;
  int64_t prev_end = 0;
  for (int64_t p = 0; p < k; ++p) {
    const int64_t start = std::max(prev_end, std::min(n - w, (2 * p + 1) * n / (2 * k) - w / 2));
    if (p > 0) {
      out->storage.push_back(separator++);
      out->to_seq.push_back(-1);
    }
    for (int64_t q = start; q < start + w && q < n; ++q) {
      const int32_t symbol = whole.symbols[q];
      out->storage.push_back(symbol >= barrier ? separator++ : symbol);
      out->to_seq.push_back(symbol >= barrier ? -1 : static_cast<int32_t>(whole.at(q)));
    }
    prev_end = std::min(n, start + w);
  }
  out->alphabet = separator;
  out->barrier = barrier;
  out->symbols = out->storage;
}

struct Mined {
  RepeatCandidate pattern;
  int64_t estimated_iterations = 0;  // detection's reading over the sequence it was read from
  double explained = 0;
  std::optional<detail::Alternative> alternative;
  bool borderline = false;
  bool by_anchor = false;
  double rest = -1;
  int64_t eps_used = 0;
  Loop loop;                          // cycle: the template's ops
  std::vector<ApproximateMatch> raw;  // first, last: op indices; extra_ops: ops
  int64_t cycle_ops = 0;
  std::vector<detail::FoldedUnit> folded;
  int64_t sample_ops = 0;  // 0: mined on the whole (sub)sequence
};

enum class MineOutcome { kOk, kNoPattern, kNoFit };

constexpr double kMinSampleShare = 0.3;

// `whole` folded by each unit in turn, recording each run's copies: the sequence the final level's
// cycle is matched over.
struct FoldChain {
  std::vector<std::unique_ptr<Subsequence>> levels;
  std::vector<detail::FoldedUnit> units;
  const Subsequence& last(const Subsequence& whole) const { return levels.empty() ? whole : *levels.back(); }
};

void fold_whole(const Subsequence& whole, const detail::StructureChoice& choice, int32_t op_alphabet,
                std::span<const int32_t> ops, std::span<const int64_t> gap_before_ns,
                const StepAnchors& anchors, FoldChain* chain) {
  for (size_t l = 0; l < choice.units.size(); ++l) {
    const Subsequence& in = chain->last(whole);
    auto out = std::make_unique<Subsequence>();
    std::vector<int32_t> copies;
    detail::fold_runs(in, choice.units[l], op_alphabet + static_cast<int32_t>(l), gap_before_ns, out.get(),
                      &copies, &anchors);
    detail::FoldedUnit unit;
    unit.unit = choice.units[l];
    for (int32_t c : copies)
      if (c > 0) {
        unit.copies_min = unit.copies_min == 0 ? c : std::min<int64_t>(unit.copies_min, c);
        unit.copies_max = std::max<int64_t>(unit.copies_max, c);
      }
    // One copy's ops: the unit itself when it holds no folded element, else a slice of the run with
    // the least noise (its copies' ops divided evenly).
    const auto& u = choice.units[l];
    if (std::all_of(u.begin(), u.end(), [&](int32_t x) { return x < op_alphabet; })) {
      unit.ops = u;
    } else {
      int64_t best = -1;
      for (size_t j = 0; j < copies.size(); ++j)
        if (copies[j] > 0 && (best < 0 || out->noise[j] < out->noise[static_cast<size_t>(best)]))
          best = static_cast<int64_t>(j);
      if (best >= 0) {
        const int64_t b = out->at(best);
        const int64_t each = (out->at_last(best) - b + 1 - out->noise[static_cast<size_t>(best)]) /
                             copies[static_cast<size_t>(best)];
        unit.ops.assign(ops.begin() + b, ops.begin() + b + each);
      }
    }
    chain->units.push_back(std::move(unit));
    chain->levels.push_back(std::move(out));
  }
}

// Matches in `target` elements to op indices, extras as ops, and the template's ops (the first
// iteration matched without extras, else the first). Folded runs may have absorbed noise (an op
// inserted into a copy of the nested unit); noise found in every iteration (a copy that always
// differs a little, like an RNN's first time step) is the template's own, so an iteration's extra
// ops are its extra elements' ops plus the noise above the least any iteration has.
void to_ops(const Subsequence& target, std::span<const int32_t> ops, const LoopFit& fit, Mined* out) {
  out->raw.clear();
  std::vector<int64_t> noise(fit.matches.size(), 0);
  int64_t least_noise = std::numeric_limits<int64_t>::max();
  for (size_t k = 0; k < fit.matches.size(); ++k) {
    const ApproximateMatch& m = fit.matches[k];
    detail::Walk w;  // replay Algorithm 1 (greedy) for the matched elements
    if (!target.noise.empty() &&
        detail::walk(target.symbols.first(static_cast<size_t>(m.last) + 1), fit.loop.cycle, m.first,
                     std::numeric_limits<int64_t>::max() / 4, target.barrier, &target, &w))
      noise[k] = w.noise;
    least_noise = std::min(least_noise, noise[k]);
  }
  int64_t template_at = -1;
  for (size_t k = 0; k < fit.matches.size(); ++k) {
    const ApproximateMatch& m = fit.matches[k];
    const int64_t first = target.at(m.first);
    const int64_t last = target.at_last(m.last);
    const int64_t matched = detail::ops_matched(target, fit.loop.cycle, {m});
    const int64_t extra =
        (last - first + 1) - matched - (least_noise == std::numeric_limits<int64_t>::max() ? 0 : least_noise);
    out->raw.push_back({first, last, extra});
    if (template_at < 0 && extra == 0) template_at = static_cast<int64_t>(k);
  }
  if (template_at < 0 && !out->raw.empty()) template_at = 0;
  out->loop = fit.loop;
  out->loop.cycle.clear();
  if (template_at >= 0) {
    const ApproximateMatch& t = out->raw[static_cast<size_t>(template_at)];
    out->loop.cycle.assign(ops.begin() + t.first, ops.begin() + t.last + 1);
  }
  out->cycle_ops = static_cast<int64_t>(out->loop.cycle.size());
}

// Pattern (Criteria 2 and 3, or detection), cycle and matches for one loop over `whole`: on a sample
// when `whole` is longer than the sample budget, growing the sample until it shows a loop that the
// whole sequence confirms (see the header).
MineOutcome mine_loop(const Subsequence& whole, bool paper, int32_t op_alphabet, std::span<const int32_t> ops,
                      std::span<const int64_t> gap_before_ns, const MinerOptions& options,
                      const StepAnchors& anchors, Mined* out) {
  const int64_t n = whole.size();
  const int64_t whole_ops = std::max<int64_t>(1, whole.ops_in(0, n - 1));
  const int windows = std::max(1, options.sample_windows);
  const int64_t min_matches = paper ? 2 : options.min_repeats;
  const int32_t barrier = op_alphabet + kMaxFoldLevels;
  // The sample's fixed costs (suffix array, shortlist) should stay a small part of mining a
  // sequence of a few million ops too: at most a sixteenth of it, but no fewer than 32Ki ops.
  constexpr int64_t kMinScaledSample = int64_t{1} << 15;
  int64_t budget = options.sample_ops > kMinScaledSample
                       ? std::max(kMinScaledSample, std::min(options.sample_ops, n / 16))
                       : options.sample_ops;
  for (;;) {
    const bool exact = budget <= 0 || n <= budget || budget / windows < 2;
    Subsequence sample;
    if (!exact) make_sample(whole, budget, windows, barrier, &sample);
    const Subsequence& sub = exact ? whole : sample;
    const int64_t piece = budget / windows;
    // A window must hold a few iterations, or the sample's "cycle" may be a piece of one.
    const int64_t max_cycle = exact ? std::numeric_limits<int64_t>::max() : piece / 4;
    Mined mined;
    std::optional<LoopFit> fit;
    FoldChain chain;
    detail::StructureChoice choice;  // owns the folded levels sub_level points into
    const Subsequence* target = &whole;
    const Subsequence* sub_level = &sub;
    std::vector<ApproximateMatch> in_sample;
    if (paper && exact) {
      SuffixIndex index = detail::build_index(sub.symbols, sub.alphabet);
      auto pattern = detail::select_for_count(index, n, options.iterations, options.epsilon, &mined.eps_used);
      if (!pattern) return MineOutcome::kNoPattern;
      mined.pattern = *pattern;
      fit = fit_loop(sub, index, *pattern, {}, gap_before_ns, options, whole, max_cycle);
    } else {
      if (!detail::choose_structure(sub, op_alphabet, options, gap_before_ns, anchors, &choice)) {
        if (exact) return MineOutcome::kNoPattern;
        budget = budget > n / 2 ? n : 2 * budget;
        continue;
      }
      // With step marks in the sequence, a cycle without one is nested structure: a sample whose
      // windows hold too few steps for the enclosing cycle to repeat shows only the nested one.
      if (!exact && anchors.present && choice.chosen.anchors == 0) {
        budget = budget > n / 2 ? n : 2 * budget;
        continue;
      }
      const detail::Level& level = choice.levels.back();
      mined.pattern = choice.chosen.node;
      mined.estimated_iterations = choice.chosen.iterations;
      mined.explained = choice.chosen.explained;
      mined.alternative = choice.alternative;
      mined.borderline = choice.borderline;
      mined.by_anchor = choice.by_anchor;
      mined.rest = choice.rest;
      fold_whole(whole, choice, op_alphabet, ops, gap_before_ns, anchors, &chain);
      target = &chain.last(whole);
      sub_level = level.seq;
      fit = fit_loop(*level.seq, level.index, choice.chosen.node, {choice.chosen.begin, choice.chosen.length},
                     gap_before_ns, options, *target, max_cycle, choice.by_anchor ? &anchors : nullptr);
      if (fit && !exact) in_sample = detail::match_over(*level.seq, fit->loop.cycle, fit->k0, gap_before_ns);
    }
    if (exact) {
      if (!fit) return MineOutcome::kNoFit;
    } else if (fit) {
      const int64_t sample_ops = std::max<int64_t>(1, sub.ops_in(0, sub.size() - 1));
      const double sample_share =
          static_cast<double>(detail::ops_inside(*sub_level, in_sample)) / static_cast<double>(sample_ops);
      const double share =
          static_cast<double>(detail::ops_inside(*target, fit->matches)) / static_cast<double>(whole_ops);
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
        mined.eps_used = eps;
      }
      if (!confirmed) fit.reset();
    }
    if (!fit) {
      budget = budget > n / 2 ? n : 2 * budget;
      continue;
    }
    to_ops(*target, ops, *fit, &mined);
    mined.loop.fold_levels = static_cast<int>(chain.units.size());
    mined.loop.by_anchor = mined.by_anchor;
    mined.folded = std::move(chain.units);
    mined.sample_ops = exact ? 0 : piece * windows;
    *out = std::move(mined);
    return MineOutcome::kOk;
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
  if (alphabet > std::numeric_limits<int32_t>::max() - 2 * kMaxFoldLevels - n) {
    result.error = "op symbols too large for the miner's alphabet";
    return result;
  }
  StepAnchors anchors;
  anchors.ops = seq;
  anchors.is_anchor.assign(static_cast<size_t>(alphabet), 0);
  bool any_anchor = false;
  for (int32_t a : options.step_anchor_symbols)
    if (a >= 0 && a < alphabet) anchors.is_anchor[static_cast<size_t>(a)] = 1, any_anchor = true;

  std::vector<int64_t> match_last;
  std::vector<int64_t> attach_limits;
  std::vector<std::vector<detail::FoldedUnit>> folded_per_loop;
  std::string notes;
  double ambiguity = 0;
  for (int loop_index = 0; loop_index < std::max(1, options.max_loops); ++loop_index) {
    Subsequence sub;
    if (loop_index == 0) {
      sub.symbols = seq;
      sub.alphabet = alphabet;
    } else {
      // Leftover stretches (not inside any iteration; iterations are ordered and disjoint) long
      // enough to hold a few iterations.
      sub.barrier = alphabet + kMaxFoldLevels;
      int32_t separator = sub.barrier;
      auto add_stretch = [&](int64_t begin, int64_t end) {
        if (end - begin < 2 * options.min_repeats) return;
        if (!sub.storage.empty()) {
          sub.storage.push_back(separator++);
          sub.to_seq.push_back(-1);
        }
        sub.storage.insert(sub.storage.end(), seq.begin() + begin, seq.begin() + end);
        for (int64_t q = begin; q < end; ++q) sub.to_seq.push_back(static_cast<int32_t>(q));
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
    // Anchors decide only where they recur: at least min_repeats of them in what is mined.
    anchors.present = false;
    if (any_anchor) {
      int64_t count = 0;
      for (int64_t j = 0; j < sub.size(); ++j)
        count += sub.symbols[j] < sub.barrier && anchors.is_anchor[static_cast<size_t>(sub.symbols[j])];
      anchors.present = count >= options.min_repeats;
    }
    Mined mined;
    const MineOutcome outcome = mine_loop(sub, paper, alphabet, seq, gap_before_ns, options, anchors, &mined);
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
    const int64_t min_matches = paper ? 2 : options.min_repeats;
    int64_t ops_in = 0;
    for (const auto& m : mined.raw) ops_in += m.last - m.first + 1;
    if (static_cast<int64_t>(mined.raw.size()) < min_matches) break;
    if (loop_index > 0 && (static_cast<double>(ops_in) < options.min_loop_share * static_cast<double>(n) ||
                           mined.cycle_ops < options.min_further_cycle_ops))
      break;
    if (loop_index > 0 && total_time > 0) {
      double time_in = 0;
      for (const auto& m : mined.raw)
        for (int64_t q = m.first; q <= m.last; ++q)
          time_in += static_cast<double>(std::max<int64_t>(0, op_time_ns[q]));
      if (time_in < options.min_loop_time_share * total_time) break;
    }
    if (loop_index == 0) result.sampled_ops = mined.sample_ops;
    char sample_note[160] = "";
    if (mined.sample_ops > 0)
      std::snprintf(sample_note, sizeof sample_note, " (mined on a sample of %lld of %lld ops in %d windows)",
                    static_cast<long long>(mined.sample_ops), static_cast<long long>(sub.size()),
                    std::max(1, options.sample_windows));

    mined.loop.epsilon = mined.eps_used;
    const int32_t loop_id = static_cast<int32_t>(result.loops.size());
    attach_limits.push_back(options.attach_limit >= 0 ? options.attach_limit : 2 * mined.cycle_ops);
    for (const auto& m : mined.raw) {
      IterationMatch it;
      it.first_op = m.first;
      it.last_op = m.last;
      it.loop = loop_id;
      it.inner_extra_ops = m.extra_ops;
      result.iterations.push_back(it);
    }
    char buf[400];
    if (loop_index == 0 && options.iterations <= 0) {
      result.detected = true;
      std::snprintf(
          buf, sizeof buf,
          "detected: a cycle of %lld ops (a pattern of %lld elements occurring %lld times), read as "
          "~%lld iterations explaining %.0f%% of the ops",
          static_cast<long long>(mined.cycle_ops), static_cast<long long>(mined.pattern.length),
          static_cast<long long>(mined.pattern.count), static_cast<long long>(mined.estimated_iterations),
          100.0 * mined.explained);
      notes += buf;
      notes += sample_note;
      if (mined.by_anchor)
        notes +=
            "; the iteration holds one training-step mark (optimizer step): nested cycles without one are "
            "structure inside it";
      if (mined.alternative) {
        std::snprintf(buf, sizeof buf, "; alternative reading: a cycle of %lld ops read as %lld iterations%s",
                      static_cast<long long>(mined.alternative->cycle_ops),
                      static_cast<long long>(mined.alternative->iterations),
                      mined.borderline
                          ? " (whether the finer cycle is nested in the coarser one is a close call: "
                            "give --iterations N to settle it)"
                          : "");
        notes += buf;
      }
      // Stash the ambiguity for the confidence below: a genuine alternative halves it.
      ambiguity = mined.alternative ? 0.5 : 0.0;
    } else if (loop_index == 0) {
      std::snprintf(buf, sizeof buf,
                    "iteration count given: pattern of %lld ops repeated %lld times (epsilon %lld)",
                    static_cast<long long>(mined.pattern.length), static_cast<long long>(mined.pattern.count),
                    static_cast<long long>(mined.eps_used));
      notes += buf;
      notes += sample_note;
    }
    result.loops.push_back(std::move(mined.loop));
    folded_per_loop.push_back(std::move(mined.folded));
    std::sort(result.iterations.begin(), result.iterations.end(),
              [](const auto& a, const auto& b) { return a.first_op < b.first_op; });
    match_last.clear();
    for (const auto& it : result.iterations)
      match_last.push_back(it.trailing_extra_ops > 0 ? it.last_op - it.trailing_extra_ops : it.last_op);
    attach_between(seq, &result, match_last, attach_limits);
  }

  result.confidence = 0;
  if (result.iterations.empty()) {
    result.ops_before = n;
    if (result.error.empty()) result.error = "no repeated op pattern could be matched as iterations";
    result.confidence_note = notes;
    return result;
  }
  for (size_t l = 0; l < result.loops.size(); ++l)
    result.loops[l].nested = detail::nested_structure(result.loops[l].cycle, folded_per_loop[l], alphabet);
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

}  // namespace strata::analysis::iterations
