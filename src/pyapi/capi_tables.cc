// The analysis side of the C API: the registered analyses run as `strata analyze --analysis NAME`
// runs them (the same registry, parameter checks and pipeline), their tables handed over column by
// column with each column's type, so a DataFrame gets numbers as numbers.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/pipeline.h"
#include "analysis/rank_partials.h"
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

// The --param values for `chosen`, checked as `strata analyze` checks them; false with the error set.
bool checked_params(const analysis::Analysis* chosen, const char* const* keys, const char* const* values,
                    size_t n, analysis::Params* params) {
  for (size_t i = 0; i < n; ++i) params->set(keys[i], values[i]);
  if (auto bad = analysis::validate_params(*params)) {
    set_error(*bad);
    return false;
  }
  const analysis::Analysis* const list[] = {chosen};
  analysis::ParamKeyCheck check = analysis::check_param_keys(*params, list);
  if (check.error) {
    set_error(*check.error);
    return false;
  }
  return true;
}

const analysis::Analysis* find_or_error(const char* name) {
  const analysis::Analysis* chosen = analysis::find_analysis(name);
  if (chosen == nullptr)
    set_error(std::string("unknown analysis '") + name + "' (strata.analyses() names them)");
  return chosen;
}

void add_result(strata_capi_tables* out, std::string_view name, analysis::AnalysisResult result) {
  if (result.missing_input) {
    out->missing_input = std::string(name) + ": " + *result.missing_input;
    return;
  }
  for (auto& table : result.tables) out->tables.push_back(std::move(table));
}

void index_columns(strata_capi_tables* out) {
  for (const table::Table& t : out->tables) {
    StringColumn& columns = out->columns.emplace_back();
    for (const std::string& column : t.columns) columns.add(column);
    std::string notes;
    for (const std::string& note : t.notes) notes += (notes.empty() ? "" : "\n") + note;
    out->notes.push_back(std::move(notes));
  }
}

std::unique_ptr<strata_capi_tables> run_one(const trace::Trace& trace, const char* name,
                                            const char* const* keys, const char* const* values, size_t n) {
  const analysis::Analysis* chosen = find_or_error(name);
  analysis::Params params;
  if (chosen == nullptr || !checked_params(chosen, keys, values, n, &params)) return nullptr;
  const analysis::Analysis* const list[] = {chosen};
  analysis::PipelineResult pipeline = analysis::run_pipeline(trace, list, params);
  auto out = std::make_unique<strata_capi_tables>();
  for (auto& [a, result] : pipeline.results) add_result(out.get(), a->name(), std::move(result));
  index_columns(out.get());
  return out;
}

const analysis::RankPartial* partial_or_error(const char* name) {
  const analysis::RankPartial* split = analysis::find_rank_partial(name);
  if (split == nullptr)
    set_error(std::string(name) + " has no per-rank partial (ship the rank's trace: strata_capi_save)");
  return split;
}

std::unique_ptr<strata_capi_tables> combine(const char* name, const char* const* partials,
                                            const uint64_t* sizes, size_t n_partials, const char* const* keys,
                                            const char* const* values, size_t n) {
  const analysis::Analysis* chosen = find_or_error(name);
  const analysis::RankPartial* split = chosen ? partial_or_error(name) : nullptr;
  analysis::Params params;
  if (split == nullptr || !checked_params(chosen, keys, values, n, &params)) return nullptr;
  std::vector<std::string_view> views;
  for (size_t i = 0; i < n_partials; ++i) views.emplace_back(partials[i], sizes[i]);
  auto out = std::make_unique<strata_capi_tables>();
  add_result(out.get(), chosen->name(), split->combine(views, params));
  index_columns(out.get());
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

int strata_capi_rank_partial(const strata_capi_trace* trace, const char* name, const char* const* keys,
                             const char* const* values, size_t n, char** data, uint64_t* size) {
  strata::pyapi::clear_error();
  try {
    const strata::analysis::Analysis* chosen = strata::pyapi::find_or_error(name);
    const strata::analysis::RankPartial* split = chosen ? strata::pyapi::partial_or_error(name) : nullptr;
    strata::analysis::Params params;
    if (split == nullptr || !strata::pyapi::checked_params(chosen, keys, values, n, &params)) return 0;
    const std::string bytes = split->partial(trace->trace, params);
    // malloc, not new: the caller frees it with strata_capi_buffer_free from any thread.
    *data = static_cast<char*>(std::malloc(bytes.size() + 1));
    if (*data == nullptr) throw std::bad_alloc();
    std::memcpy(*data, bytes.data(), bytes.size());
    *size = bytes.size();
    return 1;
  } catch (const std::exception& e) {
    set_error(std::string(name) + ": " + e.what());
    return 0;
  }
}

void strata_capi_buffer_free(char* data) { std::free(data); }

strata_capi_tables* strata_capi_combine_partials(const char* name, const char* const* partials,
                                                 const uint64_t* sizes, size_t n_partials,
                                                 const char* const* keys, const char* const* values,
                                                 size_t n) {
  strata::pyapi::clear_error();
  try {
    return strata::pyapi::combine(name, partials, sizes, n_partials, keys, values, n).release();
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
