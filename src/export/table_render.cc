#include "export/table_render.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "export/shorten.h"
#include "export/text_escape.h"

namespace strata::exporter {

bool parse_table_format(std::string_view text, TableFormat* out) {
  if (text == "table" || text == "text") *out = TableFormat::kText;
  else if (text == "csv") *out = TableFormat::kCsv;
  else if (text == "json") *out = TableFormat::kJson;
  else return false;
  return true;
}

std::string format_cell(const table::Cell& cell) {
  if (const auto* s = std::get_if<std::string>(&cell.value)) return *s;
  if (const auto* i = std::get_if<int64_t>(&cell.value)) return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&cell.value)) {
    if (std::isnan(*d)) return "nan";
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.*f", cell.precision, *d);
    return buf;
  }
  return "";
}

namespace {

constexpr size_t kMaxTextCell = 60;  // widest cell of the aligned text table

bool numeric(const table::Cell& c) {
  return std::holds_alternative<int64_t>(c.value) || std::holds_alternative<double>(c.value);
}

// Text tables go to a terminal: every string from the trace is escaped (escape_terminal).
void render_text(const table::Table& t, std::ostream& out) {
  std::vector<size_t> width(t.columns.size(), 0);
  for (size_t c = 0; c < t.columns.size(); ++c) width[c] = escape_terminal(t.columns[c]).size();
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : t.rows) {
    cells.emplace_back();
    for (size_t c = 0; c < row.size() && c < width.size(); ++c)
      cells.back().push_back(escape_terminal(format_cell(row[c])));
  }
  // Long names shortened per column so that different names never read the same (shorten.h).
  size_t shortened = 0;
  for (size_t c = 0; c < width.size(); ++c) {
    std::vector<std::string> column;
    for (const auto& row : cells) column.push_back(c < row.size() ? row[c] : std::string());
    size_t n = 0;
    column = shorten_column(column, kMaxTextCell, &n);
    shortened += n;
    for (size_t r = 0; r < cells.size(); ++r)
      if (c < cells[r].size()) {
        cells[r][c] = std::move(column[r]);
        width[c] = std::max(width[c], cells[r][c].size());
      }
  }
  out << "== " << escape_terminal(t.title) << " ==\n";
  std::string line;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    std::string h = escape_terminal(t.columns[c]);
    h.resize(width[c], ' ');
    line += (c ? "  " : "") + h;
  }
  out << line << "\n";
  for (size_t r = 0; r < cells.size(); ++r) {
    line.clear();
    for (size_t c = 0; c < cells[r].size(); ++c) {
      const std::string& v = cells[r][c];
      std::string pad(width[c] > v.size() ? width[c] - v.size() : 0, ' ');
      line += (c ? "  " : "") + (numeric(t.rows[r][c]) ? pad + v : v + pad);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out << line << "\n";
  }
  for (const auto& note : t.notes) out << "note: " << escape_terminal(note) << "\n";
  if (shortened)
    out << "note: " << shortened << " names longer than " << kMaxTextCell
        << " characters shortened in the middle; --format csv or json has them in full\n";
  out << "\n";
}

void render_csv(const table::Table& t, std::ostream& out) {
  std::string s;
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) s += ',';
    append_csv_field(&s, t.columns[c]);
  }
  s += '\n';
  for (const auto& row : t.rows) {
    for (size_t c = 0; c < row.size(); ++c) {
      if (c) s += ',';
      append_csv_field(&s, format_cell(row[c]));
    }
    s += '\n';
  }
  out << s;
}

void render_json_body(const table::Table& t, std::string* s) {
  *s += "{\"title\":";
  append_json_string(s, t.title);
  *s += ",\"columns\":[";
  for (size_t c = 0; c < t.columns.size(); ++c) {
    if (c) *s += ',';
    append_json_string(s, t.columns[c]);
  }
  *s += "],\"rows\":[";
  for (size_t r = 0; r < t.rows.size(); ++r) {
    if (r) *s += ",";
    *s += "\n[";
    for (size_t c = 0; c < t.rows[r].size(); ++c) {
      if (c) *s += ',';
      const auto& cell = t.rows[r][c];
      if (numeric(cell)) {
        std::string v = format_cell(cell);
        *s += (v == "nan" || v == "inf" || v == "-inf") ? "null" : v;
      } else if (std::holds_alternative<std::monostate>(cell.value)) {
        *s += "null";
      } else {
        append_json_string(s, format_cell(cell));
      }
    }
    *s += "]";
  }
  *s += "],\"notes\":[";
  for (size_t i = 0; i < t.notes.size(); ++i) {
    if (i) *s += ',';
    append_json_string(s, t.notes[i]);
  }
  *s += "]}";
}

}  // namespace

void render_table(const table::Table& table, TableFormat format, std::ostream& out) {
  render_tables(std::span<const table::Table>(&table, 1), format, out);
}

void render_tables(std::span<const table::Table> tables, TableFormat format, std::ostream& out) {
  if (format == TableFormat::kText) {
    for (const auto& t : tables) render_text(t, out);
  } else if (format == TableFormat::kCsv) {
    for (const auto& t : tables) {
      if (tables.size() > 1) out << "# " << t.name << "\n";
      render_csv(t, out);
    }
  } else {
    std::string s = "{";
    for (size_t i = 0; i < tables.size(); ++i) {
      if (i) s += ",\n";
      append_json_string(&s, tables[i].name);
      s += ":";
      render_json_body(tables[i], &s);
    }
    s += "}\n";
    out << s;
  }
}

}  // namespace strata::exporter
