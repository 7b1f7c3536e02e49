// Lower bounds on small hand-made DAGs with hand-computed answers, and the critical-path DOT.
#include "lowerbound/bounds.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace strata::lowerbound
