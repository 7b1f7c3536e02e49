// Runs one analysis on an in-memory trace and reads cells by column name, for the known-answer tests.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <variant>

#include "analysis/analysis.h"
#include "trace/span_tree.h"

namespace strata::testing {

struct AnalysisRun {
  analysis::AnalysisResult result;
  const analysis::Table& table(size_t i = 0) const { return result.tables.at(i); }
};

inline AnalysisRun run_analysis(const trace::Trace& trace, std::string_view name,
                                std::initializer_list<std::pair<const char*, const char*>> params = {}) {
  const analysis::Analysis* a = analysis::find_analysis(name);
  EXPECT_NE(a, nullptr) << name;
  analysis::Params p;
  for (auto [k, v] : params) p.set(k, v);
  trace::SpanTree tree = trace::build_span_tree(trace);
  analysis::AnalysisInput input{trace, tree, p};
  return AnalysisRun{a->run(input)};
}

inline size_t column(const analysis::Table& t, std::string_view name) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == name) return c;
  ADD_FAILURE() << "no column " << name << " in " << t.name;
  return 0;
}

inline double num(const analysis::Table& t, size_t row, std::string_view col) {
  const auto& cell = t.rows.at(row).at(column(t, col));
  if (const auto* d = std::get_if<double>(&cell.value)) return *d;
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return static_cast<double>(*i);
  ADD_FAILURE() << t.name << " row " << row << " column " << col << " is not numeric";
  return -1;
}

inline std::string text(const analysis::Table& t, size_t row, std::string_view col) {
  const auto& cell = t.rows.at(row).at(column(t, col));
  if (const auto* s = std::get_if<std::string>(&cell.value)) return *s;
  if (std::holds_alternative<std::monostate>(cell.value)) return "";
  ADD_FAILURE() << t.name << " row " << row << " column " << col << " is not text";
  return "";
}

// Whether one of the table's notes contains `text`.
inline bool has_note(const analysis::Table& t, std::string_view text) {
  for (const std::string& n : t.notes)
    if (n.find(text) != std::string::npos) return true;
  return false;
}

// Row whose column `col` has text `value`.
inline size_t row_where(const analysis::Table& t, std::string_view col, std::string_view value) {
  for (size_t r = 0; r < t.rows.size(); ++r)
    if (text(t, r, col) == value) return r;
  ADD_FAILURE() << "no row with " << col << " = " << value << " in " << t.name;
  return 0;
}

}  // namespace strata::testing
