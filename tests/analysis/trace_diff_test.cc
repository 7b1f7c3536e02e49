// strata diff's statistics and matching: the Mann-Whitney U test against brute-force enumeration
// of every assignment of the pooled values, and diff_traces on generated repeated-run traces.
#include "analysis/trace_diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "analysis/mann_whitney.h"
#include "core/activity_type.h"
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
    std::vector<double> a(values.begin(), values.begin() + static_cast<long>(m)),
        b(values.begin() + static_cast<long>(m), values.end());
    if (trial % 3 == 0)
      std::sort(values.begin(), values.end()), a.assign(values.end() - static_cast<long>(m), values.end()),
          b.assign(values.begin(), values.end() - static_cast<long>(m));
    const MannWhitney r = mann_whitney_u(a, b);
    ASSERT_TRUE(r.exact);
    EXPECT_DOUBLE_EQ(r.u, brute_u(a, b));
    const std::vector<double> us = all_u(a, b);
    const double mean = static_cast<double>(m * n) / 2, dev = std::fabs(r.u - mean);
    double extreme = 0;
    for (double u : us) extreme += std::fabs(u - mean) >= dev - 1e-9;
    EXPECT_NEAR(r.p, std::min(1.0, extreme / static_cast<double>(us.size())), 1e-12)
        << "m=" << m << " n=" << n;
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

// The sparse form (positive values and a count of zeros a side) against the samples written out.
TEST(MannWhitney, SparseEqualsWrittenOut) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<double> a, b;
    const size_t za = rng() % 60, zb = rng() % 60;
    for (size_t k = rng() % 40; k > 0; --k) a.push_back(1 + static_cast<double>(rng() % 30));
    for (size_t k = rng() % 40; k > 0; --k) b.push_back(1 + static_cast<double>(rng() % 30));
    std::vector<double> wa = a, wb = b;
    wa.resize(a.size() + za, 0.0);
    wb.resize(b.size() + zb, 0.0);
    std::shuffle(wa.begin(), wa.end(), rng);
    const MannWhitney dense = mann_whitney_u(wa, wb), sparse = mann_whitney_u_sparse(a, za, b, zb);
    EXPECT_NEAR(sparse.u, dense.u, 1e-9) << trial;
    EXPECT_NEAR(sparse.p, dense.p, 1e-12) << trial;
  }
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

// A generated recording: per run (one process tagged run=r, as strata record --runs N writes), `steps`
// model spans named "predict" (the steps), each holding the ops below in order on one thread with a
// 20 us gap before each (time outside ops). Times jittered (uniform, multiplicative), one instance in
// `preempt_every` gets a 4 ms scheduler tick; `factor` scales everything (another machine load),
// `op_factor` one op on top of it (keyed by name + shapes).
struct OpSpec {
  std::string name, shapes, module;
  double us = 0;
  int calls = 1;
};

std::vector<OpSpec> cnn_ops() {
  return {{"aten::conv2d", "[[4,3,32,32]]", "features.0", 400},
          {"aten::relu", "[[4,16,32,32]]", "features.1", 60},
          {"aten::max_pool2d", "[[4,16,32,32]]", "features.2", 110},
          {"aten::conv2d", "[[4,16,16,16]]", "features.3", 300},
          {"aten::relu", "[[4,32,16,16]]", "features.4", 40},
          {"aten::linear", "[[4,512]]", "head", 80}};
}

struct TraceSpec {
  int runs = 1, steps = 30;
  double jitter = 0.05;
  uint64_t seed = 1;
  std::vector<OpSpec> ops = cnn_ops();
  double factor = 1.0;
  std::map<std::string, double> op_factor;
  int preempt_every = 200;
};

TraceSpec spec_of(uint64_t seed, int runs = 1, double jitter = 0.05, double factor = 1.0) {
  TraceSpec s;
  s.seed = seed;
  s.runs = runs;
  s.jitter = jitter;
  s.factor = factor;
  return s;
}

trace::Trace make_trace(const TraceSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> jitter(1 - spec.jitter, 1 + spec.jitter);
  trace::Trace t;
  uint64_t id = 1;
  auto span = [&](uint16_t proc, int64_t start, int64_t end, const char* name, Level level,
                  ActivityType activity) {
    SpanRecord s;
    s.span_id = id++;
    s.start_ns = start;
    s.end_ns = end;
    s.name = t.strings.intern(name);
    s.process = proc;
    s.tid = 1;
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(SpanKind::kSpan);
    s.activity = static_cast<uint8_t>(activity);
    return s;
  };
  for (int r = 0; r < spec.runs; ++r) {
    trace::Process p;
    p.pid = 100 + r;
    if (spec.runs > 1) p.properties.set_int("run", r);
    const uint16_t proc = t.add_process(p);
    int64_t now = 1'000'000'000LL * (r + 1);
    for (int step = 0; step < spec.steps; ++step) {
      const int64_t step_start = now;
      std::vector<std::pair<SpanRecord, std::vector<AttrRecord>>> ops;
      for (const OpSpec& op : spec.ops) {
        auto it = spec.op_factor.find(op.name + op.shapes);
        const double scale = spec.factor * (it == spec.op_factor.end() ? 1.0 : it->second);
        for (int c = 0; c < op.calls; ++c) {
          now += static_cast<int64_t>(20'000 * spec.factor * jitter(rng));
          double ns = op.us * 1000 * scale * jitter(rng);
          if (spec.preempt_every > 0 && rng() % static_cast<uint64_t>(spec.preempt_every) == 0) ns += 4e6;
          SpanRecord s = span(proc, now, now + static_cast<int64_t>(ns), op.name.c_str(), Level::kLayer,
                              ActivityType::kCpuOp);
          std::vector<AttrRecord> attrs;
          if (!op.shapes.empty()) attrs.push_back(t.string_attr(attr_keys::kShapes, op.shapes));
          if (!op.module.empty()) attrs.push_back(t.string_attr(attr_keys::kModule, op.module));
          ops.emplace_back(s, std::move(attrs));
          now = s.end_ns;
        }
      }
      now += static_cast<int64_t>(20'000 * spec.factor * jitter(rng));
      t.add_span(span(proc, step_start, now, "predict", Level::kModel, ActivityType::kAnnotation));
      for (auto& [s, attrs] : ops) t.add_span(s, attrs);
      now += 50'000;
    }
  }
  return t;
}

const DiffItem* find(const DiffResult& r, const std::string& name, const std::string& shapes) {
  for (const DiffItem& i : r.items)
    if (i.name == name && i.shapes == shapes) return &i;
  return nullptr;
}

// The defect of issue 34: in a same-configuration pair everything ran 11% faster but
// aten::max_pool2d ran 1.7% slower; against one uniform factor it read 14% slower,
// all 4 runs apart (p = 0.029), and Benjamini-Hochberg over the candidates alone (m = 1) kept it.
// An op of 9% of the step 14% beyond the factor moves the step by 1.3%: no regression.
TEST(TraceDiff, OneOpLeftBehindByAUniformSpeedupIsNoRegression) {
  TraceSpec base = spec_of(1, 4, 0.02);
  TraceSpec next = spec_of(2, 4, 0.02, 0.89);
  next.op_factor["aten::max_pool2d[[4,16,32,32]]"] = 1.017 / 0.89;
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  const DiffItem* pool = find(r, "aten::max_pool2d", "[[4,16,32,32]]");
  ASSERT_TRUE(pool);
  EXPECT_GT(pool->delta_ns, 0);  // it did get slower
  EXPECT_FALSE(pool->regression);
  EXPECT_FALSE(r.has_regression);
}

// The issue's first case: an op added to every step, one recording a side, passed with "items added
// or removed are not tested". It costs 25% of the step: a regression, ranked first.
TEST(TraceDiff, AddedOpFailsTheGateWithOneRecordingASide) {
  TraceSpec base = spec_of(1), next = spec_of(2);
  next.ops.push_back({"aten::mm", "[[384,384],[384,384]]", "head", 300});
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.items[0].name, "aten::mm");
  EXPECT_EQ(r.items[0].status, DiffStatus::kAdded);
  EXPECT_TRUE(r.items[0].regression);
  EXPECT_TRUE(r.has_regression);
}

// The second case: a scope whose calls per step went 2 -> 42 (40 small extra calls) is
// slower, not "faster" (count x median instance read it 58% faster), and its calls are counted.
TEST(TraceDiff, MoreCallsAreSlowerAndCounted) {
  const std::string scope = "autograd::engine::evaluate_function: MmBackward0";
  TraceSpec base = spec_of(1), next = spec_of(2);
  base.ops.push_back({scope, "", "", 500, 2});
  next.ops.push_back({scope, "", "", 500, 2});
  next.ops.push_back({scope, "", "", 10, 40});
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  const DiffItem* mm = find(r, scope, "");
  ASSERT_TRUE(mm);
  EXPECT_GT(mm->delta_ns, 0);
  EXPECT_NEAR(mm->base_count, 2, 0.01);
  EXPECT_NEAR(mm->new_count, 42, 0.01);
}

TEST(TraceDiff, SlowerOpRankedFirstWithItsShareOfTheStep) {
  TraceSpec next = spec_of(2);
  next.op_factor["aten::linear[[4,512]]"] = 3.0;  // +160 us in a step of about 1.15 ms
  const DiffResult r = diff_traces(make_trace(spec_of(1)), make_trace(next), DiffOptions{});
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.items[0].name, "aten::linear");
  EXPECT_TRUE(r.items[0].regression);
  EXPECT_NEAR(r.items[0].excess_pct, 100.0 * 160 / 1150, 3);
  EXPECT_NEAR(r.items[0].base_count, 1, 0);
  // Totals first: the step time with its interval, 29 steps a side (the first left out).
  EXPECT_EQ(r.step.base_steps, 29u);
  EXPECT_LE(r.step.change_low_pct, r.step.change_pct);
  EXPECT_GE(r.step.change_high_pct, r.step.change_pct);
  EXPECT_GT(r.step.change_low_pct, 5);
  // One op carries it: the total is slower (its interval over the steps above zero), the op is the
  // regression (over the items, one op's deviation is what the total's second interval allows).
  EXPECT_GT(r.step.excess_low_pct, 0);
  EXPECT_TRUE(r.has_regression);
  EXPECT_EQ(r.verdict.rfind("REGRESSION", 0), 0u) << r.verdict;
  // The two conv2d calls are told apart by their shapes, and neither regressed.
  const DiffItem* conv_a = find(r, "aten::conv2d", "[[4,3,32,32]]");
  const DiffItem* conv_b = find(r, "aten::conv2d", "[[4,16,16,16]]");
  ASSERT_TRUE(conv_a && conv_b);
  EXPECT_FALSE(conv_a->regression || conv_b->regression);
}

// Generated pairs of one configuration: 5% jitter, preemptions of 4 ms, and a machine-load factor
// between 0.8 and 1.3 per trace: never a regression at the defaults.
TEST(TraceDiff, SameConfigurationNeverFailsAcrossSeeds) {
  int failures = 0;
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<double> load(0.8, 1.3);
  for (uint64_t seed = 0; seed < 40; ++seed) {
    TraceSpec a = spec_of(100 + seed, 1, 0.05, load(rng)), b = spec_of(500 + seed, 1, 0.05, load(rng));
    a.preempt_every = b.preempt_every = 20;
    const DiffResult r = diff_traces(make_trace(a), make_trace(b), DiffOptions{});
    failures += r.has_regression;
    EXPECT_FALSE(r.undecided);
  }
  EXPECT_EQ(failures, 0);
}

// Every op of NEW 30% slower (another machine load): a speed factor, not a regression; with
// --no-normalize the step time is one.
TEST(TraceDiff, UniformSlowdownIsASpeedFactor) {
  const DiffResult r =
      diff_traces(make_trace(spec_of(1)), make_trace(spec_of(2, 1, 0.05, 1.3)), DiffOptions{});
  EXPECT_NEAR(r.step.factor, 1.3, 0.03);
  EXPECT_FALSE(r.has_regression);
  DiffOptions raw;
  raw.normalize = false;
  const DiffResult rr = diff_traces(make_trace(spec_of(1)), make_trace(spec_of(2, 1, 0.05, 1.3)), raw);
  EXPECT_TRUE(rr.step.regression);
  EXPECT_TRUE(rr.has_regression);
}

// The op holding the most time made slower: judged against the other ops' factor (leave one out), so
// it is not taken for a change of machine speed.
TEST(TraceDiff, TheLargestOpSlowerIsFoundAgainstTheOthers) {
  TraceSpec next = spec_of(2, 1, 0.05, 1.2);  // and everything 20% slower besides
  next.op_factor["aten::conv2d[[4,3,32,32]]"] = 1.3;
  const DiffResult r = diff_traces(make_trace(spec_of(1)), make_trace(next), DiffOptions{});
  ASSERT_FALSE(r.items.empty());
  EXPECT_EQ(r.items[0].name, "aten::conv2d");
  EXPECT_EQ(r.items[0].shapes, "[[4,3,32,32]]");
  EXPECT_TRUE(r.items[0].regression);
  EXPECT_NEAR(r.items[0].factor, 1.2, 0.03);
}

// Ops of one size answer a busier machine differently (in a pair recorded here a convolution was
// 13-50% slower while a max-pool and a Python loop beside it were not). BASE recorded loaded: its
// convolutions 40% slower, its max-pool and linear not. Against its neighbours' central factor the
// max-pool reads 7% of the step slower in NEW; against their upper quartile (the linear, which did not
// change either) it does not: no regression.
TEST(TraceDiff, AnOpThatIgnoredTheLoadIsNoRegression) {
  TraceSpec base = spec_of(1), next = spec_of(2);
  base.ops = next.ops = {{"aten::conv2d", "[[4,3,32,32]]", "features.0", 400},
                         {"aten::conv2d", "[[4,16,16,16]]", "features.3", 300},
                         {"aten::max_pool2d", "[[4,16,32,32]]", "features.2", 500},
                         {"aten::linear", "[[4,512]]", "head", 300}};
  base.op_factor["aten::conv2d[[4,3,32,32]]"] = base.op_factor["aten::conv2d[[4,16,16,16]]"] = 1.4;
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  const DiffItem* pool = find(r, "aten::max_pool2d", "[[4,16,32,32]]");
  ASSERT_TRUE(pool);
  EXPECT_GT(pool->excess_pct, 5);
  EXPECT_LT(pool->gate_pct, 2);
  EXPECT_FALSE(r.has_regression) << r.verdict;
}

// The same op (name and module) with other shapes: one item whose shapes changed, ranked first.
TEST(TraceDiff, ShapeChangeShownAsSuch) {
  TraceSpec base = spec_of(1), next = spec_of(2);
  base.ops.push_back({"aten::mm", "[[32,32],[32,32]]", "head", 20});
  next.ops.push_back({"aten::mm", "[[128,128],[128,128]]", "head", 300});
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  ASSERT_FALSE(r.items.empty());
  const DiffItem& mm = r.items[0];
  EXPECT_EQ(mm.name, "aten::mm");
  EXPECT_EQ(mm.status, DiffStatus::kShapeChanged);
  EXPECT_EQ(mm.shapes, "[[32,32],[32,32]]");
  EXPECT_EQ(mm.new_shapes, "[[128,128],[128,128]]");
  EXPECT_EQ(change_text(mm), "shapes changed");
  EXPECT_TRUE(mm.regression);
  for (const DiffItem& i : r.items) EXPECT_NE(i.status, DiffStatus::kAdded) << i.name;
}

// A trace from a reader without shapes or module paths still matches one that has them: by level and
// name, with a note.
TEST(TraceDiff, SideWithoutShapesMatchesByName) {
  TraceSpec slow = spec_of(2);
  slow.op_factor["aten::linear[[4,512]]"] = 3.0;
  trace::Trace base = make_trace(spec_of(1)), next = make_trace(slow);
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
  EXPECT_EQ(key_notes, 2u);  // shapes and module paths
  for (const DiffItem& i : r.items) EXPECT_EQ(i.status, DiffStatus::kMatched) << i.name;
  EXPECT_EQ(r.items[0].name, "aten::linear");
  EXPECT_TRUE(r.items[0].regression);
  EXPECT_EQ(r.items.size(),
            5u);  // conv2d (both shapes together), relu (both), max_pool2d, linear, between ops
}

// Too few steps to test: a change beyond the threshold is undecided (exit 3 with --fail-on-regression),
// never a regression; no change beyond it is no regression.
TEST(TraceDiff, TooFewStepsIsUndecided) {
  TraceSpec base = spec_of(1), next = spec_of(2);
  base.steps = next.steps = 4;  // 3 after the warm-up
  next.ops.push_back({"aten::mm", "[[384,384],[384,384]]", "head", 300});
  const DiffResult r = diff_traces(make_trace(base), make_trace(next), DiffOptions{});
  EXPECT_FALSE(r.testable);
  EXPECT_FALSE(r.has_regression);
  EXPECT_TRUE(r.undecided);
  EXPECT_EQ(r.verdict.rfind("UNDECIDED", 0), 0u) << r.verdict;
  const DiffResult same = diff_traces(make_trace(base), make_trace(base), DiffOptions{});
  EXPECT_FALSE(same.undecided || same.has_regression);
}

// A scheduler tick of 4 ms landing in one op in a step now and then (every 10th instance here) is
// capped at the op's median + 4 MADs: no regression, and every capped value counted in a note.
TEST(TraceDiff, PreemptionsAreCappedAndCounted) {
  TraceSpec a = spec_of(1), b = spec_of(2);
  a.preempt_every = b.preempt_every = 10;
  const DiffResult r = diff_traces(make_trace(a), make_trace(b), DiffOptions{});
  EXPECT_FALSE(r.has_regression) << r.verdict;
  bool counted = false;
  for (const std::string& n : r.notes) counted = counted || n.find("values capped") != std::string::npos;
  EXPECT_TRUE(counted);
  EXPECT_GT(r.wall.change_high_pct - r.wall.change_low_pct, r.step.change_high_pct - r.step.change_low_pct);
}

// Several recordings a side pool their steps; the interval then includes the variance between them.
TEST(TraceDiff, RecordingsPool) {
  TraceSpec next = spec_of(2, 3);
  next.op_factor["aten::linear[[4,512]]"] = 3.0;
  const DiffResult r = diff_traces(make_trace(spec_of(1, 3)), make_trace(next), DiffOptions{});
  EXPECT_EQ(r.base_recordings, 3);
  EXPECT_EQ(r.step.base_steps, 3u * 29u);
  EXPECT_EQ(r.items[0].name, "aten::linear");
  EXPECT_TRUE(r.items[0].regression);
}

// Two processes of one program can differ in one op for their whole lives (glibc's malloc regime:
// docs/diff.md, "Limits"). Two NEW recordings of three with their linear layer 5x slower move the
// pooled mean by 19% of the step, significantly over the steps, but the third NEW recording is not
// slower than BASE's: no regression. All three slower is one.
TEST(TraceDiff, OneSlowRecordingOfSeveralIsNoRegression) {
  auto recordings = [](uint64_t seed, int slow_ones) {
    std::vector<RecordingSteps> out;
    for (int k = 0; k < 3; ++k) {
      TraceSpec s = spec_of(seed + static_cast<uint64_t>(k));
      if (k < slow_ones) s.op_factor["aten::linear[[4,512]]"] = 5.0;
      std::string note;
      for (RecordingSteps& r : recordings_of(make_trace(s), "run", &note)) out.push_back(std::move(r));
    }
    return out;
  };
  const std::vector<RecordingSteps> base = recordings(1, 0);
  const DiffResult one = diff_recordings(base, recordings(10, 2), DiffOptions{});
  const DiffItem* linear = find(one, "aten::linear", "[[4,512]]");
  ASSERT_TRUE(linear);
  EXPECT_GT(linear->excess_pct, 5);
  EXPECT_TRUE(linear->significant) << linear->p_value << " " << linear->excess_pct << " f=" << linear->factor;
  EXPECT_FALSE(linear->regression);
  const DiffResult all = diff_recordings(base, recordings(10, 3), DiffOptions{});
  EXPECT_TRUE(find(all, "aten::linear", "[[4,512]]")->regression);
}

// As seen in a same-configuration pair of three recordings a side (docs/diff.md, "The gate's rates"):
// one NEW process in the slow malloc regime (its linear layer 5x slower) moves the pooled mean by 10%
// of the step, and its two siblings are 8% slower on that op (0.6% of the step), above every BASE
// recording. Every NEW recording above every BASE one, but not by the threshold: no regression.
TEST(TraceDiff, OneSlowRecordingAndSiblingsAHairSlowerIsNoRegression) {
  auto recordings = [](uint64_t seed, double first, double others) {
    std::vector<RecordingSteps> out;
    for (int k = 0; k < 3; ++k) {
      TraceSpec s = spec_of(seed + static_cast<uint64_t>(k));
      s.op_factor["aten::linear[[4,512]]"] = k == 0 ? first : others;
      std::string note;
      for (RecordingSteps& r : recordings_of(make_trace(s), "run", &note)) out.push_back(std::move(r));
    }
    return out;
  };
  const std::vector<RecordingSteps> base = recordings(1, 1.0, 1.0);
  const DiffResult hair = diff_recordings(base, recordings(20, 5.0, 1.08), DiffOptions{});
  const DiffItem* linear = find(hair, "aten::linear", "[[4,512]]");
  ASSERT_TRUE(linear);
  EXPECT_GT(linear->gate_pct, 5);
  EXPECT_TRUE(linear->significant) << linear->p_value;
  EXPECT_FALSE(linear->regression) << linear->gate_pct;
  EXPECT_FALSE(hair.has_regression) << hair.verdict;
  // The same op slower by the threshold in every NEW recording is one.
  const DiffResult all = diff_recordings(base, recordings(20, 5.0, 1.9), DiffOptions{});
  EXPECT_TRUE(find(all, "aten::linear", "[[4,512]]")->regression) << all.verdict;
}

// One recording a side cannot tell a difference a process keeps for its whole life from a change of
// the code (8 false alarms in 20 such pairs with glibc's default malloc thresholds: docs/diff.md): the
// notes say so, and say nothing of it with several recordings a side.
TEST(TraceDiff, OneRecordingASideSaysWhatItCannotSee) {
  auto warned = [](const DiffResult& r) {
    for (const std::string& n : r.notes)
      if (n.find("one recording a side") != std::string::npos) return true;
    return false;
  };
  EXPECT_TRUE(warned(diff_traces(make_trace(spec_of(1)), make_trace(spec_of(2)), DiffOptions{})));
  EXPECT_TRUE(warned(diff_traces(make_trace(spec_of(1)), make_trace(spec_of(2, 3)), DiffOptions{})));
  EXPECT_FALSE(warned(diff_traces(make_trace(spec_of(1, 3)), make_trace(spec_of(2, 3)), DiffOptions{})));
}

// The allocator settings record wrote (the Record chunk's "malloc") decide what the notes warn of:
// glibc's dynamic thresholds at one recording a side (8 false alarms in 20 pairs, docs/diff.md), and
// sides that ran with different settings.
TEST(TraceDiff, NotesSayWhatTheAllocatorSettingsLeaveUnseen) {
  auto recorded = [](int seed, const char* malloc_setting) {
    trace::Trace t = make_trace(spec_of(seed));
    if (malloc_setting != nullptr) t.record.set("malloc", malloc_setting);
    return t;
  };
  auto note_with = [](const DiffResult& r, const std::string& text) {
    for (const std::string& n : r.notes)
      if (n.find(text) != std::string::npos) return n;
    return std::string();
  };
  const char* pinned = "pinned: MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=67108864";
  const DiffResult both_pinned = diff_traces(recorded(1, pinned), recorded(2, pinned), DiffOptions{});
  EXPECT_EQ(note_with(both_pinned, "one recording a side").find("malloc"), std::string::npos);
  EXPECT_EQ(note_with(both_pinned, "different malloc settings"), "");
  const DiffResult user = diff_traces(recorded(1, "user: MALLOC_MMAP_THRESHOLD_=1048576"),
                                      recorded(2, "user: MALLOC_MMAP_THRESHOLD_=1048576"), DiffOptions{});
  EXPECT_EQ(note_with(user, "one recording a side").find("malloc"), std::string::npos);

  const DiffResult mixed = diff_traces(recorded(1, "default"), recorded(2, pinned), DiffOptions{});
  EXPECT_NE(note_with(mixed, "one recording a side").find("dynamic thresholds"), std::string::npos);
  const std::string different = note_with(mixed, "different malloc settings");
  EXPECT_NE(different.find("BASE: default;"), std::string::npos) << different;
  EXPECT_NE(different.find("NEW: pinned"), std::string::npos) << different;

  const DiffResult imported = diff_traces(recorded(1, nullptr), recorded(2, nullptr), DiffOptions{});
  EXPECT_NE(note_with(imported, "one recording a side").find("dynamic thresholds"), std::string::npos);
  EXPECT_EQ(note_with(imported, "different malloc settings"), "");
}

// A trace whose every step runs an op of its own name: 10,000 steps and 10,000 items. The per-step
// samples are kept per occurrence, not items x steps (which would be 100 million values a side).
TEST(TraceDiff, ManyStepsAndManyItemsStayInBounds) {
  auto trace_of = [](uint64_t seed) {
    trace::Trace t;
    trace::Process p;
    p.pid = 7;
    const uint16_t proc = t.add_process(p);
    std::mt19937_64 rng(seed);
    int64_t now = 1'000'000;
    for (int k = 0; k < 10000; ++k) {
      SpanRecord step, op;
      step.span_id = 2 * static_cast<uint64_t>(k) + 1;
      op.span_id = step.span_id + 1;
      step.process = op.process = proc;
      step.tid = op.tid = 1;
      step.kind = op.kind = static_cast<uint8_t>(SpanKind::kSpan);
      step.level = static_cast<uint8_t>(Level::kModel);
      step.activity = static_cast<uint8_t>(ActivityType::kAnnotation);
      step.name = t.strings.intern("predict");
      op.level = static_cast<uint8_t>(Level::kLayer);
      op.activity = static_cast<uint8_t>(ActivityType::kCpuOp);
      op.name = t.strings.intern("op" + std::to_string(k));
      step.start_ns = now;
      op.start_ns = now + 1000;
      op.end_ns = op.start_ns + 10'000 + static_cast<int64_t>(rng() % 1000);
      step.end_ns = op.end_ns + 1000;
      now = step.end_ns + 500;
      t.add_span(step);
      t.add_span(op);
    }
    return t;
  };
  const DiffResult r = diff_traces(trace_of(1), trace_of(2), DiffOptions{});
  EXPECT_EQ(r.step.base_steps, 9999u);  // the first left out
  EXPECT_EQ(r.items.size(), 10000u);    // the ops of the steps kept, and (between ops)
  EXPECT_FALSE(r.has_regression) << r.verdict;
}

// --top: at most N rows in every table.
TEST(TraceDiff, TopLimitsEveryTable) {
  TraceSpec next = spec_of(2);
  next.ops.push_back({"aten::mm", "[[384,384],[384,384]]", "head", 300});
  const DiffResult r = diff_traces(make_trace(spec_of(1)), make_trace(next), DiffOptions{});
  for (size_t top : {0u, 1u, 2u, 3u}) {
    for (const table::Table& t : diff_tables(r, top)) EXPECT_LE(t.rows.size(), top) << t.name;
  }
  const std::vector<table::Table> all = diff_tables(r, 1000);
  ASSERT_EQ(all.size(), 3u);  // totals, changes, verdict (no device work)
  EXPECT_EQ(all[1].rows.size(), r.items.size());
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
