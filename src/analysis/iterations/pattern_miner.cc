#include "analysis/iterations/pattern_miner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <optional>
#include <string>

#include "analysis/iterations/loop_fit.h"
#include "analysis/iterations/loop_structure.h"
#include "analysis/iterations/miner_internal.h"

namespace strata::analysis::iterations {

namespace {

using detail::fit_loop;
using detail::kMaxFoldLevels;
using detail::LoopFit;
using detail::StepAnchors;
using detail::Subsequence;
using detail::SuffixIndex;

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

// The sequence's alphabet (its largest symbol + 1), or empty with the reason in `result` when the
// miner cannot index the sequence.
std::optional<int32_t> checked_alphabet(std::span<const int32_t> seq, MiningResult* result) {
  const int64_t n = static_cast<int64_t>(seq.size());
  if (n < 2) {
    result->error = "the main stream has " + std::to_string(n) + " op(s): nothing can repeat";
    result->ops_before = n;
    return std::nullopt;
  }
  if (n >= std::numeric_limits<int32_t>::max() / 2) {
    result->error = "the main stream has " + std::to_string(n) + " ops: more than this miner indexes (2^30)";
    result->ops_before = n;
    return std::nullopt;
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
    result->error = "negative op symbol in the sequence";
    return std::nullopt;
  }
  const int32_t alphabet = highest + 1;
  if (alphabet > std::numeric_limits<int32_t>::max() - 2 * kMaxFoldLevels - n) {
    result->error = "op symbols too large for the miner's alphabet";
    return std::nullopt;
  }
  return alphabet;
}

// What a further loop is mined from: the leftover stretches (not inside any iteration; iterations
// are ordered and disjoint) long enough to hold a few iterations, joined by separators.
void leftover_stretches(std::span<const int32_t> seq, const std::vector<IterationMatch>& iterations,
                        int32_t alphabet, int64_t min_repeats, Subsequence* sub) {
  const int64_t n = static_cast<int64_t>(seq.size());
  sub->barrier = alphabet + kMaxFoldLevels;
  int32_t separator = sub->barrier;
  auto add_stretch = [&](int64_t begin, int64_t end) {
    if (end - begin < 2 * min_repeats) return;
    if (!sub->storage.empty()) {
      sub->storage.push_back(separator++);
      sub->to_seq.push_back(-1);
    }
    sub->storage.insert(sub->storage.end(), seq.begin() + begin, seq.begin() + end);
    for (int64_t q = begin; q < end; ++q) sub->to_seq.push_back(static_cast<int32_t>(q));
  };
  int64_t from = 0;
  for (const auto& it : iterations) {
    add_stretch(from, it.first_op);
    from = it.last_op + 1;
  }
  add_stretch(from, n);
  sub->symbols = sub->storage;
  sub->alphabet = separator;
}

// Anchors decide only where they recur: at least min_repeats of them in what is mined.
bool anchors_recur(const Subsequence& sub, const StepAnchors& anchors, int64_t min_repeats) {
  int64_t count = 0;
  for (int64_t j = 0; j < sub.size(); ++j)
    count += sub.symbols[j] < sub.barrier && anchors.is_anchor[static_cast<size_t>(sub.symbols[j])];
  return count >= min_repeats;
}

// Whether a mined loop stands: enough iterations; a further loop must also hold a fair share of the
// `n` ops (and of the time, when the trace gives op times) and a cycle long enough to be a loop.
bool loop_stands(const Mined& mined, int loop_index, bool paper, int64_t n,
                 std::span<const int64_t> op_time_ns, double total_time, const MinerOptions& options) {
  const int64_t min_matches = paper ? 2 : options.min_repeats;
  int64_t ops_in = 0;
  for (const auto& m : mined.raw) ops_in += m.last - m.first + 1;
  if (static_cast<int64_t>(mined.raw.size()) < min_matches) return false;
  if (loop_index > 0 && (static_cast<double>(ops_in) < options.min_loop_share * static_cast<double>(n) ||
                         mined.cycle_ops < options.min_further_cycle_ops))
    return false;
  if (loop_index > 0 && total_time > 0) {
    double time_in = 0;
    for (const auto& m : mined.raw)
      for (int64_t q = m.first; q <= m.last; ++q)
        time_in += static_cast<double>(std::max<int64_t>(0, op_time_ns[q]));
    if (time_in < options.min_loop_time_share * total_time) return false;
  }
  return true;
}

// The notes on the dominant loop: how it was found (detected, or the given count's pattern) and
// where it was mined from (`mined_from` ops). Sets result->detected; returns the reading's
// ambiguity (a genuine alternative halves the confidence).
double describe_dominant_loop(const Mined& mined, int64_t mined_from, const MinerOptions& options,
                              std::string* notes, MiningResult* result) {
  char sample_note[160] = "";
  if (mined.sample_ops > 0)
    std::snprintf(sample_note, sizeof sample_note, " (mined on a sample of %lld of %lld ops in %d windows)",
                  static_cast<long long>(mined.sample_ops), static_cast<long long>(mined_from),
                  std::max(1, options.sample_windows));
  char buf[400];
  if (options.iterations > 0) {
    std::snprintf(buf, sizeof buf,
                  "iteration count given: pattern of %lld ops repeated %lld times (epsilon %lld)",
                  static_cast<long long>(mined.pattern.length), static_cast<long long>(mined.pattern.count),
                  static_cast<long long>(mined.eps_used));
    *notes += buf;
    *notes += sample_note;
    return 0;
  }
  result->detected = true;
  std::snprintf(buf, sizeof buf,
                "detected: a cycle of %lld ops (a pattern of %lld elements occurring %lld times), read as "
                "~%lld iterations explaining %.0f%% of the ops",
                static_cast<long long>(mined.cycle_ops), static_cast<long long>(mined.pattern.length),
                static_cast<long long>(mined.pattern.count),
                static_cast<long long>(mined.estimated_iterations), 100.0 * mined.explained);
  *notes += buf;
  *notes += sample_note;
  if (mined.by_anchor)
    *notes +=
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
    *notes += buf;
  }
  return mined.alternative ? 0.5 : 0.0;
}

// Once every loop is mined: the loops' nested structure and totals, the ops around the iterations,
// and the confidence (the share of the ops from the first to the last iteration inside one).
void summarize(int64_t n, int32_t alphabet,
               const std::vector<std::vector<detail::FoldedUnit>>& folded_per_loop, const std::string& notes,
               double ambiguity, MiningResult* result) {
  result->confidence = 0;
  if (result->iterations.empty()) {
    result->ops_before = n;
    if (result->error.empty()) result->error = "no repeated op pattern could be matched as iterations";
    result->confidence_note = notes;
    return;
  }
  for (size_t l = 0; l < result->loops.size(); ++l)
    result->loops[l].nested = detail::nested_structure(result->loops[l].cycle, folded_per_loop[l], alphabet);
  int64_t inside = 0;
  for (const auto& it : result->iterations) {
    inside += it.last_op - it.first_op + 1;
    result->loops[it.loop].iterations += 1;
    result->loops[it.loop].ops += it.last_op - it.first_op + 1;
  }
  result->ops_before = result->iterations.front().first_op;
  result->ops_after = n - 1 - result->iterations.back().last_op;
  result->ops_between = n - result->ops_before - result->ops_after - inside;
  const double explained = static_cast<double>(inside) / static_cast<double>(inside + result->ops_between);
  result->confidence = result->detected ? explained * (1.0 - ambiguity) : explained;
  char buf[160];
  std::snprintf(buf, sizeof buf,
                "%s%.1f%% of the ops from the first to the last iteration lie inside iterations",
                notes.empty() ? "" : "; ", 100.0 * explained);
  result->confidence_note = notes + buf;
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
  const std::optional<int32_t> checked = checked_alphabet(seq, &result);
  if (!checked) return result;
  const int32_t alphabet = *checked;
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
  // The dominant loop over the whole sequence, then further loops over what it leaves.
  for (int loop_index = 0; loop_index < std::max(1, options.max_loops); ++loop_index) {
    Subsequence sub;
    if (loop_index == 0) {
      sub.symbols = seq;
      sub.alphabet = alphabet;
    } else {
      leftover_stretches(seq, result.iterations, alphabet, options.min_repeats, &sub);
      if (static_cast<double>(sub.size()) < options.min_loop_share * static_cast<double>(n)) break;
    }
    if (sub.size() < 2) break;
    const bool paper = loop_index == 0 && options.iterations > 0;
    anchors.present = any_anchor && anchors_recur(sub, anchors, options.min_repeats);
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
    if (!loop_stands(mined, loop_index, paper, n, op_time_ns, total_time, options)) break;
    if (loop_index == 0) {
      result.sampled_ops = mined.sample_ops;
      ambiguity = describe_dominant_loop(mined, sub.size(), options, &notes, &result);
    }

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
    result.loops.push_back(std::move(mined.loop));
    folded_per_loop.push_back(std::move(mined.folded));
    std::sort(result.iterations.begin(), result.iterations.end(),
              [](const auto& a, const auto& b) { return a.first_op < b.first_op; });
    match_last.clear();
    for (const auto& it : result.iterations)
      match_last.push_back(it.trailing_extra_ops > 0 ? it.last_op - it.trailing_extra_ops : it.last_op);
    attach_between(seq, &result, match_last, attach_limits);
  }
  summarize(n, alphabet, folded_per_loop, notes, ambiguity, &result);
  return result;
}

}  // namespace strata::analysis::iterations
