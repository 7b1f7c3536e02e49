// Renders result tables (table/) as aligned text, CSV, or JSON.
#pragma once

#include <ostream>
#include <span>
#include <string_view>

#include "table/table.h"

namespace strata::exporter {

enum class TableFormat { kText, kCsv, kJson };
bool parse_table_format(std::string_view text, TableFormat* out);

void render_table(const table::Table& table, TableFormat format, std::ostream& out);
// Several tables: text prints them one after another; CSV separates them by a "# name" line;
// JSON writes {"name": {"title":..,"columns":[..],"rows":[[..]..],"notes":[..]}, ...}.
void render_tables(std::span<const table::Table> tables, TableFormat format, std::ostream& out);
std::string format_cell(const table::Cell& cell);

}  // namespace strata::exporter
