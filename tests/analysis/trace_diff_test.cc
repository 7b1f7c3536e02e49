// strata diff's statistics and matching: the Mann-Whitney U test against brute-force enumeration
// of every assignment of the pooled values, and diff_traces on generated repeated-run traces.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "analysis/mann_whitney.h"
#include "analysis/trace_diff.h"
#include "core/attr_keys.h"
#include "core/level.h"

namespace strata::analysis {
namespace {

double brute_u(const std::vector<double>& a, const std::vector<double>& b) {
  double u = 0;
  for (double x : a)
    for (double y : b) u += x > y ? 1 : x == y ? 0.5 : 0;
  return u;
}

// U over every way of choosing which |a| of the pooled values form the first sample.
std::vector<double> all_u(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> pool(a);
  pool.insert(pool.end(), b.begin(), b.end());
  std::vector<bool> pick(pool.size(), false);
  std::fill(pick.begin(), pick.begin() + static_cast<long>(a.size()), true);
  std::vector<double> us;
  std::sort(pick.begin(), pick.end());
  do {
    std::vector<double> x, y;
    for (size_t i = 0; i < pool.size(); ++i) (pick[i] ? x : y).push_back(pool[i]);
    us.push_back(brute_u(x, y));
  } while (std::next_permutation(pick.begin(), pick.end()));
  return us;
}

TEST(MannWhitney, ExactPEqualsEnumerationWithoutTies) {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 40; ++trial) {
    const size_t m = 1 + rng() % 7, n = 1 + rng() % 7;
    std::vector<double> values(m + n);
    for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i) + 0.5;
    std::shuffle(values.begin(), values.end(), rng);
    // Shift the first sample up sometimes, so small p-values are covered too.
    std::vector<double> a(values.begin(), values.begin() + static_cast<long>(m)), b(values.begin() + static_cast<long>(m), values.end());
    if (trial % 3 == 0) std::sort(values.begin(), values.end()), a.assign(values.end() - static_cast<long>(m), values.end()),
                        b.assign(values.begin(), values.end() - static_cast<long>(m));
    const MannWhitney r = mann_whitney_u(a, b);
    ASSERT_TRUE(r.exact);
    EXPECT_DOUBLE_EQ(r.u, brute_u(a, b));
    const std::vector<double> us = all_u(a, b);
    const double mean = static_cast<double>(m * n) / 2, dev = std::fabs(r.u - mean);
    double extreme = 0;
    for (double u : us) extreme += std::fabs(u - mean) >= dev - 1e-9;
    EXPECT_NEAR(r.p, std::min(1.0, extreme / static_cast<double>(us.size())), 1e-12) << "m=" << m << " n=" << n;
  }
}

TEST(MannWhitney, KnownTableValues) {
  // Complete separation: p = 2 / C(m+n, m) (two-sided), the smallest the test can give.
  const std::vector<double> lo5{1, 2, 3, 4, 5}, hi5{6, 7, 8, 9, 10}, lo4{1, 2, 3, 4}, hi4{5, 6, 7, 8};
  EXPECT_NEAR(mann_whitney_u(hi5, lo5).p, 2.0 / 252, 1e-12);
  EXPECT_DOUBLE_EQ(mann_whitney_u(hi5, lo5).u, 25);
  EXPECT_NEAR(mann_whitney_u(lo4, hi4).p, 2.0 / 70, 1e-12);
  EXPECT_NEAR(mann_whitney_u(std::vector<double>{1, 2, 3}, std::vector<double>{4, 5, 6}).p, 0.1, 1e-12);
  // Interleaved: no evidence.
  EXPECT_NEAR(mann_whitney_u(std::vector<double>{1, 4, 5, 8}, std::vector<double>{2, 3, 6, 7}).p, 1.0, 1e-12);
  EXPECT_EQ(mann_whitney_u(std::vector<double>{}, lo4).p, 1.0);
  EXPECT_EQ(mann_whitney_u(std::vector<double>{3, 3}, std::vector<double>{3, 3, 3}).p, 1.0);
}

TEST(MannWhitney, TieCorrectedVarianceEqualsPermutationVariance) {
  // With ties the variance of U over all assignments is the tie-corrected formula's: check the
  // normal approximation's p against one computed from the enumerated variance.
  const std::vector<double> a{1, 2, 2, 3, 5, 5, 5}, b{2, 3, 3, 4, 4, 6};
  const MannWhitney r = mann_whitney_u(a, b);
  ASSERT_FALSE(r.exact);
  const std::vector<double> us = all_u(a, b);
  double mean = 0, var = 0;
  for (double u : us) mean += u;
  mean /= static_cast<double>(us.size());
  for (double u : us) var += (u - mean) * (u - mean);
  var /= static_cast<double>(us.size());
  EXPECT_NEAR(mean, 21.0, 1e-9);
  EXPECT_DOUBLE_EQ(r.u, brute_u(a, b));
  const double z = (std::fabs(r.u - mean) - 0.5) / std::sqrt(var);
  EXPECT_NEAR(r.p, std::erfc(z / std::sqrt(2.0)), 1e-9);
}

// A repeated-run trace: `runs` processes tagged run=i, each with `evals` model spans holding
// layer ops (conv with two input shapes, relu, linear) and their kernels; times jittered by
// `noise` (multiplicative, uniform) and occasional 4 ms preemptions; `slow` scales one op.
trace::Trace runs_trace(int runs, uint64_t seed, double noise, const std::string& slow_op = "",
                        double slow = 1.0, bool extra_op = false) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> jitter(1 - noise, 1 + noise);
  trace::Trace t;
  uint64_t id = 1;
  for (int r = 0; r < runs; ++r) {
    trace::Process p;
    p.pid = 100 + r;
    p.properties.set_int("run", r);
    const uint16_t proc = t.add_process(p);
    int64_t now = 1'000'000'000LL * r;
    for (int e = 0; e < 30; ++e) {
      const int64_t model_start = now;
      std::vector<std::pair<SpanRecord, std::vector<AttrRecord>>> children;
      now += 1000;
      struct Op {
        const char* name;
        const char* shapes;
        const char* module;
        int64_t ns;
      };
      std::vector<Op> ops = {{"aten::conv2d", "[[1,3,32,32]]", "features.0", 300'000},
                             {"aten::conv2d", "[[1,16,16,16]]", "features.3", 200'000},
                             {"aten::relu", "[[1,16,32,32]]", "features.1", 50'000},
                             {"aten::linear", "[[1,512]]", "head", 80'000}};
      if (extra_op) ops.push_back({"aten::dropout", "[[1,512]]", "head", 40'000});
      for (const Op& op : ops) {
        double ns = static_cast<double>(op.ns) * jitter(rng) * (op.name + std::string(op.shapes) == slow_op ? slow : 1.0);
        if (rng() % 50 == 0) ns += 4e6;  // a scheduler tick taken from this instance
        SpanRecord s;
        s.span_id = id++;
        s.start_ns = now;
        s.end_ns = now + static_cast<int64_t>(ns);
        s.name = t.strings.intern(op.name);
        s.process = proc;
        s.tid = 1;
        s.level = static_cast<uint8_t>(Level::kLayer);
        s.kind = static_cast<uint8_t>(SpanKind::kSpan);
        children.push_back({s, {t.string_attr(attr_keys::kShapes, op.shapes), t.string_attr(attr_keys::kModule, op.module),
                                t.int_attr("alloc_bytes", 1024)}});
        now = s.end_ns + 1000;
      }
      SpanRecord m;
      m.span_id = id++;
      m.start_ns = model_start;
      m.end_ns = now;
      m.name = t.strings.intern("predict");
      m.process = proc;
      m.tid = 1;
      m.level = static_cast<uint8_t>(Level::kModel);
      m.kind = static_cast<uint8_t>(SpanKind::kSpan);
      t.add_span(m);
      for (auto& [s, attrs] : children) t.add_span(s, attrs);
      now += 10'000;
    }
  }
  return t;
}

const DiffItem* find(const DiffResult& r, const std::string& name, const std::string& shapes) {
  for (const DiffItem& i : r.items)
    if (i.name == name && i.shapes == shapes) return &i;
  return nullptr;
}

TEST(TraceDiff, SlowerOpRankedFirstAndARegression) {
  const trace::Trace base = runs_trace(5, 1, 0.15);
  const trace::Trace next = runs_trace(5, 2, 0.15, "aten::relu[[1,16,32,32]]", 1.6);
  const DiffResult r = diff_traces(base, next, DiffOptions{});
  ASSERT_EQ(r.base_runs, 5);
  ASSERT_GE(r.items.size(), 5u);
  EXPECT_EQ(r.items[0].name, "predict");  // the total first
  EXPECT_EQ(r.items[1].name, "aten::relu");
  EXPECT_TRUE(r.items[1].regression);
  EXPECT_NEAR(r.items[1].delta_pct, 60, 12);
  EXPECT_NEAR(r.items[1].base_count, 30, 0);
  EXPECT_NEAR(r.items[1].base_alloc, 30 * 1024, 0);
  EXPECT_TRUE(r.has_regression);
  // The two conv2d calls are told apart by their shapes, and neither regressed.
  const DiffItem* conv_a = find(r, "aten::conv2d", "[[1,3,32,32]]");
  const DiffItem* conv_b = find(r, "aten::conv2d", "[[1,16,16,16]]");
  ASSERT_TRUE(conv_a && conv_b);
  EXPECT_FALSE(conv_a->regression);
  EXPECT_FALSE(conv_b->regression);
  EXPECT_NEAR(conv_a->base_ns, 30 * 300'000, 30 * 300'000 * 0.1);
}

TEST(TraceDiff, SameConfigurationNeverFailsAcrossSeeds) {
  // 15% jitter and preemptions on both sides, 40 pairs of seeds: noise is never a regression at the
  // defaults (the test is on per-run medians; each side's runs are independent).
  int failures = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    const DiffResult r = diff_traces(runs_trace(5, 100 + seed, 0.15), runs_trace(5, 500 + seed, 0.15), DiffOptions{});
    failures += r.has_regression;
  }
  EXPECT_EQ(failures, 0);
}

// Every op of NEW 30% slower (another machine load): a common speed factor, not a regression; with
// normalize off it is one. One op slower beyond the factor is still found.
TEST(TraceDiff, CommonSpeedFactorIsNotBlamedOnOps) {
  trace::Trace base = runs_trace(5, 1, 0.1), next = runs_trace(5, 2, 0.1);
  for (SpanRecord& s : next.spans) s.end_ns = s.start_ns + s.duration_ns() * 13 / 10;
  const DiffResult r = diff_traces(base, next, DiffOptions{});
  EXPECT_NEAR(r.speed_factor, 1.3, 0.05);
  EXPECT_FALSE(r.has_regression);
  DiffOptions raw;
  raw.normalize = false;
  EXPECT_TRUE(diff_traces(base, next, raw).has_regression);
  trace::Trace slow = runs_trace(5, 3, 0.1, "aten::linear[[1,512]]", 1.5);
  for (SpanRecord& s : slow.spans) s.end_ns = s.start_ns + s.duration_ns() * 13 / 10;
  const DiffResult r2 = diff_traces(base, slow, DiffOptions{});
  ASSERT_GE(r2.items.size(), 2u);
  EXPECT_EQ(r2.items[1].name, "aten::linear");
  EXPECT_TRUE(r2.items[1].regression);
  EXPECT_NEAR(r2.items[1].excess_pct, 50, 12);
}

// A trace from a reader without shapes or module paths (e.g. a Chrome trace of PyTorch's legacy
// profiler) still matches one that has them: by level and name, with a note.
TEST(TraceDiff, SideWithoutShapesMatchesByName) {
  trace::Trace base = runs_trace(5, 1, 0.1), next = runs_trace(5, 2, 0.1, "aten::relu[[1,16,32,32]]", 1.6);
  trace::Trace bare;
  for (const trace::Process& p : next.processes) bare.add_process(p);
  for (size_t i = 0; i < next.spans.size(); ++i) {
    SpanRecord s = next.spans[i];
    s.name = bare.strings.intern(next.name(next.spans[i]));
    bare.add_span(s);
  }
  const DiffResult r = diff_traces(base, bare, DiffOptions{});
  size_t key_notes = 0;
  for (const std::string& n : r.notes) key_notes += n.find("only BASE records") != std::string::npos;
  EXPECT_EQ(key_notes, 2u);  // shapes and module
  size_t added = 0, removed = 0;
  for (const DiffItem& i : r.items) added += i.status == DiffStatus::kAdded, removed += i.status == DiffStatus::kRemoved;
  EXPECT_EQ(added + removed, 0u);
  EXPECT_EQ(r.items[1].name, "aten::relu");
  EXPECT_TRUE(r.items[1].regression);
  EXPECT_EQ(r.items.size(), 4u);  // predict, conv2d (both shapes together), relu, linear
}

TEST(TraceDiff, AddedOpsAndSingleRuns) {
  const DiffResult r = diff_traces(runs_trace(5, 1, 0.05), runs_trace(5, 2, 0.05, "", 1.0, true), DiffOptions{});
  const DiffItem* dropout = find(r, "aten::dropout", "[[1,512]]");
  ASSERT_TRUE(dropout);
  EXPECT_EQ(dropout->status, DiffStatus::kAdded);
  EXPECT_TRUE(dropout->regression);  // 5 runs with it against 5 without: significant, 40 us x 30 calls
  // One run a side: no per-run test; instance durations are compared, a note says so.
  const DiffResult one = diff_traces(runs_trace(1, 1, 0.05), runs_trace(1, 2, 0.05, "aten::linear[[1,512]]", 2.0),
                                     DiffOptions{});
  ASSERT_FALSE(one.notes.empty());
  ASSERT_GE(one.items.size(), 2u);
  EXPECT_EQ(one.items[1].name, "aten::linear");
  EXPECT_FALSE(one.items[1].run_test);
  EXPECT_TRUE(one.items[1].regression);
}

TEST(TraceDiff, MarkdownHasVerdictAndEscapedCells) {
  const DiffResult r = diff_traces(runs_trace(5, 1, 0.1), runs_trace(5, 2, 0.1, "aten::relu[[1,16,32,32]]", 2.0),
                                   DiffOptions{});
  const std::string md = diff_markdown(r, DiffOptions{}, 5);
  EXPECT_NE(md.find("significant regression"), std::string::npos);
  EXPECT_NE(md.find("| layer | aten::relu |"), std::string::npos) << md;
  EXPECT_NE(md.find("REGRESSION"), std::string::npos);
}

}  // namespace
}  // namespace strata::analysis

namespace strata::analysis {
namespace {

// Benjamini-Hochberg against its definition, checked by brute force on random p-values (ties
// included), and a textbook case.
TEST(BenjaminiHochberg, MatchesTheDefinition) {
  const std::vector<double> textbook = {0.01, 0.04, 0.03, 0.2};
  EXPECT_EQ(benjamini_hochberg(textbook, 0.05), (std::vector<bool>{true, false, false, false}));
  const std::vector<double> step_up = {0.02, 0.03, 0.04, 0.045};  // the largest rank carries the rest
  EXPECT_EQ(benjamini_hochberg(step_up, 0.05), (std::vector<bool>{true, true, true, true}));
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<double> p(1 + rng() % 30);
    for (double& v : p) v = static_cast<double>(rng() % 200) / 1000.0;
    const size_t m = p.size();
    size_t k_max = 0;  // the largest k with at least k p-values <= alpha * k / m
    for (size_t k = 1; k <= m; ++k) {
      size_t below = 0;
      for (double v : p) below += v <= 0.05 * static_cast<double>(k) / static_cast<double>(m);
      if (below >= k) k_max = k;
    }
    const std::vector<bool> got = benjamini_hochberg(p, 0.05);
    size_t discoveries = 0;
    for (size_t i = 0; i < m; ++i) {
      discoveries += got[i];
      EXPECT_EQ(got[i], p[i] <= 0.05 * static_cast<double>(k_max) / static_cast<double>(m)) << trial;
    }
    EXPECT_EQ(discoveries, k_max) << trial;
  }
}

}  // namespace
}  // namespace strata::analysis
