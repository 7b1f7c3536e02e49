#include "runs/leveled.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

#include "core/level.h"
#include "runs/run_set.h"
#include "runs/span_matching.h"

namespace strata::runs {
namespace {

// Start of the first span at `level` (or of the first span at all when there is none).
int64_t anchor_time(const model::Trace& trace, int level) {
  int64_t first_at_level = INT64_MAX, first_any = INT64_MAX;
  for (const SpanRecord& s : trace.spans) {
    first_any = std::min(first_any, s.start_ns);
    if (s.level == level) first_at_level = std::min(first_at_level, s.start_ns);
  }
  if (first_at_level != INT64_MAX) return first_at_level;
  return first_any == INT64_MAX ? 0 : first_any;
}

std::string level_label(int level) {
  std::string name = level_name(static_cast<uint8_t>(level));
  return name.empty() ? std::to_string(level) : name;
}

}  // namespace

LeveledResult combine_leveled(const std::vector<int>& levels,
                              const std::vector<std::vector<RunInput>>& runs_by_level) {
  LeveledResult result;
  const size_t deepest = levels.size() - 1;
  const size_t repetitions = runs_by_level[deepest].size();
  const int shallowest = levels.front();
  result.levels.resize(levels.size());
  for (size_t j = 0; j < levels.size(); ++j) {
    result.levels[j].level = levels[j];
    result.levels[j].runs = static_cast<int>(runs_by_level[j].size());
  }

  for (size_t r = 0; r < repetitions; ++r) {
    const model::Trace& base = *runs_by_level[deepest][r].trace;
    model::Trace timed;  // `base` with shallower spans re-timed; appended to the result below
    append_trace(timed, base, {});
    const int64_t base_anchor = anchor_time(base, shallowest);
    for (size_t j = 0; j + 1 < levels.size(); ++j) {
      if (r >= runs_by_level[j].size()) continue;
      const int level = levels[j];
      const model::Trace& source = *runs_by_level[j][r].trace;
      const int64_t shift = base_anchor - anchor_time(source, shallowest);
      std::vector<uint64_t> source_keys = match_keys(source, level);
      std::unordered_map<uint64_t, size_t> by_key;
      for (size_t i = 0; i < source.spans.size(); ++i)
        if (source.spans[i].level == level && source_keys[i] != kNoKey) by_key.emplace(source_keys[i], i);
      std::vector<uint64_t> base_keys = match_keys(base, level);
      LevelStats& stats = result.levels[j];
      for (size_t i = 0; i < timed.spans.size(); ++i) {
        SpanRecord& s = timed.spans[i];
        if (s.level != level) continue;
        auto it = by_key.find(base_keys[i]);
        if (it == by_key.end()) {
          ++stats.unmatched;
          continue;
        }
        const SpanRecord& m = source.spans[it->second];
        s.start_ns = m.start_ns + shift;
        s.end_ns = m.end_ns + shift;
        by_key.erase(it);
        ++stats.matched;
      }
      stats.unmatched_source += by_key.size();
    }
    append_trace(result.trace, timed,
                 {{"run", std::to_string(r)}, {"run.level", level_label(levels[deepest])}, {"leveled", "1"}});
  }

  for (size_t j = 0; j < levels.size(); ++j) {
    std::vector<int64_t> walls, spans;
    for (const RunInput& run : runs_by_level[j]) {
      walls.push_back(run.wall_ns);
      spans.push_back(total_span_ns(*run.trace, shallowest));
    }
    LevelStats& stats = result.levels[j];
    stats.wall_median_ns = median_ns(walls);
    stats.span_median_ns = median_ns(spans);
    if (j > 0) {
      // Without spans at the shallowest level the command's wall time is the only measure.
      bool use_spans = stats.span_median_ns > 0 && result.levels[j - 1].span_median_ns > 0;
      int64_t now = use_spans ? stats.span_median_ns : stats.wall_median_ns;
      int64_t before = use_spans ? result.levels[j - 1].span_median_ns : result.levels[j - 1].wall_median_ns;
      stats.overhead_ns = now - before;
      stats.overhead_pct =
          before > 0 ? 100.0 * static_cast<double>(now - before) / static_cast<double>(before) : 0;
    }
  }
  return result;
}

void describe_leveled(const LeveledResult& result, format::Properties* record) {
  std::string names;
  for (const LevelStats& s : result.levels) names += (names.empty() ? "" : ",") + level_label(s.level);
  record->set("leveled", "1");
  record->set("leveled.levels", names);
  record->set(
      "leveled.matching",
      "(process rank, thread rank, ancestors at levels <= L, level, name, occurrence among same-named "
      "siblings)");
  for (const LevelStats& s : result.levels) {
    std::string p = "leveled." + level_label(s.level) + ".";
    record->set_int(p + "runs", s.runs);
    record->set_int(p + "wall_median_ns", s.wall_median_ns);
    record->set_int(p + "span_median_ns", s.span_median_ns);
    record->set_int(p + "overhead_ns", s.overhead_ns);
    char pct[32];
    std::snprintf(pct, sizeof(pct), "%.3f", s.overhead_pct);
    record->set(p + "overhead_pct", pct);
    record->set_int(p + "matched", static_cast<int64_t>(s.matched));
    record->set_int(p + "unmatched", static_cast<int64_t>(s.unmatched));
    record->set_int(p + "unmatched_source", static_cast<int64_t>(s.unmatched_source));
  }
}

std::string format_leveled(const LeveledResult& result) {
  std::string out = "leveled runs (medians; overhead = time the level adds to the " +
                    level_label(result.levels.front().level) + "-level spans):\n";
  char line[256];
  std::snprintf(line, sizeof(line), "  %-10s %5s %14s %14s %14s %9s %9s %10s\n", "level", "runs", "wall_ms",
                "spans_ms", "overhead_ms", "overhead", "matched", "unmatched");
  out += line;
  for (const LevelStats& s : result.levels) {
    std::snprintf(line, sizeof(line), "  %-10s %5d %14.3f %14.3f %14.3f %8.2f%% %9llu %10llu\n",
                  level_label(s.level).c_str(), s.runs, s.wall_median_ns / 1e6, s.span_median_ns / 1e6,
                  s.overhead_ns / 1e6, s.overhead_pct, static_cast<unsigned long long>(s.matched),
                  static_cast<unsigned long long>(s.unmatched + s.unmatched_source));
    out += line;
  }
  return out;
}

}  // namespace strata::runs
