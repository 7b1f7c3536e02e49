#include "analysis/pipeline.h"

#include <array>
#include <cmath>
#include <map>
#include <set>

#include "analysis/leveled_view.h"
#include "analysis/stats.h"
#include "analysis/workload.h"
#include "trace/span_tree.h"

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

ParamKeyCheck check_param_keys(const Params& params, std::span<const Analysis* const> analyses) {
  ParamKeyCheck check;
  auto reads = [](const Analysis* a, std::string_view key) {
    for (std::string_view k : a->param_keys())
      if (k == key) return true;
    return false;
  };
  for (const auto& [key, value] : params.all()) {
    std::string readers, others;
    for (const Analysis* a : analyses) {
      std::string& list = reads(a, key) ? readers : others;
      list += (list.empty() ? "" : ", ") + std::string(a->name());
    }
    if (!readers.empty()) {
      if (!others.empty()) check.notes.push_back("--param " + key + " does not apply to " + others);
      continue;
    }
    std::string elsewhere, keys;
    for (const auto& a : all_analyses())
      if (reads(a.get(), key)) elsewhere += (elsewhere.empty() ? "" : ", ") + std::string(a->name());
    std::set<std::string_view> known;
    for (const Analysis* a : analyses)
      for (std::string_view k : a->param_keys()) known.insert(k);
    for (std::string_view k : known) keys += (keys.empty() ? "" : ", ") + std::string(k);
    check.error = elsewhere.empty()
                      ? "--param " + key + " is not a parameter of the chosen analyses (" + others +
                            "); they read: " + (keys.empty() ? "none" : keys) +
                            " (strata analyze --list shows each analysis's keys)"
                      : "--param " + key + " is read only by " + elsewhere +
                            ", not among the chosen analyses; add --analysis " + elsewhere.substr(0, elsewhere.find(','));
    return check;
  }
  return check;
}

namespace {

// The runs of a leveled trace traced down to one level, with their workload (their span tree is
// built with the view's trace, once, on first use).
struct RunView {
  trace::Trace trace;
  int runs = 0;
  std::optional<Workload> workload;
};

}  // namespace

PipelineResult run_pipeline(const trace::Trace& trace, std::span<const Analysis* const> analyses,
                            const Params& params, const RunRecognition* run) {
  PipelineResult out;
  const std::vector<int> run_levels = leveled_run_levels(trace);
  if (run_levels.empty()) {
    const trace::SpanTree& tree = trace.tree();  // built once, when the trace was opened
    Workload workload = run ? Workload(trace, tree, *run) : Workload(trace, tree);
    AnalysisInput input{trace, tree, params, &workload};
    for (const Analysis* a : analyses) out.results.emplace_back(a, a->run(input));
    return out;
  }
  // A leveled trace: each analysis reads the runs where the level it times was the deepest traced.
  std::map<int, RunView> views;
  for (const Analysis* a : analyses) {
    const std::optional<Level> wanted = a->timed_level(params);
    const int level = choose_run_level(run_levels, wanted);
    RunView& view = views[level];
    if (!view.workload) {
      view.trace = runs_traced_to(trace, level, &view.runs);
      view.workload.emplace(view.trace, view.trace.tree());  // the view's own tree, kept with it
    }
    AnalysisInput input{view.trace, view.trace.tree(), params, &*view.workload};
    AnalysisResult result = a->run(input);
    for (Table& t : result.tables) t.notes.push_back(leveled_note(run_levels, level, view.runs, wanted));
    out.results.emplace_back(a, std::move(result));
  }
  return out;
}

}  // namespace strata::analysis
