// The flame graph of a report: the folded stacks of `strata profile --format collapsed`
// (profile::format_collapsed) merged into a tree of frames, laid out as flamegraph.pl does
// (children of a frame side by side in name order, widths in samples), and pruned so that a
// profile of any length embeds a bounded number of frames.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::report {

struct FlameNode {
  uint32_t depth = 0;  // 0: a root frame (the outermost op, or the outermost function)
  uint64_t start = 0;  // offset in samples from the left edge
  uint64_t value = 0;  // samples in this frame and below
  uint32_t name = 0;   // index into FlameGraph::names
};

struct FlameGraph {
  uint64_t samples = 0;  // all samples of the folded stacks
  std::vector<std::string> names;
  std::vector<FlameNode> nodes;  // depth-first, parents before children
  uint64_t frames = 0;           // distinct frames before pruning
  uint64_t max_depth = 0;
};

// `collapsed`: lines "frame;frame;...;leaf COUNT". Frames under min_share of the samples are left
// out (their samples stay in their parent's width), then at most max_nodes of the widest are kept;
// a frame is never kept without its parent. Lines without a count are skipped.
FlameGraph build_flame_graph(std::string_view collapsed, size_t max_nodes, double min_share);

// {"samples":N,"frames":F,"names":[...],"nodes":[[depth,start,value,name],...]}
std::string flame_graph_json(const FlameGraph& graph);

}  // namespace strata::report
