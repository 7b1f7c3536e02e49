// Kernel-role spans (device executions; oneDNN/library calls on CPU traces) of the selected
// evaluations, grouped by a key and summarized across evaluations: per evaluation the group's
// values are summed, then the headline statistic is taken over evaluations.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis_util.h"
#include "analysis/device_peaks.h"

namespace strata::analysis {

struct KernelMetrics {
  double latency_ms = 0;
  std::optional<double> flops, dram_read, dram_write, bytes, occupancy_pct;
};
KernelMetrics kernel_metrics(const Workload& w, uint32_t span);

using KernelKey = std::pair<int64_t, std::string>;

struct KernelGroup {
  KernelKey key;
  uint32_t example_span = 0;  // one member (for its name and layer)
  int64_t layer = -1;         // layer position of the example, -1 outside any layer
  double count = 0, latency_ms = 0;
  std::optional<double> flops, dram_read, dram_write, bytes, occupancy_pct;  // absent: never recorded
  std::optional<double> intensity() const;                                   // flop/byte
  std::optional<double> gflops_per_s() const;
};

struct KernelGroups {
  Selection selection;
  StatOptions options;
  std::string param_error;
  std::vector<KernelGroup> groups;  // in key order
  double total_latency_ms = 0;      // sum over groups
  std::vector<std::string> notes;   // role (device/library), selection, statistic
};

// key_of returns nullopt to skip a kernel; ordinal is the kernel's position in its evaluation.
KernelGroups group_kernels(
    const Workload& w, const Params& params,
    const std::function<std::optional<KernelKey>(uint32_t span, size_t ordinal)>& key_of);

// Instances: (layer position, name, occurrence of that name within the layer), so the same kernel
// of the same layer lines up across evaluations.
KernelGroups kernel_instances(const Workload& w, const Params& params);

std::string kernel_name(const Workload& w, uint32_t span);
// "yes" when the intensity lies below the ridge point of the kernel's own compute ceiling (the
// tensor-core peak of its precision for a tensor-core kernel, FP32 otherwise: ResolvedPeaks::ceiling).
Cell memory_bound_cell(const std::optional<double>& intensity, const std::optional<ResolvedPeaks>& peaks,
                       std::string_view kernel_name);
// "yes" for a kernel whose name marks a tensor-core (matrix-unit) kernel family, "no" otherwise
// (core/kernel_names.h: recognition by name, unrecognized tensor-core kernels say "no").
Cell tensor_core_cell(std::string_view kernel_name);

}  // namespace strata::analysis
