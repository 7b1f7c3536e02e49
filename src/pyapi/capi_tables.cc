// The analysis side of the C API: the registered analyses run as `strata analyze --analysis NAME`
// runs them (the same registry, parameter checks and pipeline), their tables handed over column by
// column with each column's type, so a DataFrame gets numbers as numbers.
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <string>
#include <variant>

#include "analysis/analysis.h"
#include "analysis/pipeline.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "pyapi/capi.h"
#include "pyapi/capi_internal.h"

namespace strata::pyapi {
namespace {

enum ColumnType { kEmpty = 0, kInts = 1, kReals = 2, kText = 3 };

const table::Cell* cell_at(const table::Table& t, uint64_t row, uint64_t c) {
  // A short row (a producer that leaves trailing cells out) reads as empty cells, as CSV shows it.
  return c < t.rows[row].size() ? &t.rows[row][c] : nullptr;
}

int column_type(const table::Table& t, uint64_t c) {
  int type = kEmpty;
  for (uint64_t r = 0; r < t.rows.size(); ++r) {
    const table::Cell* cell = cell_at(t, r, c);
    if (cell == nullptr || std::holds_alternative<std::monostate>(cell->value)) continue;
    if (std::holds_alternative<std::string>(cell->value)) return kText;
    type = std::max(type, std::holds_alternative<int64_t>(cell->value) ? int{kInts} : int{kReals});
  }
  return type;
}

const table::Table* table_at(const strata_capi_tables* tables, uint64_t t) {
  return t < tables->tables.size() ? &tables->tables[t] : nullptr;
}

std::string analyses_json() {
  std::string out = "[";
  for (const auto& a : analysis::all_analyses()) {
    out += "{\"name\":";
    exporter::append_json_string(&out, a->name());
    out += ",\"description\":";
    exporter::append_json_string(&out, a->description());
    out += ",\"params\":[";
    bool first = true;
    for (std::string_view key : a->param_keys()) {
      if (!first) out += ',';
      first = false;
      exporter::append_json_string(&out, key);
    }
    out += "]},";
  }
  if (out.back() == ',') out.pop_back();
  out += ']';
  return out;
}

std::unique_ptr<strata_capi_tables> run_one(const model::Trace& trace, const char* name,
                                            const char* const* keys, const char* const* values, size_t n) {
  const analysis::Analysis* chosen = analysis::find_analysis(name);
  if (chosen == nullptr) {
    set_error(std::string("unknown analysis '") + name + "' (strata.analyses() names them)");
    return nullptr;
  }
  analysis::Params params;
  for (size_t i = 0; i < n; ++i) params.set(keys[i], values[i]);
  if (auto bad = analysis::validate_params(params)) {
    set_error(*bad);
    return nullptr;
  }
  const analysis::Analysis* const list[] = {chosen};
  analysis::ParamKeyCheck check = analysis::check_param_keys(params, list);
  if (check.error) {
    set_error(*check.error);
    return nullptr;
  }
  analysis::PipelineResult pipeline = analysis::run_pipeline(trace, list, params);
  auto out = std::make_unique<strata_capi_tables>();
  for (auto& [a, result] : pipeline.results) {
    if (result.missing_input) {
      out->missing_input = std::string(a->name()) + ": " + *result.missing_input;
      continue;
    }
    for (auto& table : result.tables) out->tables.push_back(std::move(table));
  }
  for (const table::Table& t : out->tables) {
    StringColumn& columns = out->columns.emplace_back();
    for (const std::string& column : t.columns) columns.add(column);
    std::string notes;
    for (const std::string& note : t.notes) notes += (notes.empty() ? "" : "\n") + note;
    out->notes.push_back(std::move(notes));
  }
  return out;
}

}  // namespace
}  // namespace strata::pyapi

using strata::pyapi::set_error;
using strata::pyapi::table_at;

extern "C" {

const char* strata_capi_analyses_json(void) {
  static const std::string json = strata::pyapi::analyses_json();
  return json.c_str();
}

strata_capi_tables* strata_capi_run_analysis(const strata_capi_trace* trace, const char* name,
                                             const char* const* keys, const char* const* values, size_t n) {
  strata::pyapi::clear_error();
  try {
    return strata::pyapi::run_one(trace->trace, name, keys, values, n).release();
  } catch (const std::exception& e) {
    set_error(std::string(name) + ": " + e.what());
    return nullptr;
  }
}

void strata_capi_tables_free(strata_capi_tables* tables) { delete tables; }
const char* strata_capi_missing_input(const strata_capi_tables* tables) {
  return tables->missing_input.c_str();
}

uint64_t strata_capi_table_count(const strata_capi_tables* tables) { return tables->tables.size(); }

const char* strata_capi_table_name(const strata_capi_tables* tables, uint64_t t) {
  const auto* table = table_at(tables, t);
  return table ? table->name.c_str() : "";
}

const char* strata_capi_table_title(const strata_capi_tables* tables, uint64_t t) {
  const auto* table = table_at(tables, t);
  return table ? table->title.c_str() : "";
}

const char* strata_capi_table_notes(const strata_capi_tables* tables, uint64_t t) {
  return t < tables->notes.size() ? tables->notes[t].c_str() : "";
}

strata_capi_strings strata_capi_table_columns(const strata_capi_tables* tables, uint64_t t) {
  static const strata::pyapi::StringColumn none;
  return t < tables->columns.size() ? tables->columns[t].view() : none.view();
}

uint64_t strata_capi_table_rows(const strata_capi_tables* tables, uint64_t t) {
  const auto* table = table_at(tables, t);
  return table ? table->rows.size() : 0;
}

int strata_capi_column_type(const strata_capi_tables* tables, uint64_t t, uint64_t c) {
  const auto* table = table_at(tables, t);
  return table ? strata::pyapi::column_type(*table, c) : -1;
}

int strata_capi_column_ints(const strata_capi_tables* tables, uint64_t t, uint64_t c, int64_t* values,
                            uint8_t* present) {
  const auto* table = table_at(tables, t);
  if (!table) return 0;
  for (uint64_t r = 0; r < table->rows.size(); ++r) {
    const strata::table::Cell* cell = strata::pyapi::cell_at(*table, r, c);
    const int64_t* v = cell ? std::get_if<int64_t>(&cell->value) : nullptr;
    values[r] = v ? *v : 0;
    present[r] = v ? 1 : 0;
  }
  return 1;
}

int strata_capi_column_reals(const strata_capi_tables* tables, uint64_t t, uint64_t c, double* values) {
  const auto* table = table_at(tables, t);
  if (!table) return 0;
  for (uint64_t r = 0; r < table->rows.size(); ++r) {
    const strata::table::Cell* cell = strata::pyapi::cell_at(*table, r, c);
    double v = std::numeric_limits<double>::quiet_NaN();
    if (cell) {
      if (const auto* i = std::get_if<int64_t>(&cell->value)) v = static_cast<double>(*i);
      if (const auto* d = std::get_if<double>(&cell->value)) v = *d;
    }
    values[r] = v;
  }
  return 1;
}

strata_capi_strings strata_capi_column_text(strata_capi_tables* tables, uint64_t t, uint64_t c) {
  tables->text = {};
  if (const auto* table = table_at(tables, t))
    for (uint64_t r = 0; r < table->rows.size(); ++r) {
      const strata::table::Cell* cell = strata::pyapi::cell_at(*table, r, c);
      tables->text.add(cell ? strata::exporter::format_cell(*cell) : std::string());
    }
  return tables->text.view();
}

}  // extern "C"
