#include "analysis/kernel_stats.h"

#include <map>

namespace strata::analysis {

KernelMetrics kernel_metrics(const Workload& w, uint32_t span) {
  KernelMetrics m;
  m.latency_ms = ns_to_ms(w.trace().spans[span].duration_ns());
  m.flops = w.number(span, attr_keys::kFlops);
  m.dram_read = w.number(span, attr_keys::kDramReadBytes);
  m.dram_write = w.number(span, attr_keys::kDramWriteBytes);
  m.bytes = w.number(span, attr_keys::kBytes);
  if (!m.bytes && (m.dram_read || m.dram_write)) m.bytes = m.dram_read.value_or(0) + m.dram_write.value_or(0);
  m.occupancy_pct = w.number(span, attr_keys::kAchievedOccupancy);
  return m;
}

std::string kernel_name(const Workload& w, uint32_t span) {
  return std::string(w.trace().name(w.trace().spans[span]));
}

std::optional<double> KernelGroup::intensity() const {
  if (!flops || !bytes || *bytes <= 0) return std::nullopt;
  return *flops / *bytes;
}

std::optional<double> KernelGroup::gflops_per_s() const {
  if (!flops || latency_ms <= 0) return std::nullopt;
  return *flops / (latency_ms * 1e-3) / 1e9;
}

Cell memory_bound_cell(const std::optional<double>& intensity, const std::optional<ResolvedPeaks>& peaks,
                       std::string_view kernel_name) {
  if (!intensity || !peaks) return Cell::empty();
  return Cell::text(*intensity < peaks->ceiling(kernel_name) / peaks->gbps ? "yes" : "no");
}

Cell tensor_core_cell(std::string_view kernel_name) {
  return Cell::text(is_tensor_core_kernel(kernel_name) ? "yes" : "no");
}

namespace {

struct Accumulator {
  uint32_t example = 0;
  // One slot per selected evaluation.
  std::vector<double> count, latency, flops, read, write, bytes, occupancy_sum, occupancy_n;
  bool has_flops = false, has_read = false, has_write = false, has_bytes = false, has_occupancy = false;
  explicit Accumulator(size_t evals)
      : count(evals),
        latency(evals),
        flops(evals),
        read(evals),
        write(evals),
        bytes(evals),
        occupancy_sum(evals),
        occupancy_n(evals) {}
};

}  // namespace

KernelGroups group_kernels(const Workload& w, const Params& params,
                           const std::function<std::optional<KernelKey>(uint32_t, size_t)>& key_of) {
  KernelGroups out;
  out.options = stat_options(params, &out.param_error);
  out.selection = select_evaluations(w, params, out.options);
  const size_t evals = out.selection.evaluations.size();
  std::map<KernelKey, Accumulator> acc;
  for (size_t slot = 0; slot < evals; ++slot) {
    const Evaluation& ev = w.evaluations()[out.selection.evaluations[slot]];
    for (size_t k = 0; k < ev.kernels.size(); ++k) {
      uint32_t span = ev.kernels[k];
      std::optional<KernelKey> key = key_of(span, k);
      if (!key) continue;
      auto it = acc.find(*key);
      if (it == acc.end()) {
        it = acc.emplace(*key, Accumulator(evals)).first;
        it->second.example = span;
      }
      Accumulator& a = it->second;
      KernelMetrics m = kernel_metrics(w, span);
      a.count[slot] += 1;
      a.latency[slot] += m.latency_ms;
      if (m.flops) a.flops[slot] += *m.flops, a.has_flops = true;
      if (m.dram_read) a.read[slot] += *m.dram_read, a.has_read = true;
      if (m.dram_write) a.write[slot] += *m.dram_write, a.has_write = true;
      if (m.bytes) a.bytes[slot] += *m.bytes, a.has_bytes = true;
      if (m.occupancy_pct)
        a.occupancy_sum[slot] += *m.occupancy_pct, a.occupancy_n[slot] += 1, a.has_occupancy = true;
    }
  }
  auto headline = [&](const std::vector<double>& v) {
    return pick(summarize(v, out.options.trim), out.options.stat);
  };
  for (auto& [key, a] : acc) {
    KernelGroup g;
    g.key = key;
    g.example_span = a.example;
    int32_t top = w.top_layer(a.example);
    g.layer = top >= 0 ? w.layer_position(static_cast<size_t>(top)) : -1;
    g.count = headline(a.count);
    g.latency_ms = headline(a.latency);
    if (a.has_flops) g.flops = headline(a.flops);
    if (a.has_read) g.dram_read = headline(a.read);
    if (a.has_write) g.dram_write = headline(a.write);
    if (a.has_bytes) g.bytes = headline(a.bytes);
    if (a.has_occupancy) {
      // Mean occupancy per evaluation (instances weighted equally), then the headline over evaluations.
      std::vector<double> per_eval;
      for (size_t s = 0; s < evals; ++s)
        if (a.occupancy_n[s] > 0) per_eval.push_back(a.occupancy_sum[s] / a.occupancy_n[s]);
      g.occupancy_pct = headline(per_eval);
    }
    out.total_latency_ms += g.latency_ms;
    out.groups.push_back(std::move(g));
  }
  if (w.kernel_role() == KernelRole::kLibrary)
    out.notes.push_back("CPU trace: library spans (e.g. oneDNN primitives) play the kernel role");
  for (const auto& n : out.selection.notes) out.notes.push_back(n);
  if (!out.param_error.empty()) out.notes.push_back(out.param_error);
  return out;
}

KernelGroups kernel_instances(const Workload& w, const Params& params) {
  // Occurrence counters reset per evaluation: ordinal 0 marks the first kernel of an evaluation.
  std::map<std::pair<int64_t, uint32_t>, int64_t> seen;
  return group_kernels(w, params, [&](uint32_t span, size_t ordinal) -> std::optional<KernelKey> {
    if (ordinal == 0) seen.clear();
    int32_t top = w.top_layer(span);
    int64_t layer = top >= 0 ? w.layer_position(static_cast<size_t>(top)) : -1;
    int64_t occurrence = seen[{layer, w.trace().spans[span].name}]++;
    return KernelKey{layer, kernel_name(w, span) + "#" + std::to_string(occurrence)};
  });
}

}  // namespace strata::analysis
