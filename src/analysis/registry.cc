#include <charconv>
#include <cstdlib>

#include "analysis/analysis.h"

namespace strata::analysis {

std::string Params::get(std::string_view key, std::string_view fallback) const {
  read_.emplace(key);
  auto it = values_.find(key);
  return it == values_.end() ? std::string(fallback) : it->second;
}

double Params::get_double(std::string_view key, double fallback) const {
  read_.emplace(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : fallback;
}

int64_t Params::get_int(std::string_view key, int64_t fallback) const {
  read_.emplace(key);
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
  return ec == std::errc() && ptr == it->second.data() + it->second.size() ? v : fallback;
}

// Each analysis module defines a factory; list them here (one line each).
// std::unique_ptr<Analysis> make_layer_table();  ...
std::unique_ptr<Analysis> make_model_table();
std::unique_ptr<Analysis> make_runs();
std::unique_ptr<Analysis> make_layer_table();
std::unique_ptr<Analysis> make_layer_sequence();
std::unique_ptr<Analysis> make_layer_type_distribution();
std::unique_ptr<Analysis> make_layer_type_aggregate();
std::unique_ptr<Analysis> make_stages();
std::unique_ptr<Analysis> make_conv_share();
std::unique_ptr<Analysis> make_op_stats();
std::unique_ptr<Analysis> make_kernel_table();
std::unique_ptr<Analysis> make_kernels_by_name();
std::unique_ptr<Analysis> make_kernels_by_layer();
std::unique_ptr<Analysis> make_kernels_by_model();
std::unique_ptr<Analysis> make_layer_device_split();
std::unique_ptr<Analysis> make_metrics_by_layer();
std::unique_ptr<Analysis> make_kernel_roofline();
std::unique_ptr<Analysis> make_layer_roofline();
std::unique_ptr<Analysis> make_iterations();
std::unique_ptr<Analysis> make_rank_breakdown();
std::unique_ptr<Analysis> make_collective_wait();
// Cross-rank analyses: rank_device.cc, rank_queue.cc, rank_launch.cc, iterations/rank_steps.cc.
std::unique_ptr<Analysis> make_idle_time();
std::unique_ptr<Analysis> make_comm_overlap();
std::unique_ptr<Analysis> make_step_time();
std::unique_ptr<Analysis> make_kernel_distribution();
std::unique_ptr<Analysis> make_launch_stats();
std::unique_ptr<Analysis> make_queue_length();
std::unique_ptr<Analysis> make_gpu_kernel_summary();
std::unique_ptr<Analysis> make_cuda_api_summary();
std::unique_ptr<Analysis> make_memcpy_summary();
std::unique_ptr<Analysis> make_range_summary();
std::unique_ptr<Analysis> make_gpu_stalls();
#ifdef STRATA_HAVE_LOWERBOUND  // src/lowerbound/analyses (not built with STRATA_SKIP=lowerbound)
std::unique_ptr<Analysis> make_framework_vs_bound();
std::unique_ptr<Analysis> make_framework_inefficiency();
std::unique_ptr<Analysis> make_tensor_cores();
#endif

const std::vector<std::unique_ptr<Analysis>>& all_analyses() {
  static const std::vector<std::unique_ptr<Analysis>> analyses = [] {
    std::vector<std::unique_ptr<Analysis>> v;
    // v.push_back(make_layer_table());
    v.push_back(make_model_table());
    v.push_back(make_runs());
    v.push_back(make_layer_table());
    v.push_back(make_layer_sequence());
    v.push_back(make_layer_type_distribution());
    v.push_back(make_layer_type_aggregate());
    v.push_back(make_stages());
    v.push_back(make_conv_share());
    v.push_back(make_op_stats());
    v.push_back(make_kernel_table());
    v.push_back(make_kernels_by_name());
    v.push_back(make_kernels_by_layer());
    v.push_back(make_kernels_by_model());
    v.push_back(make_layer_device_split());
    v.push_back(make_metrics_by_layer());
    v.push_back(make_kernel_roofline());
    v.push_back(make_layer_roofline());
    v.push_back(make_iterations());
    v.push_back(make_rank_breakdown());
    v.push_back(make_collective_wait());
    v.push_back(make_idle_time());
    v.push_back(make_comm_overlap());
    v.push_back(make_step_time());
    v.push_back(make_kernel_distribution());
    v.push_back(make_launch_stats());
    v.push_back(make_queue_length());
    v.push_back(make_gpu_kernel_summary());
    v.push_back(make_cuda_api_summary());
    v.push_back(make_memcpy_summary());
    v.push_back(make_range_summary());
    v.push_back(make_gpu_stalls());
#ifdef STRATA_HAVE_LOWERBOUND
    v.push_back(make_framework_vs_bound());
    v.push_back(make_framework_inefficiency());
    v.push_back(make_tensor_cores());
#endif
    return v;
  }();
  return analyses;
}

namespace {

struct ParamKeys {
  std::string_view analysis;
  std::vector<std::string_view> keys;
};

std::vector<std::string_view> join(std::initializer_list<std::vector<std::string_view>> parts) {
  std::vector<std::string_view> out;
  for (const auto& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

const std::vector<ParamKeys>& param_key_table() {
  // Evaluation choice (stat_options), per-layer selection (select_evaluations), device peaks.
  const std::vector<std::string_view> eval = {"trim", "stat", "model"};
  const std::vector<std::string_view> select = join({eval, {"batch", "threshold"}});
  const std::vector<std::string_view> peaks = {"device", "peak_gflops", "peak_gbps"};
  static const std::vector<ParamKeys> table = {
      {"model_table", join({eval, {"threshold", "latency_target_ms"}})},
      {"runs", eval},
      {"layer_table", join({select, {"sort", "top"}})},
      {"layer_sequence", join({select, {"top"}})},
      {"layer_type_distribution", join({select, {"top"}})},
      {"layer_type_aggregate", join({select, {"top"}})},
      {"stages", join({select, {"stages"}})},
      {"conv_share", select},
      {"op_stats", {"level", "top", "sort"}},
      {"kernel_table", join({select, {"top"}, peaks})},
      {"kernels_by_name", join({select, {"top"}, peaks})},
      {"kernels_by_layer", join({select, {"top"}})},
      {"kernels_by_model", eval},
      {"layer_device_split", join({select, {"top"}})},
      {"metrics_by_layer", select},
      {"kernel_roofline", join({select, {"top"}, peaks})},
      {"layer_roofline", join({select, {"top"}, peaks})},
      {"iterations",
       {"iterations", "epsilon", "max_extra_ops", "min_repeats", "max_loops", "stream", "level", "sample_ops"}},
      {"rank_breakdown", {"scope"}},
      {"collective_wait", {"top"}},
      {"idle_time", {"kernel_wait_us", "min_gap_us", "scope"}},
      {"comm_overlap", {"top", "scope"}},
      {"step_time", {}},
      {"kernel_distribution", {"top"}},
      {"launch_stats", {"k", "min_mad_us", "top"}},
      {"queue_length", {"bucket_us"}},
      {"gpu_stalls", {"top"}},
  };
  return table;
}

}  // namespace

std::span<const std::string_view> Analysis::param_keys() const {
  for (const ParamKeys& p : param_key_table())
    if (p.analysis == name()) return p.keys;
  return {};
}

std::span<const std::string_view> analysis_param_keys(std::string_view name) {
  const Analysis* a = find_analysis(name);
  return a ? a->param_keys() : std::span<const std::string_view>{};
}

const Analysis* find_analysis(std::string_view name) {
  for (const auto& a : all_analyses())
    if (a->name() == name) return a.get();
  return nullptr;
}

}  // namespace strata::analysis
