// Renders analysis tables as aligned text, CSV, or JSON.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "analysis/analysis.h"

namespace strata::exporter {

enum class TableFormat { kText, kCsv, kJson };
bool parse_table_format(std::string_view text, TableFormat* out);

void render_table(const analysis::Table& table, TableFormat format, std::ostream& out);
// Several tables: text prints them one after another; CSV separates them by a "# name" line;
// JSON writes {"name": {"title":..,"columns":[..],"rows":[[..]..],"notes":[..]}, ...}.
void render_tables(std::span<const analysis::Table> tables, TableFormat format, std::ostream& out);
std::string format_cell(const analysis::Cell& cell);

}  // namespace strata::exporter
