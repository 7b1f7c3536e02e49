#include "analysis/layer_stats.h"

#include <algorithm>
#include <cctype>

#include "core/memory_keys.h"

namespace strata::analysis {
namespace {
// Memory keys of the producers (core/memory_keys.h).
constexpr std::string_view kNetKey = memory_keys::kNetAllocBytes;
constexpr std::string_view kSelfNetKey = memory_keys::kSelfNetAllocBytes;
constexpr std::string_view kPeakKey = memory_keys::kPeakAllocBytes;
}  // namespace

LayerStats compute_layer_stats(const Workload& w, const Params& params) {
  LayerStats out;
  out.options = stat_options(params, &out.param_error);
  out.selection = select_evaluations(w, params, out.options);
  const auto& evals = w.evaluations();
  size_t layers = 0;
  for (size_t e : out.selection.evaluations) layers = std::max(layers, evals[e].layers.size());
  std::vector<double> lat, mem, net, self_net, peak;
  bool saw_net = false;  // a producer that writes net/self/peak (zeros for ops that touched nothing)
  for (size_t k = 0; k < layers; ++k) {
    LayerRow row;
    row.index = k;
    for (auto* v : {&lat, &mem, &net, &self_net, &peak}) v->clear();
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
      if (auto bytes = w.number(span, attr_keys::kAllocBytes)) {
        mem.push_back(*bytes / 1e6);
        // Producers leave net/self/peak out of ops that neither allocated nor freed (docs/memory.md).
        if (auto n = w.number(span, kNetKey)) {
          saw_net = true;
          net.push_back(*n / 1e6);
          self_net.push_back(w.number(span, kSelfNetKey).value_or(0) / 1e6);
          peak.push_back(w.number(span, kPeakKey).value_or(0) / 1e6);
        } else if (*bytes == 0) {
          for (auto* v : {&net, &self_net, &peak}) v->push_back(0);
        }
      }
    }
    if (first) continue;
    row.latency_ms = summarize(lat, out.options.trim);
    row.latency = pick(row.latency_ms, out.options.stat);
    if (!mem.empty()) {
      row.has_alloc = true;
      out.any_alloc = true;
      row.alloc_mb = pick(summarize(mem, out.options.trim), out.options.stat);
    }
    // Net columns only from evaluations that recorded them all (a trace from before they existed
    // has alloc_bytes alone: its zeros above would pass for measurements).
    if (!net.empty() && net.size() == mem.size()) {
      row.has_net = true;
      row.net_mb = pick(summarize(net, out.options.trim), out.options.stat);
      row.self_net_mb = pick(summarize(self_net, out.options.trim), out.options.stat);
      row.peak_mb = pick(summarize(peak, out.options.trim), out.options.stat);
    }
    out.rows.push_back(std::move(row));
  }
  // A trace with alloc_bytes alone (older recordings and imports): an op's alloc_bytes 0 says
  // nothing about what it freed, so no net column at all.
  for (LayerRow& row : out.rows) {
    row.has_net = row.has_net && saw_net;
    out.any_net = out.any_net || row.has_net;
  }
  return out;
}

std::vector<std::string> memory_notes(const LayerStats& s) {
  if (!s.any_alloc)
    return {
        "allocated memory not recorded (no alloc_bytes attribute on layer spans): `strata record --level "
        "layer` records it; a torch.profiler trace has it when profiled with profile_memory=True"};
  std::vector<std::string> notes;
  if (!s.any_net)
    notes.push_back(
        "net, self and peak memory not recorded (the trace has alloc_bytes only: recorded or "
        "imported before Strata kept them); alloc_mb is gross, frees not subtracted");
  notes.push_back(
      "memory in MB = 10^6 bytes (torch.profiler's table prints MiB as \"Mb\"): alloc_mb gross "
      "allocated; net_mb = allocated - freed = torch.profiler \"CPU Mem\" (+ \"CUDA Mem\" on "
      "GPU traces); self_net_mb = \"Self CPU Mem\"; peak_mb = highest net level while it ran");
  return notes;
}

bool is_convolution(std::string_view type) {
  std::string lower(type);
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  return lower.find("conv") != std::string::npos;
}

}  // namespace strata::analysis
