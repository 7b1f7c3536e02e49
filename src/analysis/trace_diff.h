// `strata diff BASE NEW`: what got slower or faster between two traces of the same workload, in
// any format the readers take (native, Kineto, ...). Spans are matched by level, name, input shapes
// and module path (attr_keys::kShapes, kModule): one item per distinct key, over the model, layer,
// library, runtime and device levels. Per item and run: time (inclusive; its count times its median
// instance duration, so one preempted instance does not move it), count and allocated bytes
// (memory_keys::kAllocBytes). A trace of repeated runs (strata record --runs N: processes tagged
// "run") has one sample per run; items are compared by their medians over runs.
//
// Significance: a Mann-Whitney U test (mann_whitney.h) on the item's per-run totals when both sides
// have at least kMinRunsForRunTest runs, else on its per-instance durations (every instance of the
// item in every run: more samples, but instances of one run are not independent of each other).
// Two recordings of one configuration on a shared machine differ by a common factor (other jobs,
// CPU frequency): everything slower by 20-40% between sessions. So changes are judged beyond the
// common factor (speed_factor: the median of the items' time ratios, weighted by time): an item is
// a regression when NEW differs from BASE x factor significantly (p < alpha), it is slower by more
// than threshold_pct of BASE x factor, and that excess is at least min_impact_pct of the total (the
// median per-run time of the model-level spans, or of the shallowest level without model spans),
// kept after a Benjamini-Hochberg step over those candidates (many items are tested at once).
// A change that slows everything alike is then not blamed on any op: the speed factor is printed,
// and --no-normalize judges raw changes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "table/table.h"
#include "trace/trace.h"

namespace strata::analysis {

inline constexpr int kMinRunsForRunTest = 4;

struct DiffOptions {
  double threshold_pct = 10;   // slower by more than this share of the item's base time
  double min_impact_pct = 1;   // and by at least this share of the base total
  double alpha = 0.05;         // significance level of the test
  bool normalize = true;       // judge changes beyond the common speed factor (DiffResult::speed_factor)
};

enum class DiffStatus { kMatched, kAdded, kRemoved };

struct DiffItem {
  uint8_t level = 0;
  std::string name, shapes, module;
  DiffStatus status = DiffStatus::kMatched;
  double base_ns = 0, new_ns = 0;        // median over runs of the item's total time per run
  double base_count = 0, new_count = 0;  // median instances per run
  double base_alloc = 0, new_alloc = 0;  // median allocated bytes per run
  double delta_ns = 0;                   // new_ns - base_ns
  double delta_pct = 0;                  // of base_ns (0 when base_ns is 0)
  double impact_pct = 0;                 // delta_ns as a share of the base total
  double excess_ns = 0;                  // new_ns - base_ns x speed_factor
  double excess_pct = 0;                 // excess_ns as a share of base_ns x speed_factor
  double p_value = 1;
  bool run_test = false;                 // p from per-run totals (else per-instance durations)
  bool significant = false;
  bool regression = false;
};

struct DiffResult {
  int base_runs = 0, new_runs = 0;
  double base_total_ns = 0, new_total_ns = 0;
  uint8_t total_level = 0;         // the level whose spans make the total
  double speed_factor = 1;         // how much slower everything in NEW ran (1: normalize off)
  std::vector<DiffItem> items;     // total-level items, then by |excess_ns| descending
  bool has_regression = false;
  std::vector<std::string> notes;  // what the comparison could not do (one run: no test, ...)
};

DiffResult diff_traces(const trace::Trace& base, const trace::Trace& next, const DiffOptions& options);

// The top items (model-level totals first, then the others by impact) as a result table.
table::Table diff_table(const DiffResult& result, const DiffOptions& options, size_t top);

// The same as a Markdown comment for a pull request: a verdict line, the totals, the table.
std::string diff_markdown(const DiffResult& result, const DiffOptions& options, size_t top);

}  // namespace strata::analysis
