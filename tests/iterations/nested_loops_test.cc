// Generated training loops with nested repetition (issue 12): RNN-like inner repeats of fixed or
// varying count, gradient accumulation, an evaluation pass every k steps, noise, with and without
// idle gaps at step boundaries and optimizer-step marks, from 10^3 to 10^6 ops here (10^7 with
// STRATA_ITER_MAX_OPS=10000000, scripts/iterations_scale.sh). Checked against the generator's
// ground truth (every step's first op, eval and noise flags, the nested count range), against an
// exhaustive reference for the iteration's period on the smaller sizes, and sampled mining against
// the exact (whole-sequence) mining.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "analysis/iterations/pattern_miner.h"

namespace strata::analysis::iterations {
namespace {

using Seq = std::vector<int32_t>;

// One training step: zero_grad, `grad_accum` micro-batches (pre, unit x r, post; r drawn from
// [r_min, r_max] per micro-batch), optimizer. An evaluation pass (eval_batches copies of eval_batch)
// after every eval_every-th step.
struct Spec {
  Seq zero_grad, pre, unit, post, optimizer, eval_batch;
  int r_min = 1, r_max = 1;
  int grad_accum = 1;
  int eval_every = 0;
  int eval_batches = 1;
  double noise = 0;     // share of steps with one inserted op (a symbol no loop uses)
  bool gaps = true;     // an idle gap before each step's first op
  int32_t anchor = -1;  // the optimizer-step symbol, when the trace marks it
};

struct Generated {
  Seq seq;
  std::vector<int64_t> gaps;
  std::vector<int64_t> starts;  // first op of each step
  std::set<int64_t> flagged;    // steps with an inserted op or followed by an evaluation pass
  int64_t step_ops = 0;         // ops of a clean step with r = r_min (the period when r is fixed)
};

Seq random_ops(std::mt19937& rng, size_t n, int32_t base, int32_t range) {
  for (;;) {
    Seq s(n);
    for (auto& x : s) x = base + static_cast<int32_t>(rng() % range);
    bool primitive = true;
    for (size_t p = 1; p < n && primitive; ++p)
      if (n % p == 0 && std::equal(s.begin() + p, s.end(), s.begin())) primitive = false;
    if (primitive) return s;
  }
}

Generated generate(std::mt19937& rng, const Spec& spec, int64_t target_ops) {
  Generated g;
  auto add = [&](const Seq& ops, int64_t first_gap) {
    for (size_t j = 0; j < ops.size(); ++j) {
      g.seq.push_back(ops[j]);
      g.gaps.push_back(j == 0 ? first_gap : 10);
    }
  };
  add(random_ops(rng, 20, 900, 50), 0);  // set-up
  const int64_t boundary_gap = spec.gaps ? 5000 : 10;
  g.step_ops = static_cast<int64_t>(spec.zero_grad.size() + spec.optimizer.size()) +
               spec.grad_accum *
                   static_cast<int64_t>(spec.pre.size() + spec.r_min * spec.unit.size() + spec.post.size());
  std::vector<int64_t> evals;
  std::set<int64_t> noisy;
  for (int64_t step = 0; static_cast<int64_t>(g.seq.size()) < target_ops || step < 5; ++step) {
    Seq ops = spec.zero_grad;
    for (int m = 0; m < spec.grad_accum; ++m) {
      ops.insert(ops.end(), spec.pre.begin(), spec.pre.end());
      const int r = spec.r_min + static_cast<int>(rng() % (spec.r_max - spec.r_min + 1));
      for (int k = 0; k < r; ++k) ops.insert(ops.end(), spec.unit.begin(), spec.unit.end());
      ops.insert(ops.end(), spec.post.begin(), spec.post.end());
    }
    ops.insert(ops.end(), spec.optimizer.begin(), spec.optimizer.end());
    if (rng() % 1000 < spec.noise * 1000) {  // anywhere inside the step, inner runs included
      ops.insert(ops.begin() + 1 + static_cast<int64_t>(rng() % (ops.size() - 1)),
                 800 + static_cast<int32_t>(rng() % 20));
      g.flagged.insert(step);
      noisy.insert(step);
    }
    g.starts.push_back(static_cast<int64_t>(g.seq.size()));
    add(ops, boundary_gap);
    if (spec.eval_every > 0 && (step + 1) % spec.eval_every == 0) {
      for (int b = 0; b < spec.eval_batches; ++b) add(spec.eval_batch, b == 0 ? 300 : 10);
      g.flagged.insert(step);
      evals.push_back(step);
    }
  }
  // After the last step, an evaluation pass is told apart from tear-down only when an identical
  // one followed an earlier step.
  if (evals.size() == 1 && evals[0] + 1 == static_cast<int64_t>(g.starts.size()) && !noisy.count(evals[0]))
    g.flagged.erase(evals[0]);
  add(random_ops(rng, 7, 950, 40), boundary_gap + 2000);
  return g;
}

// Exhaustive reference for the iteration's period (fixed nested counts): for every period p, the
// share of ops inside tandem squares of period p (two copies back to back); the iteration's period
// is the shortest whose squares cover all but MinerOptions::nested_rest_share of what the best
// period covers, and with step marks the shortest covering at least count_preference of the best
// whose unit holds exactly one mark. O(n^2): small sequences only.
int64_t reference_period(const Seq& s, int32_t anchor) {
  const int64_t n = static_cast<int64_t>(s.size());
  std::vector<double> cover(static_cast<size_t>(n / 3 + 1), 0.0);
  std::vector<int64_t> square_at(static_cast<size_t>(n / 3 + 1), -1);
  std::vector<int32_t> agree(static_cast<size_t>(n) + 1, 0);
  double best = 0;
  for (int64_t p = 1; p <= n / 3; ++p) {
    agree[static_cast<size_t>(n - p)] = 0;
    for (int64_t i = n - p - 1; i >= 0; --i) agree[i] = s[i] == s[i + p] ? agree[i + 1] + 1 : 0;
    int64_t covered = 0;
    int64_t until = 0;
    for (int64_t i = 0; i + 2 * p <= n; ++i) {
      if (agree[i] < p) continue;
      if (square_at[p] < 0) square_at[p] = i;
      covered += std::max<int64_t>(0, i + 2 * p - std::max(until, i));
      until = std::max(until, i + 2 * p);
    }
    cover[p] = static_cast<double>(covered) / static_cast<double>(n);
    best = std::max(best, cover[p]);
  }
  const MinerOptions defaults;
  for (int64_t p = 1; p <= n / 3; ++p) {
    if (square_at[p] < 0) continue;
    if (anchor < 0) {
      if (cover[p] >= best - defaults.nested_rest_share) return p;
      continue;
    }
    const auto unit = s.begin() + square_at[p];
    if (cover[p] >= defaults.count_preference * best && std::count(unit, unit + p, anchor) == 1) return p;
  }
  return 0;
}

void expect_steps(const Generated& g, const MiningResult& r, const std::string& what) {
  // On a count mismatch, the first step no iteration starts at, with the iterations around it.
  std::string missing;
  for (size_t t = 0; t < g.starts.size() && missing.empty() && r.iterations.size() != g.starts.size(); ++t) {
    if (std::any_of(r.iterations.begin(), r.iterations.end(),
                    [&](const IterationMatch& m) { return m.first_op == g.starts[t]; }))
      continue;
    const int64_t end = t + 1 < g.starts.size() ? g.starts[t + 1] : static_cast<int64_t>(g.seq.size());
    missing = "\nno iteration at step " + std::to_string(t) + " (op " + std::to_string(g.starts[t]) + "):";
    for (int64_t q = g.starts[t]; q < end; ++q) missing += " " + std::to_string(g.seq[q]);
    missing += "\niterations around it:";
    for (const auto& m : r.iterations)
      if (m.last_op >= g.starts[t] - 100 && m.first_op <= end + 100)
        missing += " [" + std::to_string(m.first_op) + "-" + std::to_string(m.last_op) + "]";
  }
  ASSERT_EQ(r.iterations.size(), g.starts.size())
      << what << ": " << r.error << " " << r.confidence_note << missing;
  for (size_t t = 0; t < r.iterations.size(); ++t) {
    ASSERT_EQ(r.iterations[t].first_op, g.starts[t]) << what << " step " << t << ": " << r.confidence_note;
    EXPECT_EQ(r.iterations[t].flagged(), g.flagged.count(static_cast<int64_t>(t)) > 0)
        << what << " step " << t;
  }
}

void expect_same(const MiningResult& a, const MiningResult& b, const std::string& what) {
  ASSERT_EQ(a.iterations.size(), b.iterations.size()) << what;
  for (size_t t = 0; t < a.iterations.size(); ++t) {
    ASSERT_EQ(a.iterations[t].first_op, b.iterations[t].first_op) << what << " step " << t;
    ASSERT_EQ(a.iterations[t].last_op, b.iterations[t].last_op) << what << " step " << t;
    ASSERT_EQ(a.iterations[t].inner_extra_ops, b.iterations[t].inner_extra_ops) << what << " step " << t;
  }
  EXPECT_EQ(a.ops_before, b.ops_before) << what;
  EXPECT_EQ(a.ops_after, b.ops_after) << what;
}

// The nested unit is reported inside the iteration, with the counts generated.
void expect_nested(const Spec& spec, const MiningResult& r, const std::string& what_spec) {
  ASSERT_FALSE(r.loops.empty()) << what_spec;
  std::string what = what_spec + "\nnested:";
  for (const NestedRepeat& n : r.loops[0].nested)
    what += " [at " + std::to_string(n.offset) + " depth " + std::to_string(n.depth) + ": " +
            std::to_string(n.unit_ops) + " ops x" + std::to_string(n.copies) + " (" +
            std::to_string(n.copies_min) + "-" + std::to_string(n.copies_max) + ")" +
            (n.folded ? " folded" : "") + "]";
  bool found = false;
  for (const NestedRepeat& n : r.loops[0].nested) {
    if (n.unit_ops != static_cast<int64_t>(spec.unit.size())) continue;
    found = true;
    if (spec.noise > 0) continue;  // an op inserted between two copies splits their run
    EXPECT_GE(n.copies_min, spec.r_min) << what;
    EXPECT_LE(n.copies_max, spec.r_max) << what;
  }
  EXPECT_TRUE(found || spec.r_max < 2) << what << ": no nested unit of " << spec.unit.size() << " ops";
}

Spec random_spec(std::mt19937& rng, bool anchors) {
  Spec s;
  s.zero_grad = {300};
  s.unit = random_ops(rng, 3 + rng() % 12, 100, 30);
  s.r_min = 2 + static_cast<int>(rng() % 10);
  s.r_max = rng() % 2 ? s.r_min : s.r_min + 1 + static_cast<int>(rng() % 6);
  const int64_t inner = static_cast<int64_t>(s.unit.size()) * s.r_min;
  if (anchors) {
    // Any other share: the optimizer-step mark decides (long sequences leave little around the RNN).
    s.pre = random_ops(rng, 2 + rng() % 10, 0, 40);
    s.post = random_ops(rng, 1 + rng() % 8, 200, 40);
    s.optimizer = {310};
    s.anchor = 310;
    s.grad_accum = rng() % 3 == 0 ? 2 + static_cast<int>(rng() % 3) : 1;
  } else {
    // Structure alone: the ops around the nested run are a clear share of the step (>= 40%).
    const int64_t around = std::max<int64_t>(4, inner * (7 + static_cast<int64_t>(rng() % 10)) / 10);
    s.pre = random_ops(rng, static_cast<size_t>(around / 2), 0, 40);
    s.post = random_ops(rng, static_cast<size_t>(around - around / 2), 200, 40);
    s.optimizer = random_ops(rng, 1 + rng() % 3, 310, 10);
  }
  s.eval_every = rng() % 2 ? 3 + static_cast<int>(rng() % 8) : 0;
  s.eval_batch = random_ops(rng, 2 + rng() % 4, 400, 30);
  s.eval_batches = 1 + static_cast<int>(rng() % 3);
  s.noise = rng() % 3 == 0 ? 0.0 : 0.1;
  s.gaps = rng() % 4 != 0;
  return s;
}

// The evaluation pass must stay a small extra block next to the steps it follows (under a tenth of
// them in ops), or "k steps and an eval" is itself a fair reading of the loop (docs/iterations.md).
bool eval_is_small(const Spec& s, int64_t step_ops) {
  const int64_t eval_ops = static_cast<int64_t>(s.eval_batch.size()) * s.eval_batches;
  return s.eval_every == 0 || eval_ops * 10 < step_ops * s.eval_every;
}

void run_round(std::mt19937& rng, bool anchors, int64_t target_ops, bool brute, bool compare_exact,
               const std::string& what) {
  Spec spec;
  Generated g;
  do {
    spec = random_spec(rng, anchors);
    g = generate(rng, spec, target_ops);
  } while (!eval_is_small(spec, g.step_ops));
  const std::string what_spec =
      what + " [unit " + std::to_string(spec.unit.size()) + " x" + std::to_string(spec.r_min) + "-" +
      std::to_string(spec.r_max) + ", around " + std::to_string(spec.pre.size() + spec.post.size()) + "+" +
      std::to_string(spec.zero_grad.size() + spec.optimizer.size()) + ", accum " +
      std::to_string(spec.grad_accum) + ", eval every " + std::to_string(spec.eval_every) + " x" +
      std::to_string(spec.eval_batches) + "x" + std::to_string(spec.eval_batch.size()) + ", noise " +
      std::to_string(spec.noise) + (spec.gaps ? ", gaps" : "") + (anchors ? ", marks" : "") + ", " +
      std::to_string(g.starts.size()) + " steps]";
  MinerOptions o;
  if (anchors) o.step_anchor_symbols = {spec.anchor};
  const MiningResult r =
      mine_iterations(g.seq, spec.gaps ? std::span<const int64_t>(g.gaps) : std::span<const int64_t>{}, o);
  expect_steps(g, r, what_spec);
  expect_nested(spec, r, what_spec);
  if (brute && spec.r_min == spec.r_max && spec.noise == 0) {
    const int64_t p = reference_period(g.seq, spec.anchor);
    EXPECT_EQ(p, g.step_ops) << what_spec << ": the reference disagrees with the generator";
    ASSERT_FALSE(r.loops.empty());
    EXPECT_EQ(static_cast<int64_t>(r.loops[0].cycle.size()), p) << what_spec;
  }
  if (compare_exact && r.sampled_ops > 0) {
    MinerOptions exact = o;
    exact.sample_ops = 0;
    expect_same(r,
                mine_iterations(
                    g.seq, spec.gaps ? std::span<const int64_t>(g.gaps) : std::span<const int64_t>{}, exact),
                what_spec + " sampled vs exact");
  }
}

int64_t max_ops() {
  const char* env = std::getenv("STRATA_ITER_MAX_OPS");
  return env != nullptr ? std::max<int64_t>(1000, std::atoll(env)) : 1'000'000;
}

TEST(NestedLoops, SmallSizesAgainstExhaustiveReference) {
  std::mt19937 rng(12);
  for (int round = 0; round < 80; ++round) {
    const int64_t ops = round % 2 ? 1000 : 4000;
    run_round(rng, round % 4 == 3, ops, true, false,
              "round " + std::to_string(round) + " (" + std::to_string(ops) + " ops)");
  }
}

TEST(NestedLoops, WithStepMarks) {
  std::mt19937 rng(34);
  for (int round = 0; round < 60; ++round)
    run_round(rng, true, round % 2 ? 2000 : 10000, round < 20, false, "round " + std::to_string(round));
}

// Sampled mining (sequences over 256Ki ops) against the exact method at 10^5 and 10^6 ops (the exact
// method's whole-sequence suffix array and readings are what sampling avoids: one exact 10^6 round);
// beyond, the generator's ground truth only.
TEST(NestedLoops, LargeSizesSampledEqualsExact) {
  std::mt19937 rng(56);
  for (int64_t ops = 100'000; ops <= max_ops(); ops *= 10)
    for (int round = 0; round < (ops >= 1'000'000 ? 2 : 4); ++round)
      run_round(rng, round % 2 == 1, ops, false, ops < 1'000'000 || (ops == 1'000'000 && round == 0),
                std::to_string(ops) + " ops, round " + std::to_string(round));
}

// The range of run lengths: 100,000 steps (with STRATA_ITER_MAX_OPS >= 10^7; 10,000 here),
// each a small RNN-like step with 4-8 time steps and an evaluation pass every 1,000 steps, once
// with the optimizer-step mark and once by structure alone.
TEST(NestedLoops, HundredThousandSteps) {
  const int64_t steps = max_ops() >= 10'000'000 ? 100'000 : 10'000;
  for (const bool marks : {true, false}) {
    std::mt19937 rng(marks ? 100 : 101);
    Spec spec;
    spec.zero_grad = {300};
    spec.pre = random_ops(rng, 10, 0, 40);
    spec.unit = random_ops(rng, 6, 100, 30);
    spec.r_min = 4;
    spec.r_max = 8;
    spec.post = random_ops(rng, 12, 200, 40);
    spec.optimizer = {310};
    spec.eval_every = 1000;
    spec.eval_batch = random_ops(rng, 5, 400, 30);
    spec.noise = 0.01;
    spec.anchor = marks ? 310 : -1;
    // Average step: 1 + 10 + 6 x 6 + 12 + 1 = 60 ops.
    const Generated g = generate(rng, spec, steps * 60);
    MinerOptions o;
    if (marks) o.step_anchor_symbols = {310};
    const MiningResult r = mine_iterations(g.seq, g.gaps, o);
    const std::string what = std::to_string(g.starts.size()) + " steps" + (marks ? " with marks" : "");
    EXPECT_GT(r.sampled_ops, 0) << what;
    expect_steps(g, r, what);
    expect_nested(spec, r, what);
  }
}

// Five steps of two micro-batches after a set-up that repeats one op 40 times (a data set built batch
// by batch: torch.randint x40): once the micro-batches are folded, the set-up's run is most of the
// elements and the steps a few, so the readings of a folded level must be weighed in ops (the steps
// hold most of them), not in elements. Before, the step was not even a reading there and the
// micro-batches were read as the iterations.
TEST(NestedLoops, FewStepsAfterARepetitiveSetUp) {
  std::mt19937 rng(5);
  Spec spec;
  spec.zero_grad = {300};
  spec.pre = random_ops(rng, 12, 0, 40);
  spec.unit = random_ops(rng, 14, 100, 30);
  spec.r_min = spec.r_max = 12;
  spec.post = random_ops(rng, 20, 200, 40);
  spec.optimizer = {310};
  spec.anchor = 310;
  spec.grad_accum = 2;
  spec.eval_every = 2;
  spec.eval_batch = random_ops(rng, 7, 400, 30);
  for (const int64_t steps : {5, 6, 9}) {
    Generated g = generate(rng, spec, 0);  // 5 steps at least
    while (static_cast<int64_t>(g.starts.size()) < steps)
      g = generate(rng, spec, static_cast<int64_t>(g.seq.size()) + 1);
    // The set-up: one op 40 times, in front of everything.
    Generated h;
    h.seq.assign(40, 960);
    h.gaps.assign(40, 10);
    h.seq.insert(h.seq.end(), g.seq.begin(), g.seq.end());
    h.gaps.insert(h.gaps.end(), g.gaps.begin(), g.gaps.end());
    for (int64_t s : g.starts) h.starts.push_back(s + 40);
    h.flagged = g.flagged;
    MinerOptions o;
    o.step_anchor_symbols = {310};
    const MiningResult r = mine_iterations(h.seq, h.gaps, o);
    expect_steps(h, r, std::to_string(h.starts.size()) + " steps");
  }
}

}  // namespace
}  // namespace strata::analysis::iterations
