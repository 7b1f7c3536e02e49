// XSP Table I, kernel level: the kernel information table and kernels aggregated by name, by layer
// and by model; device vs non-device latency per layer; kernel metrics aggregated by layer.
#include <algorithm>
#include <map>

#include "analysis/kernel_stats.h"
#include "analysis/layer_stats.h"

namespace strata::analysis {
namespace {

constexpr const char* kNoFlops =
    "no flops/bytes metrics on kernels: arithmetic intensity and throughput left empty";

constexpr const char* kTensorCoreNote =
    "tensor_core: the kernel's name marks a tensor-core family (hmma/imma/gmma/wgmma, XMMA with "
    "f16/bf16/tf32/"
    "int8/fp8 types, CUTLASS tensorop, cuBLAS nvjet, FlashAttention, MMA tiles such as s16816, AMD mfma); "
    "memory_bound compares with the ridge of the kernel's own ceiling (its tensor-core peak)";

double percent(double part, double whole) { return whole > 0 ? 100.0 * part / whole : 0; }
Cell mb(const std::optional<double>& bytes) { return bytes ? Cell::real(*bytes / 1e6, 3) : Cell::empty(); }
Cell gflop(const std::optional<double>& flops) { return flops ? Cell::real(*flops / 1e9, 3) : Cell::empty(); }

AnalysisResult finish(Table t, const KernelGroups& g, const std::optional<ResolvedPeaks>& peaks,
                      bool flops_used) {
  bool any_flops = false;
  for (const KernelGroup& k : g.groups) any_flops = any_flops || k.flops.has_value();
  if (flops_used && !any_flops) t.notes.push_back(kNoFlops);
  if (flops_used && any_flops && peaks)
    t.notes.push_back("memory bound: intensity below the ridge point; " + peaks->description);
  if (std::find(t.columns.begin(), t.columns.end(), "tensor_core") != t.columns.end())
    t.notes.push_back(kTensorCoreNote);
  for (const auto& n : g.notes) t.notes.push_back(n);
  AnalysisResult r;
  r.tables.push_back(std::move(t));
  return r;
}

std::optional<ResolvedPeaks> peaks_or_note(const AnalysisInput& input, const Workload& w, Table* t) {
  std::string why;
  auto peaks = resolve_peaks(input.trace, input.params, w.kernel_role() == KernelRole::kLibrary, &why);
  if (!peaks) t->notes.push_back("memory_bound left empty: " + why);
  return peaks;
}

class KernelTable : public Analysis {
 public:
  std::string_view name() const override { return "kernel_table"; }
  std::string_view description() const override {
    return "kernel information table: each kernel with its layer, latency, flops, DRAM traffic, occupancy, "
           "arithmetic intensity and throughput (--param top=30)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    KernelGroups g = kernel_instances(*w, input.params);
    Table t = make_table("kernel_table", "Kernel information",
                         {"kernel", "layer_index", "latency_ms", "gflop", "dram_read_mb", "dram_write_mb",
                          "occupancy_pct", "flop_per_byte", "gflop_per_s", "memory_bound", "tensor_core"});
    auto peaks = peaks_or_note(input, *w, &t);
    for (const KernelGroup& k : g.groups) {
      const std::string name = kernel_name(*w, k.example_span);
      t.rows.push_back({Cell::text(name), k.layer >= 0 ? Cell::integer(k.layer) : Cell::empty(),
                        Cell::real(k.latency_ms, 4), gflop(k.flops), mb(k.dram_read), mb(k.dram_write),
                        real_or_empty(k.occupancy_pct, 2), real_or_empty(k.intensity(), 3),
                        real_or_empty(k.gflops_per_s(), 3), memory_bound_cell(k.intensity(), peaks, name),
                        tensor_core_cell(name)});
    }
    sort_rows_desc(&t, 2);
    keep_top(&t, input.params, 30);
    return finish(std::move(t), g, peaks, true);
  }
};

class KernelsByName : public Analysis {
 public:
  std::string_view name() const override { return "kernels_by_name"; }
  std::string_view description() const override {
    return "kernels aggregated by name: count, latency and share, flops, DRAM traffic, intensity (--param "
           "top=30)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    KernelGroups g = group_kernels(*w, input.params, [&](uint32_t span, size_t) -> std::optional<KernelKey> {
      return KernelKey{0, kernel_name(*w, span)};
    });
    Table t =
        make_table("kernels_by_name", "Kernels aggregated by name",
                   {"kernel", "count", "latency_ms", "latency_pct", "gflop", "dram_read_mb", "dram_write_mb",
                    "occupancy_pct", "flop_per_byte", "gflop_per_s", "memory_bound", "tensor_core"});
    auto peaks = peaks_or_note(input, *w, &t);
    for (const KernelGroup& k : g.groups)
      t.rows.push_back({Cell::text(k.key.second), Cell::real(k.count, 1), Cell::real(k.latency_ms, 4),
                        Cell::real(percent(k.latency_ms, g.total_latency_ms), 2), gflop(k.flops),
                        mb(k.dram_read), mb(k.dram_write), real_or_empty(k.occupancy_pct, 2),
                        real_or_empty(k.intensity(), 3), real_or_empty(k.gflops_per_s(), 3),
                        memory_bound_cell(k.intensity(), peaks, k.key.second),
                        tensor_core_cell(k.key.second)});
    sort_rows_desc(&t, 2);
    keep_top(&t, input.params, 30);
    t.notes.push_back("count and latency_ms are per evaluation");
    return finish(std::move(t), g, peaks, true);
  }
};

KernelGroups by_layer(const Workload& w, const Params& params) {
  return group_kernels(w, params, [&](uint32_t span, size_t) -> std::optional<KernelKey> {
    int32_t top = w.top_layer(span);
    return KernelKey{top >= 0 ? w.layer_position(static_cast<size_t>(top)) : -1, ""};
  });
}

std::map<int64_t, const LayerRow*> rows_by_index(const LayerStats& s) {
  std::map<int64_t, const LayerRow*> m;
  for (const LayerRow& r : s.rows) m[static_cast<int64_t>(r.index)] = &r;
  return m;
}

class KernelsByLayer : public Analysis {
 public:
  std::string_view name() const override { return "kernels_by_layer"; }
  std::string_view description() const override {
    return "kernels aggregated by the layer that launched them: count, kernel latency, layer latency, flops";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    KernelGroups g = by_layer(*w, input.params);
    LayerStats layers = compute_layer_stats(*w, input.params);
    auto layer_rows = rows_by_index(layers);
    Table t = make_table("kernels_by_layer", "Kernels aggregated by layer",
                         {"layer_index", "layer", "type", "kernels", "kernel_ms", "layer_ms", "gflop",
                          "dram_read_mb", "dram_write_mb", "flop_per_byte"});
    for (const KernelGroup& k : g.groups) {
      auto it = layer_rows.find(k.key.first);
      const LayerRow* lr = it == layer_rows.end() ? nullptr : it->second;
      t.rows.push_back({k.key.first >= 0 ? Cell::integer(k.key.first) : Cell::text("(no layer)"),
                        lr ? Cell::text(lr->name) : Cell::empty(), lr ? Cell::text(lr->type) : Cell::empty(),
                        Cell::real(k.count, 1), Cell::real(k.latency_ms, 4),
                        lr ? Cell::real(lr->latency, 4) : Cell::empty(), gflop(k.flops), mb(k.dram_read),
                        mb(k.dram_write), real_or_empty(k.intensity(), 3)});
    }
    keep_largest(&t, input.params, 4);
    return finish(std::move(t), g, std::nullopt, true);
  }
};

class KernelsByModel : public Analysis {
 public:
  std::string_view name() const override { return "kernels_by_model"; }
  std::string_view description() const override {
    return "kernels aggregated per evaluation and batch size: count, kernel latency and its share of model "
           "latency";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    std::string param_error;
    StatOptions opt = stat_options(input.params, &param_error);
    Table t = make_table(
        "kernels_by_model", "Kernels aggregated by model evaluation",
        {"batch", "evaluations", "kernels", "kernel_ms", "kernel_sum_ms", "model_ms", "kernel_pct", "gflop"});
    double outside_ms = 0;  // kernel time after (or before) the evaluation's span, over all rows
    for (const BatchRow& row : batch_rows(*w, opt)) {
      std::vector<double> count, busy, summed, flops;
      bool any_flops = false;
      for (size_t e : row.evaluations) {
        const Evaluation& ev = w->evaluations()[e];
        const int64_t lo = ev.start_ns, hi = ev.start_ns + ev.latency_ns;
        double sum = 0, fl = 0;
        std::vector<std::pair<int64_t, int64_t>> all, inside;
        for (uint32_t k : ev.kernels) {
          const SpanRecord& s = w->trace().spans[k];
          KernelMetrics m = kernel_metrics(*w, k);
          sum += m.latency_ms;
          if (m.flops) fl += *m.flops, any_flops = true;
          all.emplace_back(s.start_ns, s.end_ns);
          inside.emplace_back(std::max(s.start_ns, lo), std::min(s.end_ns, hi));
        }
        const int64_t in = union_ns(inside);
        outside_ms += ns_to_ms(union_ns(all) - in);
        count.push_back(static_cast<double>(ev.kernels.size()));
        busy.push_back(ns_to_ms(in));
        summed.push_back(sum);
        flops.push_back(fl);
      }
      double kernel_ms = pick(summarize(busy, opt.trim), opt.stat);
      t.rows.push_back(
          {Cell::integer(row.batch), Cell::integer(static_cast<int64_t>(row.evaluations.size())),
           Cell::real(pick(summarize(count, opt.trim), opt.stat), 1), Cell::real(kernel_ms, 4),
           Cell::real(pick(summarize(summed, opt.trim), opt.stat), 4), Cell::real(row.latency, 4),
           Cell::real(percent(kernel_ms, row.latency), 2),
           any_flops ? Cell::real(pick(summarize(flops, opt.trim), opt.stat) / 1e9, 3) : Cell::empty()});
    }
    t.notes.push_back(
        "kernel_ms: time at least one kernel ran within the evaluation (the union of their intervals), so "
        "kernel_pct <= 100; kernel_sum_ms adds their durations (more where kernels overlap on several "
        "streams "
        "or threads)");
    if (outside_ms > 0) {
      char buf[200];
      std::snprintf(buf, sizeof(buf),
                    "%.4f ms of kernel time in all ran outside the evaluations' spans (asynchronous work not "
                    "awaited before the span ended): not in kernel_ms",
                    outside_ms);
      t.notes.push_back(buf);
    }
    if (!w->has_model_spans())
      t.notes.push_back(
          "no model spans: one evaluation per process, lasting from its first to its last layer/kernel");
    if (w->kernel_role() == KernelRole::kLibrary)
      t.notes.push_back("CPU trace: library spans (e.g. oneDNN primitives) play the kernel role");
    if (!param_error.empty()) t.notes.push_back(param_error);
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

class LayerDeviceSplit : public Analysis {
 public:
  std::string_view name() const override { return "layer_device_split"; }
  std::string_view description() const override {
    return "per layer: latency spent in kernels (device, or library calls on CPU) vs the rest";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    if (!w->has_kernels()) return missing(kNeedKernel);
    KernelGroups g = by_layer(*w, input.params);
    LayerStats layers = compute_layer_stats(*w, input.params);
    // Per layer and evaluation: the time at least one of the layer's kernels ran (their union).
    const std::vector<size_t>& evals = layers.selection.evaluations;
    AcrossEvaluations<int64_t> busy(evals.size());
    for (size_t slot = 0; slot < evals.size(); ++slot) {
      std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_layer_pos;
      for (uint32_t k : w->evaluations()[evals[slot]].kernels) {
        int32_t top = w->top_layer(k);
        if (top < 0) continue;
        const SpanRecord& s = w->trace().spans[k];
        by_layer_pos[w->layer_position(static_cast<size_t>(top))].emplace_back(s.start_ns, s.end_ns);
      }
      for (auto& [pos, intervals] : by_layer_pos) busy.add(pos, slot, ns_to_ms(union_ns(intervals)));
    }
    Table t =
        make_table("layer_device_split", "Kernel vs non-kernel latency per layer",
                   {"layer_index", "layer", "type", "layer_ms", "kernel_ms", "non_kernel_ms", "kernel_pct"});
    int beyond = 0;
    for (const LayerRow& r : layers.rows) {
      double k = pick(busy.summary(static_cast<int64_t>(r.index), layers.options.trim), layers.options.stat);
      double rest = r.latency - k;
      if (rest < 0) ++beyond, rest = 0;
      t.rows.push_back({Cell::integer(static_cast<int64_t>(r.index)), Cell::text(r.name), Cell::text(r.type),
                        Cell::real(r.latency, 4), Cell::real(k, 4), Cell::real(rest, 4),
                        Cell::real(percent(k, r.latency), 2)});
    }
    keep_largest(&t, input.params, 3);
    t.notes.push_back(
        "kernel_ms: time at least one of the layer's kernels ran (the union of their intervals)");
    if (beyond)
      t.notes.push_back(
          std::to_string(beyond) +
          (w->kernel_role() == KernelRole::kDevice
               ? " layers whose kernels ran longer than the layer's host-side span: device work is "
                 "asynchronous, "
                 "so it continues after the launching op returned; kernel_pct over 100 means the device, not "
                 "the host, took longer (non_kernel_ms shown as 0)"
               : " layers whose library calls ran outside the layer's span (other threads): non_kernel_ms "
                 "shown "
                 "as 0"));
    return finish(std::move(t), g, std::nullopt, false);
  }
};

class MetricsByLayer : public Analysis {
 public:
  std::string_view name() const override { return "metrics_by_layer"; }
  std::string_view description() const override {
    return "every metric recorded on kernels, summed per layer (one column per metric)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    std::string param_error;
    StatOptions opt = stat_options(input.params, &param_error);
    Selection sel = select_evaluations(*w, input.params, opt);
    // (metric name, layer) -> per-evaluation sums.
    std::map<std::string, AcrossEvaluations<int64_t>> metrics;
    for (size_t slot = 0; slot < sel.evaluations.size(); ++slot) {
      for (uint32_t k : w->evaluations()[sel.evaluations[slot]].kernels) {
        int32_t top = w->top_layer(k);
        int64_t layer = top >= 0 ? w->layer_position(static_cast<size_t>(top)) : -1;
        for (auto [key, value] : w->metrics(k))
          metrics.try_emplace(std::string(w->trace().strings.get(key)), sel.evaluations.size())
              .first->second.add(layer, slot, value);
      }
    }
    if (metrics.empty()) {
      AnalysisResult r;
      r.missing_input =
          "no metrics on kernels: record device metrics (CUPTI range profiler) or import a trace with "
          "kernel counters";
      return r;
    }
    std::vector<std::string> columns = {"layer_index"};
    std::map<int64_t, std::vector<Cell>> rows;
    size_t column = 0;
    for (const auto& [metric, across] : metrics) {
      columns.push_back(metric);
      for (const auto& [layer, values] : across.cells()) {
        auto& row = rows[layer];
        row.resize(metrics.size(), Cell::empty());
        row[column] = Cell::real(pick(summarize(values, opt.trim), opt.stat), 3);
      }
      ++column;
    }
    Table t = make_table("metrics_by_layer", "Kernel metrics aggregated by layer", columns);
    t.notes.push_back("each metric is summed over the layer's kernels (ratios such as occupancy too)");
    for (auto& [layer, cells] : rows) {
      cells.resize(metrics.size(), Cell::empty());
      std::vector<Cell> row = {layer >= 0 ? Cell::integer(layer) : Cell::text("(no layer)")};
      row.insert(row.end(), cells.begin(), cells.end());
      t.rows.push_back(std::move(row));
    }
    add_common_notes(&t, sel.notes, param_error);
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_kernel_table() { return std::make_unique<KernelTable>(); }
STRATA_REGISTER_ANALYSIS(make_kernel_table, 1000);
std::unique_ptr<Analysis> make_kernels_by_name() { return std::make_unique<KernelsByName>(); }
STRATA_REGISTER_ANALYSIS(make_kernels_by_name, 1100);
std::unique_ptr<Analysis> make_kernels_by_layer() { return std::make_unique<KernelsByLayer>(); }
STRATA_REGISTER_ANALYSIS(make_kernels_by_layer, 1200);
std::unique_ptr<Analysis> make_kernels_by_model() { return std::make_unique<KernelsByModel>(); }
STRATA_REGISTER_ANALYSIS(make_kernels_by_model, 1300);
std::unique_ptr<Analysis> make_layer_device_split() { return std::make_unique<LayerDeviceSplit>(); }
STRATA_REGISTER_ANALYSIS(make_layer_device_split, 1400);
std::unique_ptr<Analysis> make_metrics_by_layer() { return std::make_unique<MetricsByLayer>(); }
STRATA_REGISTER_ANALYSIS(make_metrics_by_layer, 1500);

}  // namespace strata::analysis
