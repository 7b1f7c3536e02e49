#include "lowerbound/bounds.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <unordered_set>

namespace strata::lowerbound {

Bounds compute_bounds(const LayerModel& model, const std::vector<double>& latency_ns) {
  Bounds b;
  const size_t n = model.layers.size();
  b.finish_ns.assign(n, 0);
  std::vector<int64_t> via(n, -1);  // predecessor on the longest path into each layer
  int64_t last = -1;
  for (size_t i = 0; i < n; ++i) {
    double start = 0;
    for (uint32_t p : model.layers[i].preds)
      if (via[i] < 0 || b.finish_ns[p] > start) {
        start = b.finish_ns[p];
        via[i] = p;
      }
    b.finish_ns[i] = start + latency_ns[i];
    b.sequential_ns += latency_ns[i];
    if (last < 0 || b.finish_ns[i] > b.finish_ns[static_cast<size_t>(last)]) last = static_cast<int64_t>(i);
  }
  if (last >= 0) {
    b.parallel_ns = b.finish_ns[static_cast<size_t>(last)];
    for (int64_t i = last; i >= 0; i = via[static_cast<size_t>(i)])
      b.critical_path.push_back(static_cast<uint32_t>(i));
    std::reverse(b.critical_path.begin(), b.critical_path.end());
  }
  return b;
}

namespace {
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

std::string critical_path_dot(const LayerModel& model, const std::vector<double>& latency_ns,
                              const Bounds& bounds) {
  std::unordered_set<uint32_t> on_path(bounds.critical_path.begin(), bounds.critical_path.end());
  std::unordered_map<uint32_t, uint32_t> next_on_path;
  for (size_t k = 0; k + 1 < bounds.critical_path.size(); ++k)
    next_on_path[bounds.critical_path[k]] = bounds.critical_path[k + 1];
  std::string dot =
      "digraph \"" + dot_escape(model.name) + "\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  char buf[96];
  std::snprintf(buf, sizeof buf, "  label=\"%s: sequential %.3f ms, parallel (critical path) %.3f ms\";\n",
                dot_escape(model.name).c_str(), bounds.sequential_ns / 1e6, bounds.parallel_ns / 1e6);
  dot += buf;
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    std::snprintf(buf, sizeof buf, "%.1f us", latency_ns[i] / 1e3);
    dot += "  n" + std::to_string(i) + " [label=\"" + dot_escape(l.name) + "\\n" + dot_escape(l.op_type) +
           " " + (l.output_shapes.empty() ? "" : shape_text(l.output_shapes[0])) + "\\n" + buf + "\"" +
           (on_path.count(static_cast<uint32_t>(i)) ? ", color=red, penwidth=2, fontcolor=red" : "") + "];\n";
  }
  for (size_t i = 0; i < model.layers.size(); ++i)
    for (uint32_t s : model.layers[i].succs) {
      auto next = next_on_path.find(static_cast<uint32_t>(i));
      bool critical = next != next_on_path.end() && next->second == s;
      dot += "  n" + std::to_string(i) + " -> n" + std::to_string(s) +
             (critical ? " [color=red, penwidth=2]" : "") + ";\n";
    }
  dot += "}\n";
  return dot;
}

}  // namespace strata::lowerbound
