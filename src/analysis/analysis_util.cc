#include "analysis/analysis_util.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace strata::analysis {

namespace {
double numeric_value(const Cell& c) {
  if (const auto* d = std::get_if<double>(&c.value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&c.value)) return static_cast<double>(*i);
  return -1e300;
}
}  // namespace

int64_t union_ns(std::vector<std::pair<int64_t, int64_t>>& intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t covered = 0, reach = INT64_MIN;
  for (auto [start, end] : intervals) {
    start = std::max(start, reach);
    if (end > start) covered += end - start, reach = end;
  }
  return covered;
}

void sort_rows_desc(Table* table, size_t column) {
  std::stable_sort(table->rows.begin(), table->rows.end(), [column](const auto& a, const auto& b) {
    return numeric_value(a[column]) > numeric_value(b[column]);
  });
}

void keep_top(Table* table, const Params& params, int64_t default_top) {
  int64_t top = params.get_int("top", default_top);
  if (top > 0 && table->rows.size() > static_cast<size_t>(top)) {
    table->notes.push_back("top " + std::to_string(top) + " of " + std::to_string(table->rows.size()) +
                           " rows (--param top=0 shows all)");
    table->rows.resize(static_cast<size_t>(top));
  }
}

void keep_largest(Table* table, const Params& params, size_t column) {
  int64_t top = params.get_int("top", 0);
  if (top <= 0 || table->rows.size() <= static_cast<size_t>(top)) return;
  std::vector<size_t> order(table->rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return numeric_value(table->rows[a][column]) > numeric_value(table->rows[b][column]);
  });
  std::vector<bool> keep(table->rows.size(), false);
  for (size_t k = 0; k < static_cast<size_t>(top); ++k) keep[order[k]] = true;
  std::vector<std::vector<Cell>> rows;
  for (size_t i = 0; i < table->rows.size(); ++i)
    if (keep[i]) rows.push_back(std::move(table->rows[i]));
  table->notes.push_back("the " + std::to_string(top) + " of " + std::to_string(table->rows.size()) +
                         " rows with the largest " + table->columns[column] + " (--param top=0 shows all)");
  table->rows = std::move(rows);
}

}  // namespace strata::analysis
