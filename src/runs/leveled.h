// Leveled experimentation (XSP III-C): the command runs once per level set (model; model+layer;
// model+layer+library; ...), N times each. The combined result has the structure of the deepest
// runs, and every span's timing from the run in which its level was the deepest enabled, so no span
// carries the overhead of tracing the levels below it.
//
// Repetition r of the deepest level is combined with repetition r of every shallower level. A span
// of level L (not the deepest) takes start/end from its match (see span_matching.h) in the level-L
// run, shifted onto the deepest run's clock by the offset that aligns the two runs' first span of
// the shallowest level. Spans without a match keep their own timing and are counted as unmatched.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/properties.h"
#include "model/trace.h"

namespace strata::runs {

struct RunInput {
  const model::Trace* trace = nullptr;
  int64_t wall_ns = 0;  // the command's wall time in that run
};

struct LevelStats {
  int level = 0;
  int runs = 0;
  int64_t wall_median_ns = 0;
  int64_t span_median_ns = 0;     // median over runs of the summed durations of shallowest-level spans
  int64_t overhead_ns = 0;        // span_median_ns minus the previous level's (0 for the first)
  double overhead_pct = 0;        // overhead_ns relative to the previous level's span_median_ns
  uint64_t matched = 0;           // spans of this level in the deepest runs that took this level's timing
  uint64_t unmatched = 0;         // spans of this level in the deepest runs with no counterpart
  uint64_t unmatched_source = 0;  // spans of this level recorded at this level that matched nothing
};

struct LeveledResult {
  model::Trace trace;
  std::vector<LevelStats> levels;  // shallowest first
};

// runs_by_level[j] holds the repetitions recorded with levels[j] as the deepest level; levels are
// ascending and every level has the same number of repetitions (>= 1).
LeveledResult combine_leveled(const std::vector<int>& levels,
                              const std::vector<std::vector<RunInput>>& runs_by_level);

// Writes the per-level figures into the Record chunk ("leveled.<level>.overhead_ns", ...).
void describe_leveled(const LeveledResult& result, format::Properties* record);

// One line per level for the terminal.
std::string format_leveled(const LeveledResult& result);

}  // namespace strata::runs
