// `strata diff BASE NEW` (docs/diff.md): did NEW get slower than BASE, by how much, and what explains
// it. The samples are steps (step_samples.h): every step of every recording of a side, pooled, so one
// recording a side gives a test and several (--runs N, or several files) pool.
//
// Totals first: the mean step time of BASE and NEW, the change with its interval (a bootstrap over the
// recordings, then the steps within them: the variance between recordings counts when there are
// several), and the same for device time when there is device work. Then the items, ranked by how much
// of the step time they moved beyond the speed factor.
//
// The speed factor: two recordings of one unchanged program on a shared machine differ by a common
// factor (other jobs, CPU frequency): 10-40% was measured here (docs/diff.md). It is the median of the
// items' time ratios NEW/BASE weighted by BASE time, host and device apart; each item is judged against
// the factor of the other items (leave one out), so an item holding most of the time that got slower
// is still seen. --no-normalize: a factor of 1.
//
// The gate (has_regression): the step (or device) time is slower beyond the factor by more than
// threshold_pct of the step with its intervals above zero (over the steps, and over the items: the
// items' chance deviations from one factor move the total too), or an item explains more than threshold_pct
// of the step beyond the factor (added items included) and its per-step times differ from BASE's
// (x factor) significantly: a Mann-Whitney U test per item, Benjamini-Hochberg over every item tested
// at false discovery rate alpha, and every NEW recording's mean above every BASE recording's (x factor)
// by the threshold (one process of several in another allocator regime is not a change of the code).
// The threshold is a share of the step, not of the item: a short op
// that varies 20% between processes moves the step by a fraction of a percent (the defect of issue 34).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/step_samples.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::analysis {

// Steps needed on each side for a test (the smallest two-sided U p-value for 5 against 5 is 0.008).
inline constexpr size_t kMinStepsForTest = 5;
// Per recording, an item's (or the step's) time in a step is capped at its median plus this many
// (scaled) median deviations of the values below the median, when it has time in at least this share
// of the steps: a scheduler tick taken in one step is not a change of the op (trace_diff.cc,
// cap_excursions).
inline constexpr double kCapMads = 4;
inline constexpr double kCapMinPresence = 0.75;
// Items (of a domain, host or device) needed for a speed factor; with fewer it is 1.
inline constexpr size_t kMinItemsForFactor = 3;
// An item's speed factor is that of the matched items whose time per call is within this factor of its
// own, at most kNeighbors on each side (trace_diff.cc, speed_factors).
inline constexpr double kNeighborSpan = 4;
inline constexpr size_t kNeighbors = 25;

struct DiffOptions {
  double threshold_pct = 5;  // of the step (device) time, beyond the speed factor
  double alpha = 0.05;       // significance: interval level 1 - alpha, false discovery rate alpha
  bool normalize = true;     // judge changes beyond the speed factor
};

enum class DiffStatus { kMatched, kAdded, kRemoved, kShapeChanged };

struct DiffItem {
  uint8_t level = 0;
  bool device = false;
  std::string name, shapes, module;
  std::string new_shapes;  // kShapeChanged: the shapes in NEW (shapes: in BASE)
  DiffStatus status = DiffStatus::kMatched;
  double base_ns = 0, new_ns = 0;        // mean time per step
  double base_count = 0, new_count = 0;  // mean calls per step
  double delta_ns = 0;                   // new_ns - base_ns
  double factor = 1;                     // its speed factor (its neighbours' central change)
  double factor_high = 1;                // their upper quartile: what the gate judges it against
  double excess_ns = 0;                  // new_ns - factor x base_ns
  double excess_pct = 0;                 // excess_ns as a share of the step (device) time x factor
  double gate_pct = 0;                   // the same beyond factor_high: what the gate reads
  double share_pct = 0;                  // excess_ns as a share of the total's excess
  bool share_known = false;              // false when the total hardly moved (share meaningless)
  double p_value = 1;
  bool tested = false;       // in the U test (both sides have kMinStepsForTest steps, time on a side)
  bool significant = false;  // after Benjamini-Hochberg over every item tested
  bool regression = false;
};

struct DiffTotal {
  bool present = false;
  double base_ns = 0, new_ns = 0;  // mean per step
  size_t base_steps = 0, new_steps = 0;
  double change_pct = 0, change_low_pct = 0, change_high_pct = 0;  // raw, with its interval
  double factor = 1;
  double excess_pct = 0, excess_low_pct = 0, excess_high_pct = 0;  // beyond the factor
  // The excess's interval with the items as samples (how far the items' own deviations from a common
  // factor move it; trace_diff.cc, excess_interval_over_items); unbounded without a factor.
  double items_low_pct = -1e9, items_high_pct = 1e9;
  bool tested = false;
  bool regression = false;
};

struct DiffResult {
  int base_recordings = 0, new_recordings = 0;
  // step: per step, the main thread's items and the time between its ops, each capped at its median +
  // kCapMads deviations per recording (what the gate reads); wall: the recorded wall time per step (shown,
  // never a regression: the scheduler's preemptions are in it); device: device time per step.
  DiffTotal step, wall, device;
  std::vector<DiffItem> items;  // regressions first, then by |excess_ns|
  size_t tested_items = 0;      // m of Benjamini-Hochberg
  bool testable = false;        // both sides have kMinStepsForTest steps
  bool has_regression = false;
  bool undecided = false;  // not testable, and a change beyond the threshold that a test would judge
  std::string verdict;     // one line
  std::vector<std::string> notes;
  double threshold_pct = 0, alpha = 0;
};

DiffResult diff_recordings(const std::vector<RecordingSteps>& base, const std::vector<RecordingSteps>& next,
                           const DiffOptions& options);

// Both traces' recordings (recordings_of), compared.
DiffResult diff_traces(const trace::Trace& base, const trace::Trace& next, const DiffOptions& options);

// The totals, the changes (at most `top` rows each) and the verdict as result tables.
std::vector<table::Table> diff_tables(const DiffResult& result, size_t top);

// The change column of an item: "time", "added", "removed", "calls 80 -> 1,680", "shapes A -> B".
std::string change_text(const DiffItem& item);
const char* verdict_text(const DiffItem& item);

}  // namespace strata::analysis
