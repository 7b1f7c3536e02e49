// The flame graph's frames against a brute-force reference: every distinct stack prefix, its
// width (the samples of the stacks under it) and its left edge (the widths of the siblings before
// it in name order), computed directly from random folded stacks.
#include "report/flame.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace strata::report {
namespace {

struct Reference {
  std::map<std::vector<std::string>, uint64_t> width;  // prefix -> samples
  uint64_t total = 0;
};

Reference brute_force(const std::vector<std::pair<std::vector<std::string>, uint64_t>>& stacks) {
  Reference r;
  for (const auto& [frames, count] : stacks) {
    r.total += count;
    for (size_t n = 1; n <= frames.size(); ++n)
      r.width[std::vector<std::string>(frames.begin(), frames.begin() + static_cast<long>(n))] += count;
  }
  return r;
}

// Left edge of a prefix: the sum of the widths of the prefixes that sort before it at each depth
// (siblings in name order), as flamegraph.pl lays them out.
uint64_t left_edge(const Reference& r, const std::vector<std::string>& prefix) {
  uint64_t start = 0;
  for (size_t d = 0; d < prefix.size(); ++d) {
    std::vector<std::string> parent(prefix.begin(), prefix.begin() + static_cast<long>(d));
    for (const auto& [p, w] : r.width) {
      if (p.size() != d + 1 || !std::equal(parent.begin(), parent.end(), p.begin())) continue;
      if (p[d] < prefix[d]) start += w;
    }
  }
  return start;
}

std::vector<std::pair<std::vector<std::string>, uint64_t>> random_stacks(uint32_t seed, int count) {
  std::mt19937 rng(seed);
  const char* names[] = {"main", "run", "[op] conv", "[op] relu", "gemm", "memcpy", "python", "loop"};
  std::vector<std::pair<std::vector<std::string>, uint64_t>> out;
  for (int i = 0; i < count; ++i) {
    std::vector<std::string> frames;
    int depth = 1 + static_cast<int>(rng() % 6);
    for (int d = 0; d < depth; ++d) frames.emplace_back(names[rng() % 8]);
    out.emplace_back(frames, 1 + rng() % 50);
  }
  return out;
}

std::string fold(const std::vector<std::pair<std::vector<std::string>, uint64_t>>& stacks) {
  std::string text;
  for (const auto& [frames, count] : stacks) {
    for (size_t i = 0; i < frames.size(); ++i) text += (i ? ";" : "") + frames[i];
    text += " " + std::to_string(count) + "\n";
  }
  return text;
}

// Walks the graph's depth-first node list back into prefixes (a node's parent is the last node
// one level up).
std::vector<std::vector<std::string>> prefixes(const FlameGraph& g) {
  std::vector<std::vector<std::string>> out;
  std::vector<std::string> path;
  for (const FlameNode& n : g.nodes) {
    path.resize(n.depth);
    path.push_back(g.names[n.name]);
    out.push_back(path);
  }
  return out;
}

TEST(FlameGraph, EveryFrameMatchesBruteForceWithoutPruning) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto stacks = random_stacks(seed, 60);
    Reference ref = brute_force(stacks);
    FlameGraph g = build_flame_graph(fold(stacks), 1000000, 0.0);
    ASSERT_EQ(g.samples, ref.total);
    ASSERT_EQ(g.nodes.size(), ref.width.size()) << "seed " << seed;
    EXPECT_EQ(g.frames, ref.width.size());
    auto paths = prefixes(g);
    for (size_t i = 0; i < g.nodes.size(); ++i) {
      auto it = ref.width.find(paths[i]);
      ASSERT_NE(it, ref.width.end());
      EXPECT_EQ(g.nodes[i].value, it->second);
      EXPECT_EQ(g.nodes[i].start, left_edge(ref, paths[i]));
    }
  }
}

TEST(FlameGraph, PruningKeepsTheWidestFramesAndTheirParents) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    auto stacks = random_stacks(seed, 200);
    Reference ref = brute_force(stacks);
    const double share = 0.01;
    const size_t max_nodes = 40;
    FlameGraph g = build_flame_graph(fold(stacks), max_nodes, share);
    // Expected: prefixes at least 1% wide, at most 40 of them, the widest.
    std::vector<uint64_t> wide;
    for (const auto& [p, w] : ref.width)
      if (static_cast<double>(w) >= share * static_cast<double>(ref.total)) wide.push_back(w);
    std::sort(wide.rbegin(), wide.rend());
    ASSERT_EQ(g.nodes.size(), std::min(wide.size(), max_nodes)) << "seed " << seed;
    auto paths = prefixes(g);
    std::set<std::vector<std::string>> kept(paths.begin(), paths.end());
    ASSERT_EQ(kept.size(), paths.size());
    for (size_t i = 0; i < paths.size(); ++i) {
      EXPECT_EQ(g.nodes[i].value, ref.width.at(paths[i]));
      EXPECT_EQ(g.nodes[i].start, left_edge(ref, paths[i])) << "pruned siblings keep their width";
      if (paths[i].size() > 1) {
        EXPECT_TRUE(kept.count(std::vector<std::string>(paths[i].begin(), paths[i].end() - 1)))
            << "parent kept";
      }
      EXPECT_GE(g.nodes[i].value, wide[std::min(wide.size(), max_nodes) - 1]);
    }
  }
}

TEST(FlameGraph, SkipsLinesWithoutACountAndReadsNamesWithSpaces) {
  FlameGraph g = build_flame_graph("a b;c d 5\nno count here\n;x 0\n\nlast 3", 100, 0.0);
  EXPECT_EQ(g.samples, 8u);
  ASSERT_EQ(g.nodes.size(), 3u);
  std::string json = flame_graph_json(g);
  EXPECT_NE(json.find("\"a b\""), std::string::npos);
  EXPECT_NE(json.find("\"c d\""), std::string::npos);
  EXPECT_EQ(json.find("no count"), std::string::npos);
}

}  // namespace
}  // namespace strata::report
