#include "analysis/layer_stats.h"

#include <algorithm>
#include <cctype>

namespace strata::analysis {

LayerStats compute_layer_stats(const Workload& w, const Params& params) {
  LayerStats out;
  out.options = stat_options(params, &out.param_error);
  out.selection = select_evaluations(w, params, out.options);
  const auto& evals = w.evaluations();
  size_t layers = 0;
  for (size_t e : out.selection.evaluations) layers = std::max(layers, evals[e].layers.size());
  std::vector<double> lat, mem;
  for (size_t k = 0; k < layers; ++k) {
    LayerRow row;
    row.index = k;
    lat.clear();
    mem.clear();
    bool first = true;
    for (size_t e : out.selection.evaluations) {
      const Evaluation& ev = evals[e];
      if (k >= ev.layers.size()) continue;
      uint32_t span = ev.layers[k];
      if (first) {
        row.span = span;
        row.name = w.layer_name(span);
        row.type = w.layer_type(span);
        row.shape = w.shape(span);
        first = false;
      }
      lat.push_back(ns_to_ms(w.trace().spans[span].duration_ns()));
      if (auto bytes = w.number(span, attr_keys::kAllocBytes)) mem.push_back(*bytes / 1e6);
    }
    if (first) continue;
    row.latency_ms = summarize(lat, out.options.trim);
    row.latency = pick(row.latency_ms, out.options.stat);
    if (!mem.empty()) {
      row.has_alloc = true;
      out.any_alloc = true;
      row.alloc_mb = pick(summarize(mem, out.options.trim), out.options.stat);
    }
    out.rows.push_back(std::move(row));
  }
  return out;
}

bool is_convolution(std::string_view type) {
  std::string lower(type);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("conv") != std::string::npos;
}

}  // namespace strata::analysis
