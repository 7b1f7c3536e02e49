// Lower bounds on small hand-made DAGs with hand-computed answers, on the real exported torchvision
// graphs (googlenet: parallel < sequential; vgg16: equal) for arbitrary positive layer costs, and the
// critical-path DOT (golden; long and awkward names rendered by Graphviz).
#include "lowerbound/bounds/bounds.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <functional>
#include <random>
#include <set>

#include "../test_util.h"
#include "lowerbound/bounds/estimate.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {
namespace {

// Builds a LayerModel from edges (layers must be listed in topological order).
LayerModel dag(size_t n, const std::vector<std::pair<uint32_t, uint32_t>>& edges) {
  LayerModel m;
  m.name = "g";
  for (size_t i = 0; i < n; ++i) {
    Layer l;
    l.name = std::string(1, static_cast<char>('A' + i));
    l.op_type = "Op";
    m.layers.push_back(l);
  }
  for (auto [from, to] : edges) {
    m.layers[to].preds.push_back(from);
    m.layers[from].succs.push_back(to);
  }
  return m;
}

TEST(Bounds, DiamondTakesTheSlowerBranch) {
  // A(1) -> B(2) -> D(1);  A -> C(5) -> D.  Sequential 9, parallel 1 + 5 + 1 = 7 via C.
  LayerModel m = dag(4, {{0, 1}, {0, 2}, {1, 3}, {2, 3}});
  Bounds b = compute_bounds(m, {1, 2, 5, 1});
  EXPECT_DOUBLE_EQ(b.sequential_ns, 9);
  EXPECT_DOUBLE_EQ(b.parallel_ns, 7);
  EXPECT_EQ(b.critical_path, (std::vector<uint32_t>{0, 2, 3}));
  EXPECT_EQ(b.finish_ns, (std::vector<double>{1, 3, 6, 7}));
}

TEST(Bounds, ChainParallelEqualsSequential) {
  LayerModel m = dag(4, {{0, 1}, {1, 2}, {2, 3}});
  Bounds b = compute_bounds(m, {3, 1, 4, 1});
  EXPECT_DOUBLE_EQ(b.sequential_ns, 9);
  EXPECT_DOUBLE_EQ(b.parallel_ns, 9);
  EXPECT_EQ(b.critical_path, (std::vector<uint32_t>{0, 1, 2, 3}));
}

TEST(Bounds, InceptionLikeBlockAndDisconnectedParts) {
  // Inception: S(2) -> {P1(4), P2a(1) -> P2b(6), P3(3)} -> Cat(1); plus an unconnected E(20).
  //   path via P2: 2 + 1 + 6 + 1 = 10; E alone = 20 -> parallel 20, sequential 37.
  LayerModel m = dag(7, {{0, 1}, {0, 2}, {2, 3}, {0, 4}, {1, 5}, {3, 5}, {4, 5}});
  Bounds b = compute_bounds(m, {2, 4, 1, 6, 3, 1, 20});
  EXPECT_DOUBLE_EQ(b.sequential_ns, 37);
  EXPECT_DOUBLE_EQ(b.parallel_ns, 20);
  EXPECT_EQ(b.critical_path, (std::vector<uint32_t>{6}));
  Bounds without_e = compute_bounds(m, {2, 4, 1, 6, 3, 1, 0});
  EXPECT_DOUBLE_EQ(without_e.parallel_ns, 10);
  EXPECT_EQ(without_e.critical_path, (std::vector<uint32_t>{0, 2, 3, 5}));
}

TEST(Bounds, ZeroCostLayersAndEmptyModel) {
  LayerModel m = dag(3, {{0, 1}, {1, 2}});
  Bounds b = compute_bounds(m, {0, 0, 0});
  EXPECT_DOUBLE_EQ(b.parallel_ns, 0);
  LayerModel empty;
  Bounds e = compute_bounds(empty, {});
  EXPECT_DOUBLE_EQ(e.sequential_ns, 0);
  EXPECT_TRUE(e.critical_path.empty());
}

TEST(Bounds, CriticalPathDotGolden) {
  LayerModel m = dag(3, {{0, 1}, {0, 2}});
  std::vector<double> lat = {1000, 5000, 2000};
  Bounds b = compute_bounds(m, lat);
  const std::string expected =
      "digraph \"g\" {\n"
      "  rankdir=TB;\n"
      "  node [shape=box, fontsize=10];\n"
      "  label=\"g: sequential 0.008 ms, parallel (critical path) 0.006 ms\";\n"
      "  n0 [label=\"A\\nOp \\n1.0 us\", color=red, penwidth=2, fontcolor=red];\n"
      "  n1 [label=\"B\\nOp \\n5.0 us\", color=red, penwidth=2, fontcolor=red];\n"
      "  n2 [label=\"C\\nOp \\n2.0 us\"];\n"
      "  n0 -> n1 [color=red, penwidth=2];\n"
      "  n0 -> n2;\n"
      "}\n";
  EXPECT_EQ(critical_path_dot(m, lat, b), expected);
}

// Longest path computed independently of compute_bounds: memoised over successors, from the sinks up.
double longest_path_by_successors(const LayerModel& m, const std::vector<double>& latency) {
  std::vector<double> memo(m.layers.size(), -1);
  std::function<double(size_t)> from = [&](size_t i) {
    if (memo[i] >= 0) return memo[i];
    double best = 0;
    for (uint32_t s : m.layers[i].succs) best = std::max(best, from(s));
    return memo[i] = latency[i] + best;
  };
  double longest = 0;
  for (size_t i = 0; i < m.layers.size(); ++i) longest = std::max(longest, from(i));
  return longest;
}

// The real graphs torch.onnx.export makes of torchvision's googlenet and vgg16
// (tests/lowerbound/data, export_models.py). No benchmark is needed: whatever positive latency each
// layer that needs a library call has, googlenet's inception branches run side by side in the
// parallel bound (< sequential), and vgg16 is a chain (parallel == sequential). Costs go through the
// analyzer (database rows per signature -> estimate_model), as measured ones would.
TEST(Bounds, TorchvisionGooglenetBranchesAndVgg16Chain) {
  LayerModel googlenet, vgg16;
  std::string error;
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/";
  ASSERT_TRUE(load_onnx_file(data + "googlenet.onnx", &googlenet, &error)) << error;
  ASSERT_TRUE(load_onnx_file(data + "vgg16.onnx", &vgg16, &error)) << error;
  EXPECT_EQ(googlenet.layers.size(), 179u);
  EXPECT_EQ(vgg16.layers.size(), 48u);
  for (unsigned trial = 0; trial < 25; ++trial) {
    std::mt19937_64 rng(trial);
    std::uniform_real_distribution<double> cost(1e3, 1e7);  // 1 us .. 10 ms
    auto estimate = [&](const LayerModel& m, LatencyIndex* index) {
      std::set<std::string> seen;
      for (const Layer& l : m.layers)
        if (plan_layer(l, "cpu", "f32", "nchw").cost != LayerCost::kFree && seen.insert(l.signature()).second)
          index->add(BenchRecord{"s", "cpu", "f32", "nchw", l.signature(), "direct", "", "",
                                 trial == 0 ? 1000.0 : cost(rng), 0, 1, 1, ""});
      return estimate_model(m, *index, "f32", "nchw", false);
    };
    LatencyIndex g_index, v_index;
    ModelEstimate g = estimate(googlenet, &g_index);
    ModelEstimate v = estimate(vgg16, &v_index);
    ASSERT_EQ(g.missing + g.unsupported, 0u);
    ASSERT_EQ(v.missing + v.unsupported, 0u);
    EXPECT_GT(g.measured, 100u);

    EXPECT_LT(g.bounds.parallel_ns, g.bounds.sequential_ns) << "trial " << trial;
    EXPECT_DOUBLE_EQ(g.bounds.parallel_ns, longest_path_by_successors(googlenet, g.latency_ns));
    // Through each inception block's Concat on the critical path, the path takes one branch of four.
    size_t concats_on_path = 0;
    std::set<uint32_t> path(g.bounds.critical_path.begin(), g.bounds.critical_path.end());
    for (uint32_t i : g.bounds.critical_path)
      if (googlenet.layers[i].op_type == "Concat") {
        ++concats_on_path;
        EXPECT_EQ(googlenet.layers[i].preds.size(), 4u);
        size_t branches_on_path = 0;
        for (uint32_t p : googlenet.layers[i].preds) branches_on_path += path.count(p);
        EXPECT_EQ(branches_on_path, 1u);
      }
    EXPECT_EQ(concats_on_path, 9u);  // inception 3a, 3b, 4a-4e, 5a, 5b

    EXPECT_DOUBLE_EQ(v.bounds.parallel_ns, v.bounds.sequential_ns) << "trial " << trial;
    EXPECT_DOUBLE_EQ(v.bounds.parallel_ns, longest_path_by_successors(vgg16, v.latency_ns));
    // Every layer with a cost is on vgg16's critical path.
    std::set<uint32_t> v_path(v.bounds.critical_path.begin(), v.bounds.critical_path.end());
    for (size_t i = 0; i < vgg16.layers.size(); ++i) {
      if (v.latency_ns[i] > 0) {
        EXPECT_TRUE(v_path.count(static_cast<uint32_t>(i))) << vgg16.layers[i].name;
      }
    }
  }
}

using strata::testing::run_command;

// A model name far longer than any fixed buffer, with characters DOT strings must escape (quotes,
// backslashes), a line break, a control character, non-ASCII UTF-8 and a byte that is not UTF-8:
// the graph title is complete and Graphviz renders the file.
TEST(Bounds, CriticalPathDotWithLongAndAwkwardNamesRendersToSvg) {
  LayerModel m = dag(3, {{0, 1}, {1, 2}});
  std::string tail(300, 'x');
  m.name = "model \"quoted\" back\\slash\nnext line\ttab caf\xc3\xa9 bad\xff " + tail;
  m.layers[1].name = "layer with \"quotes\" and \\";
  std::vector<double> lat = {1000, 2000, 3000};
  std::string dot = critical_path_dot(m, lat, compute_bounds(m, lat));
  const std::string escaped = "model \\\"quoted\\\" back\\\\slash\\nnext line?tab caf\xc3\xa9 bad? " + tail;
  EXPECT_NE(dot.find("digraph \"" + escaped + "\" {\n"), std::string::npos) << dot;
  EXPECT_NE(
      dot.find("  label=\"" + escaped + ": sequential 0.006 ms, parallel (critical path) 0.006 ms\";\n"),
      std::string::npos)
      << dot;
  EXPECT_NE(dot.find("label=\"layer with \\\"quotes\\\" and \\\\\\nOp \\n2.0 us\""), std::string::npos)
      << dot;

  std::string out;
  if (run_command("command -v dot", &out) != 0) GTEST_SKIP() << "graphviz `dot` is not installed";
  testing::TempDir dir;
  testing::write_file(dir.file("g.dot"), dot);
  ASSERT_EQ(run_command("dot -Tsvg " + dir.file("g.dot") + " -o " + dir.file("g.svg"), &out), 0)
      << out << dot;
  EXPECT_EQ(out, "");  // no syntax error, no warning
  std::string svg = testing::read_file(dir.file("g.svg"));
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find(tail + ": sequential 0.006 ms"), std::string::npos) << svg;
  EXPECT_NE(svg.find("caf\xc3\xa9"), std::string::npos);
  EXPECT_NE(svg.find("model &quot;quoted&quot; back\\slash"), std::string::npos) << svg;
}

}  // namespace
}  // namespace strata::lowerbound
