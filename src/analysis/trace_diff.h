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
// An item is a regression when it is significant (p < alpha), slower by more than threshold_pct of
// its own base time, and its slowdown is at least min_impact_pct of the base total (the median
// per-run time of the model-level spans, or of the shallowest level when the traces have no model level).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/trace.h"
#include "table/table.h"

namespace strata::analysis {

inline constexpr int kMinRunsForRunTest = 4;

struct DiffOptions {
  double threshold_pct = 10;   // slower by more than this share of the item's base time
  double min_impact_pct = 1;   // and by at least this share of the base total
  double alpha = 0.05;         // significance level of the test
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
  double p_value = 1;
  bool run_test = false;                 // p from per-run totals (else per-instance durations)
  bool significant = false;
  bool regression = false;
};

struct DiffResult {
  int base_runs = 0, new_runs = 0;
  double base_total_ns = 0, new_total_ns = 0;
  uint8_t total_level = 0;         // the level whose spans make the total
  std::vector<DiffItem> items;     // by |impact| descending (model-level items included)
  bool has_regression = false;
  std::vector<std::string> notes;  // what the comparison could not do (one run: no test, ...)
};

DiffResult diff_traces(const model::Trace& base, const model::Trace& next, const DiffOptions& options);

// The top items (model-level totals first, then the others by impact) as a result table.
table::Table diff_table(const DiffResult& result, const DiffOptions& options, size_t top);

// The same as a Markdown comment for a pull request: a verdict line, the totals, the table.
std::string diff_markdown(const DiffResult& result, const DiffOptions& options, size_t top);

}  // namespace strata::analysis
