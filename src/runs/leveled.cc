#include "runs/leveled.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <unordered_map>

#include "core/level.h"
#include "runs/run_set.h"
#include "runs/span_matching.h"

namespace strata::runs {
namespace {

std::string level_label(int level) {
  std::string name = level_name(static_cast<uint8_t>(level));
  return name.empty() ? std::to_string(level) : name;
}

// Spans that take time: not counters, not instants.
bool timed(const SpanRecord& s) {
  return s.kind != static_cast<uint8_t>(SpanKind::kCounter) && s.kind != static_cast<uint8_t>(SpanKind::kInstant);
}

// Spans of `level` with no span of the same level around them (aten::conv2d, not the
// aten::convolution inside it): summing only these counts each moment once.
std::vector<uint8_t> outermost_at(const trace::Trace& trace, int level) {
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < trace.spans.size(); ++i)
    if (trace.spans[i].span_id != 0) by_id.emplace(trace.spans[i].span_id, i);
  std::vector<uint8_t> out(trace.spans.size(), 0);
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != level || !timed(s)) continue;
    bool nested = false;
    uint64_t parent = s.parent_id;
    for (size_t guard = 0; parent != 0 && guard < trace.spans.size(); ++guard) {
      auto it = by_id.find(parent);
      if (it == by_id.end() || it->second == i) break;
      const SpanRecord& p = trace.spans[it->second];
      if (p.level == level && timed(p)) {
        nested = true;
        break;
      }
      if (p.level < level) break;  // above the level: no same-level span further up matters here
      parent = p.parent_id;
    }
    out[i] = nested ? 0 : 1;
  }
  return out;
}

Spread spread_of(const std::vector<int64_t>& values) {
  Spread s;
  if (values.empty()) return s;
  s.count = static_cast<int>(values.size());
  s.median_ns = median_ns(values);
  auto [lo, hi] = std::minmax_element(values.begin(), values.end());
  s.min_ns = *lo;
  s.max_ns = *hi;
  return s;
}

struct MatchedSums {
  uint64_t matched = 0, only_deep = 0, only_shallow = 0;
  int64_t shallow_ns = 0, deep_ns = 0;  // summed durations of the matched spans in each run
};

// The outermost spans of `level` in two runs of the command, matched by key (span_matching.h).
MatchedSums match_level(const trace::Trace& shallow, const trace::Trace& deep, int level) {
  MatchedSums m;
  std::vector<uint64_t> shallow_keys = match_keys(shallow, level);
  std::vector<uint8_t> shallow_outer = outermost_at(shallow, level);
  std::unordered_map<uint64_t, size_t> by_key;
  for (size_t i = 0; i < shallow.spans.size(); ++i)
    if (shallow_outer[i] && shallow_keys[i] != kNoKey) by_key.emplace(shallow_keys[i], i);
  std::vector<uint64_t> deep_keys = match_keys(deep, level);
  std::vector<uint8_t> deep_outer = outermost_at(deep, level);
  for (size_t i = 0; i < deep.spans.size(); ++i) {
    const SpanRecord& s = deep.spans[i];
    if (!deep_outer[i]) continue;
    auto it = deep_keys[i] == kNoKey ? by_key.end() : by_key.find(deep_keys[i]);
    if (it == by_key.end()) {
      ++m.only_deep;
      continue;
    }
    ++m.matched;
    m.shallow_ns += shallow.spans[it->second].duration_ns();
    m.deep_ns += s.duration_ns();
    by_key.erase(it);
  }
  m.only_shallow = by_key.size();
  return m;
}

Overhead compare(const std::vector<RunInput>& shallow_runs, const std::vector<RunInput>& deep_runs, int on_level) {
  Overhead o;
  o.on_level = on_level;
  std::vector<int64_t> base, traced, added;
  const size_t reps = std::min(shallow_runs.size(), deep_runs.size());
  for (size_t r = 0; r < reps; ++r) {
    MatchedSums m = match_level(*shallow_runs[r].trace, *deep_runs[r].trace, on_level);
    o.matched += m.matched;
    o.unmatched += m.only_deep;
    o.unmatched_source += m.only_shallow;
    base.push_back(m.shallow_ns);
    traced.push_back(m.deep_ns);
    added.push_back(m.deep_ns - m.shallow_ns);
  }
  o.base = spread_of(base);
  o.added = spread_of(added);
  if (o.base.median_ns > 0)
    o.pct = 100.0 * static_cast<double>(o.added.median_ns) / static_cast<double>(o.base.median_ns);
  if (reps > 1 && o.matched > 0) {
    Spread deep = spread_of(traced);
    o.noise_ns = std::max(o.base.max_ns - o.base.min_ns, deep.max_ns - deep.min_ns);
    o.verdict = std::llabs(o.added.median_ns) <= o.noise_ns ? NoiseVerdict::kWithinNoise : NoiseVerdict::kAboveNoise;
  }
  return o;
}

}  // namespace

const char* verdict_text(NoiseVerdict verdict) {
  switch (verdict) {
    case NoiseVerdict::kAboveNoise:
      return "above noise";
    case NoiseVerdict::kWithinNoise:
      return "within noise";
    case NoiseVerdict::kUnknown:
      break;
  }
  return "noise unknown";
}

LeveledResult combine_leveled(const std::vector<int>& levels,
                              const std::vector<std::vector<RunInput>>& runs_by_level) {
  LeveledResult result;
  const size_t repetitions = runs_by_level.empty() ? 0 : runs_by_level.back().size();
  // Every run as recorded, in the order they ran (repetitions rotate through the levels), so the
  // combined trace stays in time order.
  for (size_t r = 0; r < repetitions; ++r)
    for (size_t j = 0; j < levels.size(); ++j)
      if (r < runs_by_level[j].size())
        append_trace(result.trace, *runs_by_level[j][r].trace,
                     {{"run", std::to_string(r)}, {"run.level", level_label(levels[j])}, {"leveled", "1"}});

  result.levels.resize(levels.size());
  for (size_t j = 0; j < levels.size(); ++j) {
    LevelStats& stats = result.levels[j];
    stats.level = levels[j];
    stats.runs = static_cast<int>(runs_by_level[j].size());
    std::vector<int64_t> walls, times, counts;
    for (const RunInput& run : runs_by_level[j]) {
      walls.push_back(run.wall_ns);
      int64_t total = 0, count = 0;
      std::vector<uint8_t> outer = outermost_at(*run.trace, levels[j]);
      for (size_t i = 0; i < run.trace->spans.size(); ++i) {
        const SpanRecord& s = run.trace->spans[i];
        if (s.level != levels[j] || !timed(s)) continue;
        ++count;
        if (outer[i]) total += s.duration_ns();
      }
      times.push_back(total);
      counts.push_back(count);
    }
    stats.wall_median_ns = median_ns(walls);
    stats.time = spread_of(times);
    stats.spans_per_run = median_ns(counts);
    if (j == 0) continue;
    stats.on_parent = compare(runs_by_level[j - 1], runs_by_level[j], levels[j - 1]);
    stats.on_shallowest = j == 1 ? stats.on_parent : compare(runs_by_level[0], runs_by_level[j], levels[0]);
  }
  return result;
}

namespace {

void describe_overhead(const Overhead& o, const std::string& prefix, format::Properties* record) {
  record->set(prefix + "on", level_label(o.on_level));
  record->set_int(prefix + "matched", static_cast<int64_t>(o.matched));
  record->set_int(prefix + "unmatched", static_cast<int64_t>(o.unmatched));
  record->set_int(prefix + "unmatched_source", static_cast<int64_t>(o.unmatched_source));
  record->set_int(prefix + "base_ns", o.base.median_ns);
  record->set_int(prefix + "overhead_ns", o.added.median_ns);
  record->set_int(prefix + "overhead_min_ns", o.added.min_ns);
  record->set_int(prefix + "overhead_max_ns", o.added.max_ns);
  char pct[32];
  std::snprintf(pct, sizeof(pct), "%.3f", o.pct);
  record->set(prefix + "overhead_pct", pct);
  record->set_int(prefix + "noise_ns", o.noise_ns);
  record->set(prefix + "verdict", verdict_text(o.verdict));
}

}  // namespace

void describe_leveled(const LeveledResult& result, format::Properties* record) {
  std::string names;
  for (const LevelStats& s : result.levels) names.append(names.empty() ? "" : ",").append(level_label(s.level));
  record->set("leveled", "1");
  record->set("leveled.levels", names);
  record->set(
      "leveled.matching",
      "(process rank, thread rank, ancestors at levels <= L, level, name, occurrence among same-named "
      "siblings)");
  record->set("leveled.overhead",
              "per repetition: summed durations of the level-above spans matched between the run with this "
              "level traced and the run without it, difference; median [min, max] over repetitions; within "
              "noise when no larger than the run-to-run spread of either side");
  for (const LevelStats& s : result.levels) {
    std::string p = "leveled." + level_label(s.level) + ".";
    record->set_int(p + "runs", s.runs);
    record->set_int(p + "wall_median_ns", s.wall_median_ns);
    record->set_int(p + "spans_per_run", s.spans_per_run);
    record->set_int(p + "time_median_ns", s.time.median_ns);
    record->set_int(p + "time_min_ns", s.time.min_ns);
    record->set_int(p + "time_max_ns", s.time.max_ns);
    if (&s == &result.levels.front()) continue;
    describe_overhead(s.on_parent, p, record);
    describe_overhead(s.on_shallowest, p + "end_to_end.", record);
  }
}

namespace {

std::string ms(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3f", static_cast<double>(ns) / 1e6);
  return buf;
}

// "within noise (run-to-run spread 12.3 ms)", or why it cannot be said.
std::string noise_words(const Overhead& o, int runs) {
  if (o.matched == 0) return "no spans matched: nothing to compare";
  std::string words;
  if (o.verdict == NoiseVerdict::kUnknown) {
    words = std::to_string(runs) + " run: noise unknown (--runs 3 or more measures it)";
  } else {
    words = std::string(verdict_text(o.verdict)) + " (run-to-run spread " + ms(o.noise_ns) + " ms)";
  }
  if (o.added.median_ns < 0 && o.verdict != NoiseVerdict::kAboveNoise)
    words += "; below zero, so noise: tracing does not make the program faster";
  else if (o.added.median_ns < 0)
    words += "; below zero beyond the spread: the runs differed in more than tracing (load, warm-up)";
  return words;
}

}  // namespace

std::string format_leveled(const LeveledResult& result) {
  if (result.levels.empty()) return "";
  const int runs = result.levels.front().runs;
  std::string out = "leveled runs (XSP III-C), " + std::to_string(runs) +
                    " per level; each level timed by the runs where it was the deepest traced:\n";
  char line[512];
  std::snprintf(line, sizeof(line), "  %-10s %5s %10s %14s  %s\n", "level", "runs", "spans/run", "time_ms",
                "[min, max] over runs");
  out += line;
  for (const LevelStats& s : result.levels) {
    std::snprintf(line, sizeof(line), "  %-10s %5d %10lld %14s  [%s, %s]\n", level_label(s.level).c_str(), s.runs,
                  static_cast<long long>(s.spans_per_run), ms(s.time.median_ns).c_str(), ms(s.time.min_ns).c_str(),
                  ms(s.time.max_ns).c_str());
    out += line;
  }
  if (result.levels.size() < 2) return out;
  out += "what tracing a level adds to the spans of the level above (spans matched between the runs):\n";
  std::snprintf(line, sizeof(line), "  %-16s %-8s %9s %9s %12s %10s  %s\n", "level", "on", "matched", "unmatched",
                "overhead_ms", "overhead", "[min, max] ms; noise");
  out += line;
  auto row = [&](const std::string& label, const Overhead& o) {
    std::snprintf(line, sizeof(line), "  %-16s %-8s %9llu %9llu %12s %9.2f%%  [%s, %s]; %s\n", label.c_str(),
                  level_label(o.on_level).c_str(), static_cast<unsigned long long>(o.matched),
                  static_cast<unsigned long long>(o.unmatched + o.unmatched_source), ms(o.added.median_ns).c_str(),
                  o.pct, ms(o.added.min_ns).c_str(), ms(o.added.max_ns).c_str(), noise_words(o, runs).c_str());
    out += line;
  };
  for (size_t j = 1; j < result.levels.size(); ++j) row(level_label(result.levels[j].level), result.levels[j].on_parent);
  if (result.levels.size() > 2) {
    out += "end to end, on the " + level_label(result.levels.front().level) + " spans:\n";
    for (size_t j = 2; j < result.levels.size(); ++j)
      row("down to " + level_label(result.levels[j].level), result.levels[j].on_shallowest);
  }
  return out;
}

}  // namespace strata::runs
