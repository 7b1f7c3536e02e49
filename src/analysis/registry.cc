#include <charconv>
#include <cstdlib>

#include "analysis/analysis.h"

namespace strata::analysis {

std::string Params::get(std::string_view key, std::string_view fallback) const {
  auto it = values_.find(key);
  return it == values_.end() ? std::string(fallback) : it->second;
}

double Params::get_double(std::string_view key, double fallback) const {
  auto it = values_.find(key);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  double v = std::strtod(it->second.c_str(), &end);
  return end != nullptr && *end == '\0' ? v : fallback;
}

int64_t Params::get_int(std::string_view key, int64_t fallback) const {
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
#ifdef STRATA_HAVE_LOWERBOUND
    v.push_back(make_framework_vs_bound());
    v.push_back(make_framework_inefficiency());
    v.push_back(make_tensor_cores());
#endif
    return v;
  }();
  return analyses;
}

const Analysis* find_analysis(std::string_view name) {
  for (const auto& a : all_analyses())
    if (a->name() == name) return a.get();
  return nullptr;
}

}  // namespace strata::analysis
