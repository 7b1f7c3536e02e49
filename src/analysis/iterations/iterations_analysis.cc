#include "analysis/iterations/iterations_analysis.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/level.h"

namespace strata::analysis::iterations {
namespace {

bool int_param(const analysis::Params& params, std::string_view key, int64_t min, int64_t* out,
               std::string* error) {
  const std::string text = params.get(key, "");
  if (text.empty()) return true;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < min) {
    *error = std::string(key) + "='" + text + "': expected an integer >= " + std::to_string(min);
    return false;
  }
  *out = v;
  return true;
}

// Cross-check against step markers when the trace happens to have them (they are never used for
// mining): model-level spans on the main process, by name.
std::vector<std::string> marker_notes(const trace::Trace& trace, const IterationsReport& report) {
  std::vector<std::string> notes;
  if (report.classes.main_track < 0 || report.classes.op_level <= static_cast<uint8_t>(Level::kModel))
    return notes;
  const uint16_t process = report.classes.tracks[report.classes.main_track].key.process;
  std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> by_name;
  for (const SpanRecord& s : trace.spans) {
    if (s.process != process || s.level != static_cast<uint8_t>(Level::kModel)) continue;
    std::string name(trace.name(s));
    const size_t hash = name.rfind('#');  // "ProfilerStep#101" -> "ProfilerStep#N"
    if (hash != std::string::npos && hash + 1 < name.size() &&
        name.find_first_not_of("0123456789", hash + 1) == std::string::npos)
      name = name.substr(0, hash + 1) + "N";
    by_name[name].emplace_back(s.start_ns, s.end_ns);
  }
  // Only names that could mark iterations: about as many as the iterations found.
  const size_t found = report.metrics.iterations.size();
  std::erase_if(by_name,
                [&](const auto& kv) { return kv.second.size() * 2 < found || kv.second.size() > 2 * found; });
  for (auto& [name, windows] : by_name) {
    std::sort(windows.begin(), windows.end());
    int64_t starts_inside = 0;
    for (const IterationMetrics& it : report.metrics.iterations) {
      auto w = std::upper_bound(windows.begin(), windows.end(), std::make_pair(it.start_ns, INT64_MAX));
      if (w != windows.begin() && std::prev(w)->second >= it.start_ns) ++starts_inside;
    }
    notes.push_back("step markers present (not used for mining): " + std::to_string(windows.size()) + " '" +
                    name + "' model-level spans; " + std::to_string(starts_inside) + " of the " +
                    std::to_string(report.metrics.iterations.size()) + " mined iterations start inside one");
  }
  return notes;
}

// Op symbols that mark a training step: PyTorch's optimizers run their step inside a
// record_function scope "Optimizer.step#<class>.step" (a top-level op of the layer level, once per
// step; gradient accumulation's micro-batches hold none). By name until spans carry a canonical
// activity type; device-level sequences (kernels) have no such op and are mined by structure alone.
std::vector<int32_t> step_anchor_symbols(const trace::Trace& trace, const std::vector<int32_t>& symbol_of) {
  std::vector<int32_t> out;
  for (size_t name = 0; name < symbol_of.size(); ++name)
    if (symbol_of[name] >= 0 && trace.strings.get(static_cast<uint32_t>(name)).starts_with("Optimizer.step#"))
      out.push_back(symbol_of[name]);
  return out;
}

}  // namespace

bool options_from_params(const analysis::Params& params, IterationsOptions* options, std::string* error) {
  if (!int_param(params, "iterations", 0, &options->miner.iterations, error)) return false;
  if (!int_param(params, "epsilon", 0, &options->miner.epsilon, error)) return false;
  if (!int_param(params, "max_extra_ops", 0, &options->miner.max_extra_ops, error)) return false;
  if (!int_param(params, "min_repeats", 2, &options->miner.min_repeats, error)) return false;
  // sample_ops=0 mines the whole sequence (the exact method) however long it is.
  if (!int_param(params, "sample_ops", 0, &options->miner.sample_ops, error)) return false;
  int64_t loops = options->miner.max_loops;
  if (!int_param(params, "max_loops", 1, &loops, error)) return false;
  options->miner.max_loops = static_cast<int>(std::min<int64_t>(loops, 64));
  options->classify.stream = params.get("stream", "");
  const std::string level = params.get("level", "");
  if (!level.empty()) {
    auto parsed = parse_level(level);
    if (!parsed) {
      *error = "level='" + level + "': expected a level name (device, layer, library, model, ...)";
      return false;
    }
    options->classify.op_level = static_cast<uint8_t>(*parsed);
  }
  return true;
}

bool run_iterations(const trace::Trace& trace, const IterationsOptions& options, IterationsReport* report,
                    std::string* error) {
  *report = IterationsReport{};
  if (!classify_tracks(trace, options.classify, &report->classes, error)) return false;
  std::vector<uint32_t> spans;
  std::vector<int64_t> gaps;
  main_sequence(trace, report->classes, &spans, &gaps);
  // Op names to a dense integer alphabet (first appearance order), by interned name id: a table
  // lookup per op, never a string hash.
  std::vector<int32_t> symbol_of(trace.strings.size(), -1);
  int32_t symbols = 0;
  std::vector<int32_t> seq;
  seq.reserve(spans.size());
  for (uint32_t i : spans) {
    const uint32_t name = trace.spans[i].name;
    if (name >= symbol_of.size()) symbol_of.resize(static_cast<size_t>(name) + 1, -1);
    if (symbol_of[name] < 0) {
      symbol_of[name] = symbols++;
      report->symbol_names.push_back(name);
    }
    seq.push_back(symbol_of[name]);
  }
  std::vector<int64_t> op_time(spans.size());
  for (size_t j = 0; j < spans.size(); ++j) op_time[j] = trace.spans[spans[j]].duration_ns() + gaps[j];
  MinerOptions miner = options.miner;
  if (miner.step_anchor_symbols.empty()) miner.step_anchor_symbols = step_anchor_symbols(trace, symbol_of);
  report->mining = mine_iterations(seq, gaps, miner, op_time);
  if (report->mining.iterations.empty()) {
    *error = report->classes.tracks[report->classes.main_track].label + ": " + report->mining.error;
    return false;
  }
  report->metrics = compute_metrics(trace, report->classes, std::move(spans), report->mining);
  for (size_t l = 0; l < report->metrics.loops.size(); ++l)
    report->diagnoses.push_back(
        diagnose(trace, report->classes, report->metrics, static_cast<int32_t>(l), options.diagnosis));
  report->notes = marker_notes(trace, *report);
  return true;
}

size_t add_iteration_spans(trace::Trace* trace, const IterationsReport& report) {
  if (report.classes.main_track < 0) return 0;
  const TrackKey& key = report.classes.tracks[report.classes.main_track].key;
  const SpanRecord model_span =
      trace->spans[report.metrics.sequence_spans.front()];  // a copy: add_span reallocates
  uint64_t next_id = 1;
  for (const SpanRecord& s : trace->spans) next_id = std::max(next_id, s.span_id + 1);
  size_t added = 0;
  for (const IterationMetrics& it : report.metrics.iterations) {
    SpanRecord r;
    r.span_id = next_id++;
    r.start_ns = it.start_ns;
    r.end_ns = it.end_ns;
    r.name = trace->strings.intern(it.loop == 0 ? std::string("iteration")
                                                : "iteration.loop" + std::to_string(it.loop));
    r.tid = model_span.tid;
    r.stream = model_span.stream;
    r.device = model_span.device;
    r.process = key.process;
    r.level = static_cast<uint8_t>(Level::kIteration);
    r.kind = static_cast<uint8_t>(SpanKind::kSpan);
    r.clock = model_span.clock;
    const AttrRecord attrs[] = {trace->int_attr("index", it.index), trace->int_attr("loop", it.loop),
                                trace->int_attr("ops", it.ops),
                                trace->int_attr("extra_ops", it.inner_extra_ops + it.trailing_extra_ops),
                                trace->int_attr("flagged", it.flagged() ? 1 : 0)};
    trace->add_span(r, attrs);
    ++added;
  }
  return added;
}

namespace {

class IterationsAnalysis final : public Analysis {
 public:
  std::string_view name() const override { return "iterations"; }
  std::string_view description() const override {
    return "marker-free iteration mining (DeepProf): iterations, per-iteration metrics, diagnosis";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    AnalysisResult result;
    analysis::iterations::IterationsOptions options;
    std::string error;
    if (!analysis::iterations::options_from_params(input.params, &options, &error)) {
      result.missing_input = "iterations: " + error;
      return result;
    }
    analysis::iterations::IterationsReport report;
    if (!analysis::iterations::run_iterations(input.trace, options, &report, &error)) {
      result.missing_input = "iterations: " + error;
      return result;
    }
    result.tables = analysis::iterations::report_tables(input.trace, report);
    return result;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_iterations() { return std::make_unique<IterationsAnalysis>(); }
STRATA_REGISTER_ANALYSIS(make_iterations, 1800);

}  // namespace strata::analysis::iterations
