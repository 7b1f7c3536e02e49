// op_stats: shares of top-level op time, self (exclusive) time and percentiles, on the CPU fixture
// (worked out by hand) and on generated op forests of realistic size against a brute-force count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <unordered_map>

#include "analysis/stats.h"
#include "analysis_test_util.h"
#include "fixture_traces.h"

namespace strata::testing {
namespace {

// NumPy's default percentile, written out independently of analysis::percentile_sorted.
double numpy_percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  double pos = q / 100 * static_cast<double>(v.size() - 1);
  size_t below = static_cast<size_t>(pos);
  if (below + 1 >= v.size()) return v.back();
  return v[below] * (1 - (pos - static_cast<double>(below))) + v[below + 1] * (pos - static_cast<double>(below));
}

TEST(OpStats, SharesAreOfTopLevelOpTimeAndSelfExcludesNestedOps) {
  trace::Trace trace = cpu_model_trace();
  auto run = run_analysis(trace, "op_stats", {{"top", "0"}});
  const auto& t = run.table();
  // Per evaluation of batch b (latency L = 10, 12, 20, 39 ms; 5 evaluations, one at 5 L):
  // conv1 0.15 L, relu1 0.05 L, conv2 0.15 L, add 0.05 L, fc 0.1 L: the top-level ops take 0.5 L,
  // 0.5 x 9 x 81 = 364.5 ms in all. Each conv holds an aten::convolution of 0.9 of its time.
  size_t conv1 = row_where(t, "name", "conv1");
  EXPECT_NEAR(num(t, conv1, "total_pct"), 100 * 0.15 / 0.5, 1e-9);  // 30%, not 0.15 / (0.5 + 0.27)
  EXPECT_NEAR(num(t, conv1, "self_ms"), 0.1 * 0.15 * 9 * 81, 1e-9);
  EXPECT_NEAR(num(t, conv1, "self_pct"), 100 * 0.015 / 0.5, 1e-9);
  size_t nested = row_where(t, "name", "aten::convolution");
  EXPECT_NEAR(num(t, nested, "total_pct"), 100 * 0.27 / 0.5, 1e-9);
  EXPECT_NEAR(num(t, nested, "self_pct"), 100 * 0.27 / 0.5, 1e-9);
  double self_pct = 0;
  for (size_t r = 0; r < t.rows.size(); ++r) self_pct += num(t, r, "self_pct");
  EXPECT_NEAR(self_pct, 100, 0.05);  // rounding of each cell to 0.01
  EXPECT_NE(t.notes[0].find("top-level op time"), std::string::npos);
  EXPECT_NE(t.notes[0].find("364.5000 ms"), std::string::npos) << t.notes[0];
  // Percentiles of conv1's 20 instance times, by brute force.
  std::vector<double> conv1_ms;
  for (const SpanRecord& s : trace.spans)
    if (trace.name(s) == "conv1") conv1_ms.push_back(static_cast<double>(s.duration_ns()) / 1e6);
  ASSERT_EQ(conv1_ms.size(), 20u);
  EXPECT_NEAR(num(t, conv1, "p50_ms"), numpy_percentile(conv1_ms, 50), 1e-9);
  EXPECT_NEAR(num(t, conv1, "p90_ms"), numpy_percentile(conv1_ms, 90), 1e-9);
  EXPECT_NEAR(num(t, conv1, "p99_ms"), numpy_percentile(conv1_ms, 99), 1e-9);
  // Sorting by self time puts the nested op first, and an unknown sort key says what it takes.
  auto by_self = run_analysis(trace, "op_stats", {{"sort", "self"}});
  EXPECT_EQ(text(by_self.table(), 0, "name"), "aten::convolution");
  auto bad = run_analysis(trace, "op_stats", {{"sort", "flops"}});
  ASSERT_TRUE(bad.result.missing_input.has_value());
  EXPECT_NE(bad.result.missing_input->find("total, self"), std::string::npos);
}

TEST(OpStats, PercentileInterpolatesBetweenRanks) {
  const std::vector<double> v = {1, 2, 3, 4, 10};
  EXPECT_DOUBLE_EQ(analysis::percentile_sorted(v, 50), 3);
  EXPECT_DOUBLE_EQ(analysis::percentile_sorted(v, 90), 4 + 0.6 * 6);
  EXPECT_DOUBLE_EQ(analysis::percentile_sorted(v, 100), 10);
  EXPECT_DOUBLE_EQ(analysis::percentile_sorted(std::vector<double>{7}, 99), 7);
}

// A generated op forest: per thread, a sequence of top-level layer ops; each op may hold nested
// layer ops directly or through a library span (an op run from inside a library call), children
// laid out one after another inside the parent with gaps. Explicit parent ids, like recorded traces.
struct Forest {
  trace::Trace trace;
  std::map<std::string, std::vector<double>> total_ms;  // brute force, per name
  std::map<std::string, double> self_ms;
  double top_level_ms = 0;
};

Forest make_forest(size_t top_ops, int threads, uint64_t seed) {
  Forest f;
  std::mt19937_64 rng(seed);
  trace::Process p;
  p.pid = 42;
  f.trace.add_process(p);
  const char* names[] = {"aten::lstm", "aten::linear", "aten::addmm", "aten::tanh", "aten::sigmoid",
                         "aten::mul", "aten::cat", "aten::conv2d", "aten::convolution", "aten::add_"};
  uint64_t next_id = 1;
  std::vector<SpanRecord> spans;
  // Returns the op's duration; fills spans (parents before children).
  std::function<int64_t(uint64_t, int64_t, int, uint32_t, bool)> op = [&](uint64_t parent, int64_t start, int depth,
                                                                          uint32_t tid, bool layer) -> int64_t {
    SpanRecord s;
    s.span_id = next_id++;
    s.parent_id = parent;
    s.tid = tid;
    s.level = static_cast<uint8_t>(layer ? Level::kLayer : Level::kLibrary);
    const std::string name = layer ? names[rng() % 10] : "onednn::primitive";
    s.name = f.trace.strings.intern(name);
    s.start_ns = start;
    const size_t index = spans.size();
    spans.push_back(s);
    int64_t cursor = start + 100 + static_cast<int64_t>(rng() % 1000);
    int64_t nested_layer_ns = 0;
    const int children = depth >= 4 ? 0 : static_cast<int>(rng() % 4);
    for (int c = 0; c < children; ++c) {
      const bool child_layer = rng() % 4 != 0;
      int64_t d = op(spans[index].span_id, cursor, depth + 1, tid, child_layer);
      // A layer child counts against this op's self time; a library child's own layer children do
      // too (they are this op's nearest layer descendants), the library call itself does not.
      if (layer) {
        if (child_layer) nested_layer_ns += d;
      }
      cursor += d + 50 + static_cast<int64_t>(rng() % 500);
    }
    spans[index].end_ns = cursor + static_cast<int64_t>(rng() % 2000);
    const int64_t duration = spans[index].end_ns - start;
    if (layer) {
      f.total_ms[name].push_back(static_cast<double>(duration) / 1e6);
      f.self_ms[name] += static_cast<double>(duration - nested_layer_ns) / 1e6;  // library grandchildren below
    }
    return duration;
  };
  for (int tid = 1; tid <= threads; ++tid) {
    int64_t now = 1'000'000;
    for (size_t k = 0; k < top_ops / threads; ++k) {
      int64_t d = op(0, now, 0, static_cast<uint32_t>(tid), true);
      f.top_level_ms += static_cast<double>(d) / 1e6;
      now += d + 1000;
    }
  }
  // Layer ops under library spans count against the nearest layer op above: fix the brute-force
  // self times with a second pass over explicit parents.
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < spans.size(); ++i) by_id[spans[i].span_id] = i;
  const uint8_t layer = static_cast<uint8_t>(Level::kLayer);
  for (const SpanRecord& s : spans) {
    if (s.level != layer) continue;
    auto parent = by_id.find(s.parent_id);
    if (parent == by_id.end() || spans[parent->second].level == layer) continue;  // direct child: done
    // Under a library span: find the nearest layer ancestor, if any.
    for (auto a = parent; a != by_id.end(); a = by_id.find(spans[a->second].parent_id)) {
      const SpanRecord& anc = spans[a->second];
      if (anc.level != layer) continue;
      f.self_ms[std::string(f.trace.strings.get(anc.name))] -= static_cast<double>(s.duration_ns()) / 1e6;
      break;
    }
  }
  std::sort(spans.begin(), spans.end(), [](const SpanRecord& a, const SpanRecord& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.span_id < b.span_id;
  });
  for (const SpanRecord& s : spans) f.trace.add_span(s);
  return f;
}

TEST(OpStats, GeneratedForestsMatchABruteForceCount) {
  // ~150k spans on 4 threads: nested ops, ops inside library calls inside ops.
  Forest f = make_forest(24'000, 4, 7);
  ASSERT_GT(f.trace.spans.size(), 100'000u);
  auto run = run_analysis(f.trace, "op_stats", {{"top", "0"}});
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), f.total_ms.size());
  for (const auto& [name, totals] : f.total_ms) {
    size_t r = row_where(t, "name", name);
    double total = 0;
    for (double v : totals) total += v;
    EXPECT_DOUBLE_EQ(num(t, r, "count"), static_cast<double>(totals.size())) << name;
    EXPECT_NEAR(num(t, r, "total_ms"), total, 1e-3) << name;
    EXPECT_NEAR(num(t, r, "self_ms"), f.self_ms[name], 1e-3) << name;
    EXPECT_NEAR(num(t, r, "total_pct"), 100 * total / f.top_level_ms, 0.006) << name;
    EXPECT_NEAR(num(t, r, "self_pct"), 100 * f.self_ms[name] / f.top_level_ms, 0.006) << name;
    EXPECT_NEAR(num(t, r, "p90_ms"), numpy_percentile(totals, 90), 1e-4) << name;
    EXPECT_NEAR(num(t, r, "p99_ms"), numpy_percentile(totals, 99), 1e-4) << name;
  }
}

}  // namespace
}  // namespace strata::testing
