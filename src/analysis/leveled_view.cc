#include "analysis/leveled_view.h"

#include <algorithm>
#include <set>

namespace strata::analysis {
namespace {

std::optional<int> run_level_of(const trace::Process& p) {
  if (!p.properties.get("leveled")) return std::nullopt;
  auto tag = p.properties.get("run.level");
  if (!tag) return std::nullopt;
  auto level = parse_level(*tag);
  if (!level) return std::nullopt;
  return static_cast<int>(*level);
}

}  // namespace

std::vector<int> leveled_run_levels(const trace::Trace& trace) {
  std::set<int> levels;
  for (const trace::Process& p : trace.processes)
    if (auto l = run_level_of(p)) levels.insert(*l);
  return {levels.begin(), levels.end()};
}

int choose_run_level(const std::vector<int>& levels, std::optional<Level> wanted) {
  if (!wanted) return levels.back();
  auto it = std::lower_bound(levels.begin(), levels.end(), static_cast<int>(*wanted));
  return it == levels.end() ? levels.back() : *it;
}

trace::Trace runs_traced_to(const trace::Trace& trace, int run_level, int* runs) {
  trace::Trace out;
  // Same ids: the pool holds each string once, so interning them in id order reproduces it.
  for (uint32_t id = 1; id < trace.strings.size(); ++id) out.strings.intern(trace.strings.get(id));
  out.record = trace.record;
  // What reading found (load.*) and its warnings; the tree's counters are the view's own.
  for (const auto& [stat, value] : trace.stats.nonzero())
    if (stats::info(stat).source != stats::Source::kCorrelation) out.stats.set(stat, value);
  out.warnings = trace.warnings;
  std::vector<int32_t> process_map(trace.processes.size(), -1);
  std::set<std::string> run_tags;
  for (size_t p = 0; p < trace.processes.size(); ++p) {
    if (run_level_of(trace.processes[p]) != run_level) continue;
    if (auto tag = trace.processes[p].properties.get("run")) run_tags.insert(std::string(*tag));
    process_map[p] = out.add_process(trace.processes[p]);
  }
  size_t spans = 0;
  for (const SpanRecord& s : trace.spans)
    if (s.process < process_map.size() && process_map[s.process] >= 0) ++spans;
  out.reserve(spans, trace.attrs.size());
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    SpanRecord s = trace.spans[i];
    if (s.process >= process_map.size() || process_map[s.process] < 0) continue;
    s.process = static_cast<uint16_t>(process_map[s.process]);
    out.add_span(s, trace.attributes(i));
  }
  *runs = static_cast<int>(run_tags.size());
  return out;
}

std::string leveled_note(const std::vector<int>& levels, int run_level, int runs, std::optional<Level> wanted) {
  std::string all;
  for (int l : levels) all += (all.empty() ? "" : ", ") + level_name(static_cast<uint8_t>(l));
  const std::string deepest = level_name(static_cast<uint8_t>(run_level));
  std::string note = "leveled trace: from the " + std::to_string(runs) + (runs == 1 ? " run" : " runs") +
                     " traced down to " + deepest + " (runs at " + all + ")";
  // Kernel analyses read the deepest runs and show layer times next to kernel times: say so.
  if (!wanted && run_level != levels.front())
    note += "; layer and model times in this table include the cost of tracing " + deepest +
            " (layer_table and model_table time them from their own runs)";
  return note;
}

}  // namespace strata::analysis
