// Leveled experimentation (XSP III-C): the command runs once per level set (model; model+layer;
// model+layer+library; ...), N times each. Every span's accurate timing is the one from the runs
// where its level was the deepest traced, so no span carries the cost of tracing the levels below.
//
// Runs are never merged into one timeline: the combined trace keeps every run as recorded (its own
// processes, tagged "run", "run.level" and "leveled"), so nesting and Chrome tracks stay those of
// one real execution. What leveled experimentation measures is aggregated over spans matched
// between runs (span_matching.h):
//   - each level's own time: the summed durations of its outermost spans (no span of the same level
//     around them) in the runs where it was deepest;
//   - what tracing level j adds to the level above it (j-1): for repetition r, the outermost spans
//     of level j-1 matched between run (j-1, r) and run (j, r); overhead_r = their summed durations in run j
//     minus in run j-1. Reported as the median over repetitions with its [min, max], against the
//     run-to-run spread of the two levels' own measurements (noise), and said to be within noise
//     when it is no larger than that spread (or unknown with one run).
//   - the same comparison on the shallowest level's spans (end to end: e.g. predict with the layer
//     tracer on vs model-only).
// Analyses pick the runs whose deepest level is the one they time (analysis/leveled_view.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/properties.h"
#include "trace/trace.h"

namespace strata::runs {

struct RunInput {
  const trace::Trace* trace = nullptr;
  int64_t wall_ns = 0;  // the command's wall time in that run
};

// A value measured once per repetition: median and range over repetitions.
struct Spread {
  int64_t median_ns = 0, min_ns = 0, max_ns = 0;
  int count = 0;
};

enum class NoiseVerdict { kAboveNoise, kWithinNoise, kUnknown };

// What tracing one level adds to spans of a shallower level, from runs (shallow, r) vs (deep, r).
struct Overhead {
  int on_level = 0;               // the level whose spans are compared
  uint64_t matched = 0;           // spans of on_level found in both runs, summed over repetitions
  uint64_t unmatched = 0;         // spans of on_level in the deeper runs without a counterpart
  uint64_t unmatched_source = 0;  // spans of on_level in the shallower runs without a counterpart
  Spread base;                    // matched spans' summed durations in the shallower runs
  Spread added;                   // per repetition: deeper minus shallower, over matched spans
  double pct = 0;                 // added.median_ns relative to base.median_ns
  int64_t noise_ns = -1;          // run-to-run spread (max - min) of either side; -1: one run
  NoiseVerdict verdict = NoiseVerdict::kUnknown;
};

struct LevelStats {
  int level = 0;
  int runs = 0;
  int64_t wall_median_ns = 0;
  int64_t spans_per_run = 0;  // median count of this level's spans in its own runs
  Spread time;                // summed durations of this level's outermost spans in its own runs
  // For every level but the shallowest: on the level just above, and on the shallowest level.
  Overhead on_parent;
  Overhead on_shallowest;
};

struct LeveledResult {
  trace::Trace trace;              // every run, as recorded, tagged
  std::vector<LevelStats> levels;  // shallowest first
};

// runs_by_level[j] holds the repetitions recorded with levels[j] as the deepest level; levels are
// ascending and every level has the same number of repetitions (>= 1).
LeveledResult combine_leveled(const std::vector<int>& levels,
                              const std::vector<std::vector<RunInput>>& runs_by_level);

// Writes the per-level figures into the Record chunk ("leveled.<level>.overhead_ns", ...).
void describe_leveled(const LeveledResult& result, format::Properties* record);

// The per-level figures for the terminal: times, overheads with their spread and noise verdict.
std::string format_leveled(const LeveledResult& result);

const char* verdict_text(NoiseVerdict verdict);

}  // namespace strata::runs
