// XSP Table I, model level: throughput and latency across batch sizes and the optimal batch size.
#include <cstdio>
#include <map>

#include "analysis/analysis_util.h"

namespace strata::analysis {
namespace {

class ModelTable : public Analysis {
 public:
  std::string_view name() const override { return "model_table"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kModel; }
  std::string_view description() const override {
    return "model latency and throughput per batch size over repeated evaluations, and the optimal batch "
           "size when it is outside the noise of the evaluations "
           "(--param threshold=0.05 | latency_target_ms=MS, alpha=0.05)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_model_spans()) return missing(kNeedModel);
    std::string param_error;
    StatOptions opt = stat_options(input.params, &param_error);
    std::vector<BatchRow> rows = batch_rows(*w, opt);
    BatchRule rule;
    rule.threshold = input.params.get_double("threshold", 0.05);
    rule.alpha = input.params.get_double("alpha", 0.05);
    if (input.params.all().count("latency_target_ms"))
      rule.latency_target_ms = input.params.get_double("latency_target_ms", 0);
    if (!(rule.alpha > 0 && rule.alpha < 1)) {
      param_error +=
          std::string(param_error.empty() ? "" : "; ") + "--param alpha must be in (0, 1): using 0.05";
      rule.alpha = 0.05;
    }
    BatchChoice choice = choose_batch(rows, rule);
    const int best = choice.decided ? choice.pick : -1;

    Table t = make_table("model_table", "Model information across batch sizes",
                         {"batch", "evaluations", "runs", "latency_ms", "median_ms", "min_ms", "max_ms",
                          "stddev_ms", "throughput_per_s", "optimal"});
    bool any_unknown = false;
    for (size_t i = 0; i < rows.size(); ++i) {
      const BatchRow& r = rows[i];
      any_unknown = any_unknown || !r.batch_known;
      t.rows.push_back({Cell::integer(r.batch), Cell::integer(static_cast<int64_t>(r.latency_ms.count)),
                        Cell::integer(static_cast<int64_t>(r.runs)), Cell::real(r.latency),
                        Cell::real(r.latency_ms.median), Cell::real(r.latency_ms.min),
                        Cell::real(r.latency_ms.max), Cell::real(r.latency_ms.stddev),
                        Cell::real(r.throughput, 2), Cell::text(static_cast<int>(i) == best ? "yes" : "")});
    }
    for (std::string& note : choice.notes) t.notes.push_back(std::move(note));
    char buf[200];
    std::snprintf(buf, sizeof(buf),
                  "latency_ms is the %s (trim %.2f) over evaluations; throughput = batch / latency_ms",
                  std::string(statistic_name(opt.stat)).c_str(), opt.trim);
    t.notes.push_back(buf);
    for (std::string& note : w->evaluation_notes()) t.notes.push_back(std::move(note));
    if (!opt.model_filter.empty())
      t.notes.push_back("evaluations: model spans whose name contains \"" + opt.model_filter + "\"");
    if (any_unknown)
      t.notes.push_back("some model spans carry no batch/batch_size attribute: batch size 1 assumed");
    // XSP III-C: a model span timed while its layers were traced includes what tracing them cost. A
    // leveled trace takes model spans from the model-only run, so only a plain trace gets the warning.
    bool leveled = false;
    for (const trace::Process& p : w->trace().processes) leveled = leveled || p.properties.get("leveled");
    if (w->has_layers() && !leveled)
      t.notes.push_back(
          "model spans were timed with deeper levels traced in the same run, so they include that tracing's "
          "cost: `strata record --leveled` (or --level model) times them without it");
    add_common_notes(&t, {}, param_error);
    AnalysisResult result;
    result.tables.push_back(std::move(t));
    return result;
  }
};

// Repeated runs of one command (strata record --runs N: one process per run, tagged "run"):
// each run's evaluations per batch size, and the spread across runs.
class RunsTable : public Analysis {
 public:
  std::string_view name() const override { return "runs"; }
  std::optional<Level> timed_level(const Params&) const override { return Level::kModel; }
  std::string_view description() const override {
    return "repeated runs: mean evaluation latency of each run per batch size, summarized across runs "
           "(trimmed mean, median, min, max, stddev)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    WorkloadRef w(input);
    if (!w->has_model_spans()) return missing(kNeedModel);
    std::string param_error;
    StatOptions opt = stat_options(input.params, &param_error);
    // (batch, process) -> latencies of that run's evaluations.
    std::map<std::pair<int64_t, uint16_t>, std::vector<double>> per_run;
    for (const Evaluation& ev : w->evaluations())
      if (ev.latency_ns > 0 && included(*w, ev, opt))
        per_run[{ev.batch, ev.process}].push_back(ns_to_ms(ev.latency_ns));
    Table t = make_table("runs", "Repeated runs", {"batch", "run", "pid", "evaluations", "mean_ms"});
    Table s = make_table("runs_summary", "Across runs",
                         {"batch", "runs", "latency_ms", "median_ms", "min_ms", "max_ms", "stddev_ms"});
    std::map<int64_t, std::vector<double>> run_means;
    for (const auto& [key, values] : per_run) {
      const trace::Process& p = input.trace.processes[key.second];
      auto tag = p.properties.get("run");
      double mean = summarize(values, 0).mean;
      run_means[key.first].push_back(mean);
      t.rows.push_back({Cell::integer(key.first),
                        tag ? Cell::text(std::string(*tag)) : Cell::integer(key.second), Cell::integer(p.pid),
                        Cell::integer(static_cast<int64_t>(values.size())), Cell::real(mean)});
    }
    for (const auto& [batch, means] : run_means) {
      Summary sum = summarize(means, opt.trim);
      s.rows.push_back({Cell::integer(batch), Cell::integer(static_cast<int64_t>(sum.count)),
                        Cell::real(pick(sum, opt.stat)), Cell::real(sum.median), Cell::real(sum.min),
                        Cell::real(sum.max), Cell::real(sum.stddev)});
    }
    char buf[160];
    std::snprintf(buf, sizeof(buf), "latency_ms is the %s (trim %.2f) of the runs' mean latencies",
                  std::string(statistic_name(opt.stat)).c_str(), opt.trim);
    s.notes.push_back(buf);
    t.notes.push_back(
        "run: the process's \"run\" tag from strata record --runs, else its index in the trace");
    add_common_notes(&s, {}, param_error);
    AnalysisResult result;
    result.tables.push_back(std::move(t));
    result.tables.push_back(std::move(s));
    return result;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_runs() { return std::make_unique<RunsTable>(); }
STRATA_REGISTER_ANALYSIS(make_runs, 200);
std::unique_ptr<Analysis> make_model_table() { return std::make_unique<ModelTable>(); }
STRATA_REGISTER_ANALYSIS(make_model_table, 100);

}  // namespace strata::analysis
