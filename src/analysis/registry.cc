#include <algorithm>
#include <charconv>
#include <cstdio>
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

// Registrations arrive during static initialization, from every object file that defines an
// analysis (STRATA_REGISTER_ANALYSIS), in whatever order the linker put those files: the list is kept
// in a function-local static (constructed on first use, so before any registrar runs into it) and
// sorted by order key when all_analyses() is first read.
namespace {

std::vector<AnalysisRegistration>& registrations() {
  static std::vector<AnalysisRegistration> list;
  return list;
}

bool& registry_sealed() {
  static bool sealed = false;
  return sealed;
}

std::vector<AnalysisRegistration> sorted_registrations() {
  std::vector<AnalysisRegistration> sorted = registrations();
  std::stable_sort(
      sorted.begin(), sorted.end(),
      [](const AnalysisRegistration& a, const AnalysisRegistration& b) { return a.order < b.order; });
  return sorted;
}

std::vector<std::unique_ptr<Analysis>> build_registry() {
  registry_sealed() = true;
  std::vector<std::unique_ptr<Analysis>> analyses;
  std::vector<RegisteredAnalysis> described;
  for (const AnalysisRegistration& r : sorted_registrations()) {
    analyses.push_back(r.make());
    described.push_back({r.order, std::string(analyses.back()->name()), r.file});
  }
  // A collision is a programming error in the build, not bad input: stop before any output is made
  // under a name that means two things.
  std::vector<std::string> problems = registry_problems(described);
  for (const std::string& p : problems) std::fprintf(stderr, "strata: analysis registry: %s\n", p.c_str());
  if (!problems.empty()) std::abort();
  return analyses;
}

}  // namespace

bool register_analysis(const AnalysisRegistration& registration) {
  if (registry_sealed()) {
    std::fprintf(stderr,
                 "strata: analysis registry: %s registers an analysis after the registry was read; "
                 "register with STRATA_REGISTER_ANALYSIS at namespace scope\n",
                 registration.file);
    std::abort();
  }
  registrations().push_back(registration);
  return true;
}

const std::vector<std::unique_ptr<Analysis>>& all_analyses() {
  static const std::vector<std::unique_ptr<Analysis>> analyses = build_registry();
  return analyses;
}

std::vector<RegisteredAnalysis> registered_analyses() {
  const std::vector<std::unique_ptr<Analysis>>& analyses = all_analyses();
  std::vector<AnalysisRegistration> sorted = sorted_registrations();
  std::vector<RegisteredAnalysis> out;
  for (size_t i = 0; i < analyses.size(); ++i)
    out.push_back({sorted[i].order, std::string(analyses[i]->name()), sorted[i].file});
  return out;
}

std::vector<std::string> registry_problems(std::span<const RegisteredAnalysis> registered) {
  std::vector<std::string> problems;
  auto describe = [](const RegisteredAnalysis& r) {
    return r.name + " (" + r.file + ", order " + std::to_string(r.order) + ")";
  };
  for (size_t i = 0; i < registered.size(); ++i)
    for (size_t j = i + 1; j < registered.size(); ++j) {
      const RegisteredAnalysis& a = registered[i];
      const RegisteredAnalysis& b = registered[j];
      if (a.name == b.name)
        problems.push_back("two analyses are named " + a.name + ": " + describe(a) + " and " + describe(b) +
                           "; rename one");
      if (a.order == b.order)
        problems.push_back("two analyses have order key " + std::to_string(a.order) + ": " + describe(a) +
                           " and " + describe(b) + "; give one a free key (analysis.h)");
    }
  return problems;
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
      {"model_table", join({eval, {"threshold", "latency_target_ms", "alpha"}})},
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
      {"queue_length", {"bucket_us", "origin_ns"}},
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
