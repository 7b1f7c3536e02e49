// Small helpers shared by the analyses: table construction, missing-input messages, and summing
// values per key and evaluation before summarizing across evaluations.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/stats.h"
#include "analysis/workload.h"

namespace strata::analysis {

inline constexpr const char* kNeedModel =
    "no model-level spans in the trace: record with --level model or deeper (mark each prediction with "
    "strata.span(\"predict\", level=\"model\", batch=N))";
inline constexpr const char* kNeedLayer =
    "no layer-level spans in the trace: record with --level layer (strata record --level layer -- CMD) or "
    "import "
    "a framework profile with strata import";
inline constexpr const char* kNeedKernel =
    "no device activity or library calls in the trace: record with --level device (GPU) or --level library "
    "(oneDNN on CPU), or import a Kineto GPU trace";

inline AnalysisResult missing(const char* why) {
  AnalysisResult r;
  r.missing_input = why;
  return r;
}

inline Table make_table(std::string name, std::string title, std::vector<std::string> columns) {
  Table t;
  t.name = std::move(name);
  t.title = std::move(title);
  t.columns = std::move(columns);
  return t;
}

inline Cell real_or_empty(const std::optional<double>& v, int precision = 3) {
  return v ? Cell::real(*v, precision) : Cell::empty();
}

// Values summed per (key, evaluation), then summarized per key across evaluations. A key absent
// from an evaluation contributes 0 there: an op that did not run took no time.
template <typename Key>
class AcrossEvaluations {
 public:
  explicit AcrossEvaluations(size_t evaluations) : evaluations_(evaluations) {}
  void add(const Key& key, size_t evaluation, double value) {
    auto [it, inserted] = cells_.try_emplace(key);
    if (inserted) it->second.assign(evaluations_, 0.0);
    it->second[evaluation] += value;
  }
  const std::map<Key, std::vector<double>>& cells() const { return cells_; }
  Summary summary(const Key& key, double trim) const {
    auto it = cells_.find(key);
    return it == cells_.end() ? Summary{} : summarize(it->second, trim);
  }

 private:
  size_t evaluations_;
  std::map<Key, std::vector<double>> cells_;
};

// Notes every analysis adds: the statistic used and any bad --param values.
inline void add_common_notes(Table* table, const std::vector<std::string>& notes,
                             const std::string& param_error) {
  for (const auto& n : notes) table->notes.push_back(n);
  if (!param_error.empty()) table->notes.push_back(param_error);
}

// Length of the union of [start, end) intervals (sorted in place): the time at least one ran.
int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& intervals);

// Rows sorted by a numeric column, descending, and cut to --param top=N (0: all).
void sort_rows_desc(Table* table, size_t column);
void keep_top(Table* table, const Params& params, int64_t default_top);
// --param top=N (default all) on a table kept in its own order (layers in execution order): the N
// rows with the largest value in `column`, in their original order.
void keep_largest(Table* table, const Params& params, size_t column);

}  // namespace strata::analysis
