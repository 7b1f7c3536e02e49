#include "lowerbound/bounds/bounds.h"

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

// Length of the valid UTF-8 sequence at s[i], 0 when the bytes there are not one.
size_t utf8_length(const std::string& s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  unsigned char b = byte(i);
  size_t n = b < 0x80 ? 1 : (b >> 5) == 0x6 ? 2 : (b >> 4) == 0xe ? 3 : (b >> 3) == 0x1e ? 4 : 0;
  if (n == 0 || i + n > s.size() || (n == 2 && b < 0xc2)) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((byte(i + k) >> 6) != 0x2) return 0;
  return n;
}

// Text inside a DOT double-quoted string: quotes and backslashes escaped, line breaks as DOT's "\n",
// other control characters and bytes that are not UTF-8 (Graphviz's input encoding) as '?', so any
// model or layer name gives a valid graph.
std::string dot_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    size_t n = utf8_length(s, i);
    if (n > 1) {
      out.append(s, i, n);
      i += n;
      continue;
    }
    ++i;
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (n == 0 || static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      out += '?';
    } else {
      out += c;
    }
  }
  return out;
}

std::string fixed(double value, int decimals) {
  int n = std::snprintf(nullptr, 0, "%.*f", decimals, value);
  std::string out(static_cast<size_t>(std::max(n, 0)) + 1, '\0');
  std::snprintf(out.data(), out.size(), "%.*f", decimals, value);
  out.resize(static_cast<size_t>(std::max(n, 0)));
  return out;
}

}  // namespace

std::string critical_path_dot(const LayerModel& model, const std::vector<double>& latency_ns,
                              const Bounds& bounds) {
  std::unordered_set<uint32_t> on_path(bounds.critical_path.begin(), bounds.critical_path.end());
  std::unordered_map<uint32_t, uint32_t> next_on_path;
  for (size_t k = 0; k + 1 < bounds.critical_path.size(); ++k)
    next_on_path[bounds.critical_path[k]] = bounds.critical_path[k + 1];
  const std::string name = dot_escape(model.name);
  std::string dot = "digraph \"" + name + "\" {\n  rankdir=TB;\n  node [shape=box, fontsize=10];\n";
  dot += "  label=\"" + name + ": sequential " + fixed(bounds.sequential_ns / 1e6, 3) +
         " ms, parallel (critical path) " + fixed(bounds.parallel_ns / 1e6, 3) + " ms\";\n";
  for (size_t i = 0; i < model.layers.size(); ++i) {
    const Layer& l = model.layers[i];
    dot += "  n" + std::to_string(i) + " [label=\"" + dot_escape(l.name) + "\\n" + dot_escape(l.op_type) +
           " " + (l.output_shapes.empty() ? "" : shape_text(l.output_shapes[0])) + "\\n" +
           fixed(latency_ns[i] / 1e3, 1) + " us\"" +
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
