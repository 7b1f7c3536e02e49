#include "report/flame.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <memory>
#include <unordered_map>

#include "export/text_escape.h"

namespace strata::report {
namespace {

struct Frame {
  std::string name;
  uint64_t value = 0;
  uint32_t depth = 0;
  bool kept = false;
  std::map<std::string, std::unique_ptr<Frame>, std::less<>> children;  // name order: the layout
};

void add_stack(Frame* root, std::string_view stack, uint64_t count) {
  Frame* node = root;
  uint32_t depth = 0;
  size_t begin = 0;
  while (begin <= stack.size()) {
    size_t end = stack.find(';', begin);
    if (end == std::string_view::npos) end = stack.size();
    std::string_view name = stack.substr(begin, end - begin);
    auto it = node->children.find(name);
    if (it == node->children.end())
      it = node->children.emplace(std::string(name), std::make_unique<Frame>()).first;
    Frame* child = it->second.get();
    child->name = std::string(name);
    child->depth = depth++;
    child->value += count;
    node = child;
    begin = end + 1;
  }
}

void collect(Frame* node, std::vector<Frame*>* all) {
  for (auto& [name, child] : node->children) {
    all->push_back(child.get());
    collect(child.get(), all);
  }
}

void emit(const Frame& node, uint64_t start, FlameGraph* graph,
          std::unordered_map<std::string, uint32_t>* ids) {
  uint64_t offset = start;
  for (const auto& [name, child] : node.children) {
    if (child->kept) {
      auto [it, added] = ids->emplace(child->name, static_cast<uint32_t>(graph->names.size()));
      if (added) graph->names.push_back(child->name);
      graph->nodes.push_back({child->depth, offset, child->value, it->second});
      graph->max_depth = std::max<uint64_t>(graph->max_depth, child->depth);
      emit(*child, offset, graph, ids);
    }
    offset += child->value;  // a pruned sibling still takes its width: the gap shows it
  }
}

}  // namespace

FlameGraph build_flame_graph(std::string_view collapsed, size_t max_nodes, double min_share) {
  Frame root;
  FlameGraph graph;
  size_t begin = 0;
  while (begin < collapsed.size()) {
    size_t end = collapsed.find('\n', begin);
    if (end == std::string_view::npos) end = collapsed.size();
    std::string_view line = collapsed.substr(begin, end - begin);
    begin = end + 1;
    size_t space = line.rfind(' ');
    if (space == std::string_view::npos || space == 0) continue;
    uint64_t count = 0;
    std::string_view digits = line.substr(space + 1);
    auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (ec != std::errc() || ptr != digits.data() + digits.size() || count == 0) continue;
    add_stack(&root, line.substr(0, space), count);
    graph.samples += count;
  }
  std::vector<Frame*> all;
  collect(&root, &all);
  graph.frames = all.size();
  const double floor = min_share * static_cast<double>(graph.samples);
  std::vector<Frame*> candidates;
  for (Frame* f : all)
    if (static_cast<double>(f->value) >= floor) candidates.push_back(f);
  // A parent is at least as wide as its child and shallower: sorting by width, then depth, puts
  // every parent ahead of its children, so the first max_nodes form a tree.
  std::stable_sort(candidates.begin(), candidates.end(), [](const Frame* a, const Frame* b) {
    return a->value != b->value ? a->value > b->value : a->depth < b->depth;
  });
  if (candidates.size() > max_nodes) candidates.resize(max_nodes);
  for (Frame* f : candidates) f->kept = true;
  std::unordered_map<std::string, uint32_t> ids;
  emit(root, 0, &graph, &ids);
  return graph;
}

std::string flame_graph_json(const FlameGraph& graph) {
  std::string out = "{\"samples\":" + std::to_string(graph.samples) +
                    ",\"frames\":" + std::to_string(graph.frames) +
                    ",\"max_depth\":" + std::to_string(graph.max_depth) + ",\"names\":[";
  for (size_t i = 0; i < graph.names.size(); ++i) {
    if (i) out += ',';
    exporter::append_json_string(&out, graph.names[i]);
  }
  out += "],\"nodes\":[";
  for (size_t i = 0; i < graph.nodes.size(); ++i) {
    const FlameNode& n = graph.nodes[i];
    if (i) out += ',';
    out += '[' + std::to_string(n.depth) + ',' + std::to_string(n.start) + ',' + std::to_string(n.value) +
           ',' + std::to_string(n.name) + ']';
  }
  out += "]}";
  return out;
}

}  // namespace strata::report
