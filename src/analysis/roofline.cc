// XSP Table I rooflines: kernels (by name) and layers placed against the device's compute and
// memory-bandwidth roofs: attainable = min(peak GFLOP/s, intensity x peak GB/s).
#include <algorithm>
#include <cstdio>
#include <string>

#include "analysis/kernel_stats.h"
#include "analysis/layer_stats.h"

namespace strata::analysis {
namespace {

// Why no kernel could be placed: which of flops and bytes is missing, and how to get it.
std::string need_flops(const KernelGroups& g) {
  bool flops = false, bytes = false;
  for (const KernelGroup& k : g.groups)
    flops = flops || k.flops.has_value(), bytes = bytes || k.bytes.has_value();
  if (flops && !bytes)
    return "kernels carry flops but no bytes (e.g. a Kineto trace with SASS FLOP counters only): profile "
           "DRAM "
           "traffic too (dram__bytes_read.sum, dram__bytes_write.sum; ncu --csv, joined with strata import "
           "--metrics NCU.csv --into TRACE)";
  if (bytes && !flops)
    return "kernels carry bytes but no flops: profile FLOP counters too (ncu --csv, joined with strata "
           "import --metrics NCU.csv --into TRACE)";
  return "no kernel carries flops and bytes: on a GPU, measure with ncu --csv and join it with strata import "
         "--metrics (or "
         "import a Kineto trace with counters); on CPU, strata record --level library (oneDNN primitives "
         "carry "
         "them)";
}

// `ceiling_gflops`: the compute roof of this row (FP32, or a kernel's tensor-core peak).
void roofline_row(Table* t, Cell label, double count, const std::optional<double>& flops,
                  const std::optional<double>& bytes, double latency_ms, const ResolvedPeaks& peaks,
                  double ceiling_gflops) {
  double ai = *flops / *bytes;
  double achieved = latency_ms > 0 ? *flops / (latency_ms * 1e-3) / 1e9 : 0;
  double attainable = std::min(ceiling_gflops, ai * peaks.gbps);
  t->rows.push_back({std::move(label), Cell::real(count, 1), Cell::real(latency_ms, 4), Cell::real(ai, 3),
                     Cell::real(achieved, 3), Cell::real(attainable, 3),
                     Cell::real(attainable > 0 ? 100 * achieved / attainable : 0, 2),
                     Cell::text(ai < ceiling_gflops / peaks.gbps ? "memory" : "compute")});
}

const std::vector<std::string> kColumns = {
    "count", "latency_ms", "flop_per_byte", "gflop_per_s", "attainable_gflop_per_s", "pct_of_attainable",
    "bound"};

std::vector<std::string> columns_with(const char* first) {
  std::vector<std::string> c = {first};
  c.insert(c.end(), kColumns.begin(), kColumns.end());
  return c;
}

class KernelRoofline : public Analysis {
 public:
  std::string_view name() const override { return "kernel_roofline"; }
  std::string_view description() const override {
    return "kernels (by name) on the roofline: arithmetic intensity, achieved vs attainable GFLOP/s "
           "(--param device=KEY | peak_gflops=G peak_gbps=B)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_kernels()) return missing(kNeedKernel);
    std::string why;
    auto peaks = resolve_peaks(input.trace, input.params, w->kernel_role() == KernelRole::kLibrary, &why);
    KernelGroups g = group_kernels(*w, input.params, [&](uint32_t span, size_t) -> std::optional<KernelKey> {
      return KernelKey{0, kernel_name(*w, span)};
    });
    Table t = make_table("kernel_roofline", "Kernel roofline", columns_with("kernel"));
    t.columns.insert(t.columns.end(), {"tensor_core", "ceiling", "ceiling_gflop_per_s"});
    size_t without = 0, on_tensor_peaks = 0;
    for (const KernelGroup& k : g.groups) {
      if (!k.intensity()) {
        ++without;
        continue;
      }
      if (!peaks) break;
      // A tensor-core kernel's roof is the tensor-core peak of its precision (ResolvedPeaks::ceiling).
      std::string label;
      const double ceiling = peaks->ceiling(k.key.second, &label);
      on_tensor_peaks += label.rfind("tensor", 0) == 0;
      roofline_row(&t, Cell::text(k.key.second), k.count, k.flops, k.bytes, k.latency_ms, *peaks, ceiling);
      t.rows.back().insert(t.rows.back().end(),
                           {tensor_core_cell(k.key.second), Cell::text(label), Cell::real(ceiling, 1)});
    }
    if (without == g.groups.size()) return missing(need_flops(g).c_str());
    if (!peaks) {
      AnalysisResult r;
      r.missing_input = why;
      return r;
    }
    sort_rows_desc(&t, 2);
    keep_top(&t, input.params, 30);
    t.notes.push_back(peaks->description);
    if (on_tensor_peaks)
      t.notes.push_back(std::to_string(on_tensor_peaks) +
                        " tensor-core kernels (recognized by name) placed under their tensor-core peak: "
                        "ceiling says which");
    if (without)
      t.notes.push_back(std::to_string(without) + " kernel names without flops/bytes metrics left out");
    for (const auto& n : g.notes) t.notes.push_back(n);
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

class LayerRoofline : public Analysis {
 public:
  std::string_view name() const override { return "layer_roofline"; }
  std::string_view description() const override {
    return "layers on the roofline: flops and bytes of their kernels over the layer's latency";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_layers()) return missing(kNeedLayer);
    if (!w->has_kernels()) return missing(kNeedKernel);
    std::string why;
    auto peaks = resolve_peaks(input.trace, input.params, w->kernel_role() == KernelRole::kLibrary, &why);
    KernelGroups g = group_kernels(*w, input.params, [&](uint32_t span, size_t) -> std::optional<KernelKey> {
      int32_t top = w->top_layer(span);
      if (top < 0) return std::nullopt;
      return KernelKey{w->layer_position(static_cast<size_t>(top)), ""};
    });
    LayerStats layers = compute_layer_stats(*w, input.params);
    Table t = make_table("layer_roofline", "Layer roofline", columns_with("layer_index"));
    t.columns.insert(t.columns.begin() + 1, {"layer", "type"});
    size_t without = 0;
    for (const KernelGroup& k : g.groups) {
      if (!k.intensity()) {
        ++without;
        continue;
      }
      if (!peaks) break;
      const LayerRow* lr = nullptr;
      for (const LayerRow& r : layers.rows)
        if (static_cast<int64_t>(r.index) == k.key.first) lr = &r;
      if (lr == nullptr) continue;
      // A layer mixes kernels: its roof stays the FP32 peak.
      roofline_row(&t, Cell::integer(k.key.first), k.count, k.flops, k.bytes, lr->latency, *peaks,
                   peaks->gflops);
      t.rows.back().insert(t.rows.back().begin() + 1, {Cell::text(lr->name), Cell::text(lr->type)});
    }
    if (without == g.groups.size()) return missing(need_flops(g).c_str());
    if (!peaks) {
      AnalysisResult r;
      r.missing_input = why;
      return r;
    }
    keep_largest(&t, input.params, 4);
    t.notes.push_back(peaks->description);
    t.notes.push_back(
        "count is the layer's kernels; latency_ms is the layer's latency (the roofline of the layer)");
    if (without)
      t.notes.push_back(std::to_string(without) + " layers whose kernels carry no flops/bytes left out");
    for (const auto& n : g.notes) t.notes.push_back(n);
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_kernel_roofline() { return std::make_unique<KernelRoofline>(); }
STRATA_REGISTER_ANALYSIS(make_kernel_roofline, 1600);
std::unique_ptr<Analysis> make_layer_roofline() { return std::make_unique<LayerRoofline>(); }
STRATA_REGISTER_ANALYSIS(make_layer_roofline, 1700);

}  // namespace strata::analysis
