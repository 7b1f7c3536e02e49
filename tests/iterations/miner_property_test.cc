// Property tests of the miner on generated op sequences (random periods, noise insertions, multiple
// loops), against brute-force references: substring counting for Criteria 2 and 3, and the
// generator's own ground truth for the iteration boundaries.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <vector>

#include "analysis/iterations/pattern_miner.h"

namespace strata::iterations {
namespace {

using Seq = std::vector<int32_t>;

int64_t count_occurrences(const Seq& s, int64_t pos, int64_t len) {
  int64_t c = 0;
  for (int64_t i = 0; i + len <= static_cast<int64_t>(s.size()); ++i)
    if (std::equal(s.begin() + i, s.begin() + i + len, s.begin() + pos)) ++c;
  return c;
}

// Brute force of the paper's selection: the longest substring with i - eps < count <= i and
// length < |S| / i, eps doubling. Returns (length, eps used).
std::optional<std::pair<int64_t, int64_t>> brute_select(const Seq& s, int64_t i, int64_t eps) {
  const int64_t n = static_cast<int64_t>(s.size());
  const int64_t max_len = (n + i - 1) / i - 1;
  for (;;) {
    int64_t best = 0;
    for (int64_t pos = 0; pos < n; ++pos)
      for (int64_t len = 1; len <= max_len && pos + len <= n; ++len) {
        const int64_t c = count_occurrences(s, pos, len);
        if (c >= 2 && c <= i && c > i - eps) best = std::max(best, len);
      }
    if (best > 0) return std::make_pair(best, eps);
    if (eps >= i) return std::nullopt;
    eps *= 2;
  }
}

Seq random_seq(std::mt19937& rng, size_t n, int32_t k) {
  Seq s(n);
  for (auto& c : s) c = static_cast<int32_t>(rng() % k);
  return s;
}

TEST(MinerCriteria, SelectionMatchesBruteForce) {
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    Seq s;
    if (round % 2 == 0) {
      s = random_seq(rng, 5 + rng() % 40, 2 + rng() % 3);
    } else {  // noisy repetition, closer to real traces
      Seq cycle = random_seq(rng, 2 + rng() % 6, 4);
      const int reps = 2 + static_cast<int>(rng() % 6);
      for (int r = 0; r < reps; ++r) {
        s.insert(s.end(), cycle.begin(), cycle.end());
        if (rng() % 3 == 0) s.push_back(4 + static_cast<int32_t>(rng() % 2));
      }
    }
    const int64_t i = 2 + rng() % 6;
    const int64_t eps = 1 + rng() % 3;
    int64_t eps_used = 0;
    auto got = select_pattern_for_count(s, 6, i, eps, &eps_used);
    auto want = brute_select(s, i, eps);
    ASSERT_EQ(got.has_value(), want.has_value()) << "round " << round;
    if (!got) continue;
    EXPECT_EQ(got->length, want->first) << "round " << round;
    EXPECT_EQ(eps_used, want->second) << "round " << round;
    // The pattern returned really repeats `count` times, inside Criterion 2's window.
    EXPECT_EQ(count_occurrences(s, got->position, got->length), got->count) << "round " << round;
    EXPECT_LE(got->count, i);
    EXPECT_GT(got->count, i - eps_used);
    EXPECT_LT(got->length * i, static_cast<int64_t>(s.size()) + i);
  }
}

TEST(MinerCriteria, RepeatProfileMatchesBruteForce) {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const Seq s = random_seq(rng, 3 + rng() % 45, 2 + rng() % 3);
    const int64_t n = static_cast<int64_t>(s.size());
    std::map<int64_t, int64_t> want;  // count -> longest length with length * count < n
    for (int64_t pos = 0; pos < n; ++pos)
      for (int64_t len = 1; pos + len <= n; ++len) {
        const int64_t c = count_occurrences(s, pos, len);
        if (c >= 2 && len * c < n) want[c] = std::max(want[c], len);
      }
    std::map<int64_t, int64_t> got;
    for (const RepeatCandidate& c : repeat_profile(s, 5, 2)) got[c.count] = c.length;
    EXPECT_EQ(got, want) << "round " << round;
  }
}

// A generated trace: set-up ops, N iterations of a cycle (some with extra ops inside or an
// evaluation block after them), tear-down ops; the gap before an iteration's first op is large.
struct Generated {
  Seq seq;
  std::vector<int64_t> gaps;
  std::vector<int64_t> boundaries;  // first op of each iteration
  std::set<int64_t> noisy;          // iterations (by index) that carry extra ops
  std::vector<int> loop_of;         // generator loop of each iteration
};

Seq random_cycle(std::mt19937& rng, size_t len, int32_t base, int32_t alphabet) {
  for (;;) {
    Seq c(len);
    for (auto& x : c) x = base + static_cast<int32_t>(rng() % alphabet);
    bool primitive = true;  // not a power of a shorter string
    for (size_t p = 1; p < len && primitive; ++p)
      if (len % p == 0 && std::equal(c.begin() + p, c.end(), c.begin())) primitive = false;
    if (primitive || len < 2) return c;
  }
}

void append(Generated* g, const Seq& ops, int64_t first_gap) {
  for (size_t j = 0; j < ops.size(); ++j) {
    g->seq.push_back(ops[j]);
    g->gaps.push_back(j == 0 ? first_gap : 10);
  }
}

struct LoopSpec {
  Seq cycle;
  int iterations;
};

Generated generate(std::mt19937& rng, const std::vector<LoopSpec>& segments, double inner_noise, int eval_every,
                   const Seq& eval_block) {
  Generated g;
  append(&g, random_cycle(rng, 1 + rng() % 8, 900, 50), 0);  // set-up: symbols no loop uses
  int global = 0;
  for (size_t seg = 0; seg < segments.size(); ++seg) {
    for (int it = 0; it < segments[seg].iterations; ++it, ++global) {
      Seq ops = segments[seg].cycle;
      bool noisy = false;
      if (rng() % 1000 < inner_noise * 1000) {
        const size_t at = 1 + rng() % (ops.size() - 1);
        ops.insert(ops.begin() + static_cast<int64_t>(at), 800 + static_cast<int32_t>(rng() % 20));
        noisy = true;
      }
      // An evaluation pass after the very last iteration is only told apart from tear-down when an
      // identical pass followed an earlier iteration.
      if (seg == 0 && eval_every > 0 && (it + 1) % eval_every == 0 &&
          (it + 1 < segments[seg].iterations || it + 1 > eval_every)) {
        ops.insert(ops.end(), eval_block.begin(), eval_block.end());
        noisy = true;
      }
      g.boundaries.push_back(static_cast<int64_t>(g.seq.size()));
      g.loop_of.push_back(static_cast<int>(seg));
      if (noisy) g.noisy.insert(global);
      append(&g, ops, 5000);
    }
  }
  append(&g, random_cycle(rng, 1 + rng() % 5, 950, 40), 7000);  // tear-down
  return g;
}

void expect_mined(const Generated& g, const MiningResult& r, const std::string& what) {
  ASSERT_EQ(r.iterations.size(), g.boundaries.size()) << what << ": " << r.error << " " << r.confidence_note;
  for (size_t t = 0; t < r.iterations.size(); ++t) {
    EXPECT_EQ(r.iterations[t].first_op, g.boundaries[t]) << what << " iteration " << t;
    EXPECT_EQ(r.iterations[t].flagged(), g.noisy.count(static_cast<int64_t>(t)) > 0) << what << " iteration " << t;
  }
}

TEST(MinerProperty, RandomPeriodsWithNoiseAreFoundExactly) {
  std::mt19937 rng(2024);
  for (int round = 0; round < 150; ++round) {
    const size_t period = 3 + rng() % 40;
    const int n = 5 + static_cast<int>(rng() % 60);
    const Seq cycle = random_cycle(rng, period, 0, 4 + static_cast<int32_t>(rng() % (period + 4)));
    const int eval_every = rng() % 2 ? 2 + static_cast<int>(rng() % 6) : 0;
    const Seq eval = random_cycle(rng, 1 + rng() % std::max<size_t>(1, period / 3), 600, 30);
    const Generated g = generate(rng, {{cycle, n}}, round % 3 == 0 ? 0.0 : 0.15, eval_every, eval);
    MinerOptions detect;
    expect_mined(g, mine_iterations(g.seq, g.gaps, detect), "detect round " + std::to_string(round));
    MinerOptions given;
    given.iterations = n;
    expect_mined(g, mine_iterations(g.seq, g.gaps, given), "given round " + std::to_string(round));
  }
}

TEST(MinerProperty, TrainAndEvalLoopsAreSeparated) {
  std::mt19937 rng(99);
  for (int round = 0; round < 60; ++round) {
    const Seq train = random_cycle(rng, 8 + rng() % 30, 0, 12);
    // Evaluation loop body: no op makes up more than a third of it (a body that is mostly one op
    // repeated is read at the finer scale: see docs/iterations.md, limitations).
    Seq eval;
    do {
      eval = random_cycle(rng, 4 + rng() % 8, 100, 10);
    } while (std::any_of(eval.begin(), eval.end(), [&](int32_t x) {
      return 3 * std::count(eval.begin(), eval.end(), x) > static_cast<int64_t>(eval.size());
    }));
    const int n_train = 12 + static_cast<int>(rng() % 20);
    // An evaluation phase is a loop of its own when it is longer than two training iterations (in
    // ops); shorter ones are extra ops of the iteration they follow (the MinerProperty tests above).
    const int n_eval = static_cast<int>(2 * train.size() / eval.size()) + 3 + static_cast<int>(rng() % 5);
    const Generated g = generate(rng, {{train, n_train}, {eval, n_eval}, {train, n_train}}, 0.0, 0, {});
    const MiningResult r = mine_iterations(g.seq, g.gaps, MinerOptions{});
    expect_mined(g, r, "round " + std::to_string(round));
    ASSERT_EQ(r.loops.size(), 2u);
    for (size_t t = 0; t < r.iterations.size(); ++t)
      EXPECT_EQ(r.iterations[t].loop, g.loop_of[t] == 1 ? 1 : 0) << "round " << round << " iteration " << t;
  }
}

TEST(MinerProperty, AlgorithmOneFindsInsertions) {
  const Seq cycle = {1, 2, 3, 4};
  const Seq s = {9, 1, 2, 3, 4, 1, 2, 7, 3, 4, 1, 2, 3, 4, 8, 8};
  const auto m = approximate_matches(s, cycle, 1);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].first, 1);
  EXPECT_EQ(m[1].first, 5);
  EXPECT_EQ(m[1].last, 9);
  EXPECT_EQ(m[1].extra_ops, 1);
  EXPECT_EQ(m[2].first, 10);
  EXPECT_TRUE(approximate_matches(s, cycle, 0).size() == 2u);
}

TEST(MinerProperty, NothingRepeatsIsAnErrorNotACrash) {
  const Seq s = {0, 1, 2, 3, 4, 5, 6, 7};
  const MiningResult r = mine_iterations(s, {}, MinerOptions{});
  EXPECT_TRUE(r.iterations.empty());
  EXPECT_FALSE(r.error.empty());
  EXPECT_EQ(r.ops_before, 8);
  EXPECT_TRUE(mine_iterations(Seq{}, {}, MinerOptions{}).iterations.empty());
}

}  // namespace
}  // namespace strata::iterations
