#include "analysis/pipeline.h"

#include <array>
#include <cmath>

#include "analysis/stats.h"
#include "analysis/workload.h"
#include "model/span_tree.h"

namespace strata::analysis {

std::span<const std::string_view> default_analyses() {
  static constexpr std::array<std::string_view, 5> kDefault = {
      "model_table", "layer_table", "layer_type_aggregate", "kernels_by_name", "op_stats"};
  return kDefault;
}

std::optional<std::string> validate_params(const Params& params) {
  const auto& all = params.all();
  for (const char* key : {"threshold", "latency_target_ms", "peak_gflops", "peak_gbps", "trim"}) {
    auto it = all.find(key);
    if (it == all.end()) continue;
    double v = params.get_double(key, std::nan(""));
    if (!(v >= 0) || (std::string_view(key) != "trim" && std::string_view(key) != "threshold" && !(v > 0)))
      return "--param " + it->first + "=" + it->second + " is not a positive number";
    if (std::string_view(key) == "trim" && v >= 0.5)
      return "--param trim=" + it->second + " must be a fraction in [0, 0.5) (dropped at each end)";
  }
  for (const char* key : {"batch", "top", "stages"}) {
    auto it = all.find(key);
    if (it != all.end() && params.get_int(key, -1) < 0)
      return "--param " + it->first + "=" + it->second + " is not a non-negative integer";
  }
  if (auto it = all.find("stat"); it != all.end() && !parse_statistic(it->second))
    return "--param stat=" + it->second + " is not one of trimmed_mean, mean, median, min, max";
  return std::nullopt;
}

PipelineResult run_pipeline(const model::Trace& trace, std::span<const Analysis* const> analyses,
                            const Params& params) {
  PipelineResult out;
  const model::SpanTree& tree = trace.tree();
  Workload workload(trace, tree);
  AnalysisInput input{trace, tree, params, &workload};
  for (const Analysis* a : analyses) out.results.emplace_back(a, a->run(input));
  return out;
}

}  // namespace strata::analysis
