#include "analysis/analysis_util.h"

#include <algorithm>
#include <string>

namespace strata::analysis {

namespace {
double numeric_value(const Cell& c) {
  if (const auto* d = std::get_if<double>(&c.value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&c.value)) return static_cast<double>(*i);
  return -1e300;
}
}  // namespace

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

}  // namespace strata::analysis
