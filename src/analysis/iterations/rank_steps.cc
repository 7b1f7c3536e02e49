// Per-step time per rank: the program's own step marks (torch.profiler's ProfilerStep#N, imported as
// model-level spans with the "step" attribute) where a rank has them, else the iterations the
// iterations analysis mines from that rank's spans alone (DeepProf; numbered from 0). The source is
// a column. Steps of the same number are compared across ranks: the slowest rank of each step.
#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis_util.h"
#include "analysis/iterations/iterations_analysis.h"
#include "analysis/rank_partials.h"
#include "analysis/rank_util.h"

namespace strata::analysis::iterations {
namespace {

using ranks::ms;

struct Step {
  int64_t start = 0, end = 0;
};

struct RankSteps {
  std::string source;             // "ProfilerStep", "mined" or "none"
  std::map<int64_t, Step> steps;  // by step number
  std::string problem;            // why none were found
};

// Model-level spans carrying the step attribute, per owner; of two spans with one number (a step
// span nested in another) the longer.
std::map<int64_t, RankSteps> marked_steps(const trace::Trace& trace, const std::vector<int64_t>& owners) {
  std::map<int64_t, RankSteps> out;
  const uint32_t key = trace.strings.find(attr_keys::kStep);
  if (key == UINT32_MAX) return out;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != static_cast<uint8_t>(Level::kModel) || s.end_ns <= s.start_ns) continue;
    for (const AttrRecord& a : trace.attributes(i)) {
      if (a.key != key || a.type != static_cast<uint8_t>(AttrType::kInt)) continue;
      RankSteps& r = out[owners[s.process]];
      r.source = "ProfilerStep";
      auto [it, fresh] = r.steps.try_emplace(a.value.i, Step{s.start_ns, s.end_ns});
      if (!fresh && s.end_ns - s.start_ns > it->second.end - it->second.start)
        it->second = {s.start_ns, s.end_ns};
    }
  }
  return out;
}

// The spans of one owner's processes as a trace of their own (string ids kept), so the miner sees
// one rank's work only.
trace::Trace owner_trace(const trace::Trace& trace, const std::vector<int64_t>& owners, int64_t owner) {
  trace::Trace sub;
  for (uint32_t id = 1; id < trace.strings.size(); ++id) sub.strings.intern(trace.strings.get(id));
  std::vector<int32_t> moved(trace.processes.size(), -1);
  for (size_t p = 0; p < trace.processes.size(); ++p)
    if (owners[p] == owner) moved[p] = sub.add_process(trace.processes[p]);
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    if (moved[trace.spans[i].process] < 0) continue;
    SpanRecord s = trace.spans[i];
    s.process = static_cast<uint16_t>(moved[s.process]);
    sub.add_span(s, trace.attributes(i));
  }
  return sub;
}

RankSteps mined_steps(const trace::Trace& trace) {
  RankSteps r;
  analysis::iterations::IterationsOptions options;
  analysis::iterations::IterationsReport report;
  if (!analysis::iterations::run_iterations(trace, options, &report, &r.problem)) {
    r.source = "none";
    return r;
  }
  r.source = "mined";
  int64_t n = 0;
  for (const analysis::iterations::IterationMetrics& it : report.metrics.iterations)
    if (it.loop == 0) r.steps[n++] = {it.start_ns, it.end_ns};
  return r;
}

// (value - reference) / reference in percent; 0 for a reference of 0, and rounding residue of an
// equal value (the median of one or two values) printed as 0, not -0.00.
double relative_pct(double value, double reference) {
  if (reference <= 0) return 0;
  const double p = 100.0 * (value - reference) / reference;
  return std::fabs(p) < 1e-9 ? 0 : p;
}

// Each owner's steps: the program's marks where it has them, else the iterations mined from its
// own spans (the whole trace when it holds one owner only, as a worker's rank file does).
std::map<int64_t, RankSteps> steps_per_owner(const trace::Trace& trace) {
  const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
  std::map<int64_t, RankSteps> per_rank = marked_steps(trace, owners);
  std::vector<int64_t> all(owners.begin(), owners.end());
  std::sort(all.begin(), all.end());
  all.erase(std::unique(all.begin(), all.end()), all.end());
  for (int64_t o : all) {
    if (per_rank.count(o)) continue;
    if (all.size() == 1) {
      per_rank[o] = mined_steps(trace);
    } else {
      const trace::Trace sub = owner_trace(trace, owners, o);
      per_rank[o] =
          sub.strings.size() == trace.strings.size() ? mined_steps(sub) : RankSteps{"none", {}, "string ids"};
    }
  }
  return per_rank;
}

// step_time's partial: the trace's earliest span start (the origin of start_ms), then per owner its
// source, why it has no steps (or "") and each step's number, start and end: 24 bytes per step,
// whatever the rank's span count. u8 has_spans, i64 origin, u64 owners; per owner i64 owner, text
// source, text problem, u64 steps, steps x (i64 number, i64 start, i64 end); text: u32 length, bytes.
std::string step_partial(const trace::Trace& trace, const Params& /*params*/) {
  std::string out;
  wire::put(&out, static_cast<uint8_t>(!trace.spans.empty()));
  wire::put(&out, ranks::trace_origin(trace));
  const std::map<int64_t, RankSteps> per_rank = steps_per_owner(trace);
  wire::put(&out, static_cast<uint64_t>(per_rank.size()));
  for (const auto& [o, r] : per_rank) {
    wire::put(&out, o);
    wire::put_text(&out, r.source);
    wire::put_text(&out, r.problem);
    wire::put(&out, static_cast<uint64_t>(r.steps.size()));
    for (const auto& [n, step] : r.steps)
      wire::put(&out, n), wire::put(&out, step.start), wire::put(&out, step.end);
  }
  return out;
}

AnalysisResult step_tables(int64_t origin, const std::map<int64_t, RankSteps>& per_rank);

AnalysisResult combine_step_partials(std::span<const std::string_view> partials, const Params& /*params*/) {
  std::map<int64_t, RankSteps> per_rank;
  int64_t origin = INT64_MAX;
  for (std::string_view in : partials) {
    const bool has_spans = wire::take<uint8_t>(&in) != 0;
    const auto first = wire::take<int64_t>(&in);
    if (has_spans) origin = std::min(origin, first);
    const auto owners = wire::take<uint64_t>(&in);
    for (uint64_t i = 0; i < owners; ++i) {
      const auto o = wire::take<int64_t>(&in);
      auto [it, fresh] = per_rank.try_emplace(o);
      if (!fresh)
        throw std::runtime_error("step_time: " + ranks::owner_label(o) +
                                 " is in two partials (each rank must come from one file)");
      it->second.source = wire::take_text(&in);
      it->second.problem = wire::take_text(&in);
      const auto steps = wire::take<uint64_t>(&in);
      if (steps > in.size() / 24) throw std::runtime_error(wire::kTruncated);
      for (uint64_t k = 0; k < steps; ++k) {
        const auto n = wire::take<int64_t>(&in);
        const auto start = wire::take<int64_t>(&in);
        it->second.steps[n] = {start, wire::take<int64_t>(&in)};
      }
    }
    if (!in.empty())
      throw std::runtime_error(
          "step_time: a partial has bytes after its records (not written by this build)");
  }
  const bool any =
      std::any_of(per_rank.begin(), per_rank.end(), [](const auto& kv) { return !kv.second.steps.empty(); });
  if (!any) {
    AnalysisResult r;
    r.missing_input =
        "no ProfilerStep marks and no iterations mined: " +
        (per_rank.empty() ? std::string("the trace has no processes") : per_rank.begin()->second.problem);
    return r;
  }
  return step_tables(origin == INT64_MAX ? 0 : origin, per_rank);
}

AnalysisResult step_tables(int64_t origin, const std::map<int64_t, RankSteps>& per_rank) {
  std::map<int64_t, std::vector<std::pair<int64_t, int64_t>>> by_step;  // step -> (owner, duration)
  for (const auto& [o, r] : per_rank)
    for (const auto& [n, s] : r.steps) by_step[n].emplace_back(o, s.end - s.start);
  std::map<int64_t, double> step_median;
  Table across = make_table("step_time_ranks", "Each step across ranks",
                            {"step", "ranks", "min_ms", "median_ms", "max_ms", "slowest_rank", "spread_ms"});
  for (const auto& [n, list] : by_step) {
    std::vector<double> d;
    auto slowest = list.begin();
    for (auto it = list.begin(); it != list.end(); ++it) {
      d.push_back(static_cast<double>(it->second));
      if (it->second > slowest->second) slowest = it;
    }
    const double median = ranks::percentile(d, 50);
    step_median[n] = median;
    const auto [lo, hi] = std::minmax_element(d.begin(), d.end());
    across.rows.push_back({Cell::integer(n), Cell::integer(static_cast<int64_t>(list.size())),
                           Cell::real(*lo / 1e6, 3), Cell::real(median / 1e6, 3), Cell::real(*hi / 1e6, 3),
                           list.size() > 1 ? ranks::rank_cell(slowest->first) : Cell::empty(),
                           Cell::real((*hi - *lo) / 1e6, 3)});
  }
  Table steps = make_table("step_time", "Step time per rank",
                           {"rank", "step", "source", "start_ms", "duration_ms", "vs_step_median_pct"});
  Table summary =
      make_table("step_time_summary", "Step time summary per rank",
                 {"rank", "source", "steps", "mean_ms", "median_ms", "max_ms", "slowest_in_steps"});
  std::map<int64_t, int64_t> slowest_count;
  for (const auto& [n, list] : by_step) {
    if (list.size() < 2) continue;
    auto slowest = std::max_element(list.begin(), list.end(),
                                    [](const auto& a, const auto& b) { return a.second < b.second; });
    ++slowest_count[slowest->first];
  }
  for (const auto& [o, r] : per_rank) {
    std::vector<double> d;
    for (const auto& [n, s] : r.steps) {
      const int64_t duration = s.end - s.start;
      d.push_back(static_cast<double>(duration));
      const double median = step_median[n];
      steps.rows.push_back({ranks::rank_cell(o), Cell::integer(n), Cell::text(r.source),
                            Cell::real(ms(s.start - origin), 3), Cell::real(ms(duration), 3),
                            Cell::real(relative_pct(static_cast<double>(duration), median), 2)});
    }
    double sum = 0;
    for (double v : d) sum += v;
    summary.rows.push_back(
        {ranks::rank_cell(o), Cell::text(r.source), Cell::integer(static_cast<int64_t>(d.size())),
         d.empty() ? Cell::empty() : Cell::real(sum / static_cast<double>(d.size()) / 1e6, 3),
         d.empty() ? Cell::empty() : Cell::real(ranks::percentile(d, 50) / 1e6, 3),
         d.empty() ? Cell::empty() : Cell::real(*std::max_element(d.begin(), d.end()) / 1e6, 3),
         Cell::integer(slowest_count[o])});
    if (!r.problem.empty()) summary.notes.push_back(ranks::owner_label(o) + ": no steps: " + r.problem);
  }
  summary.notes.push_back(
      "source: ProfilerStep (the program's step marks) or mined (iterations found by the iterations "
      "analysis on the "
      "rank's own spans, numbered from 0); steps of one number are compared across ranks");
  AnalysisResult result;
  result.tables.push_back(std::move(summary));
  result.tables.push_back(std::move(steps));
  result.tables.push_back(std::move(across));
  return result;
}

// The local run is the split run with one partial (rank_partials.h).
class StepTime : public Analysis {
 public:
  std::string_view name() const override { return "step_time"; }
  std::string_view description() const override {
    return "per-step time per rank (ProfilerStep#N marks, else mined iterations) and the slowest rank of "
           "each "
           "step";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const std::string partial = step_partial(input.trace, input.params);
    const std::string_view one[] = {partial};
    return combine_step_partials(one, input.params);
  }
};

}  // namespace

std::unique_ptr<Analysis> make_step_time() { return std::make_unique<StepTime>(); }
STRATA_REGISTER_ANALYSIS(make_step_time, 2300);
STRATA_REGISTER_RANK_PARTIAL(step_time, "step_time", step_partial, combine_step_partials);

}  // namespace strata::analysis::iterations
