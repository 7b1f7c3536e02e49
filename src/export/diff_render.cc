#include "export/diff_render.h"

#include <cstdio>
#include <vector>

#include "core/level.h"
#include "export/table_render.h"
#include "export/text_escape.h"

namespace strata::exporter {
namespace {

std::string fixed(double v, int digits, bool sign = false) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), sign ? "%+.*f" : "%.*f", digits, v);
  return buf;
}

std::string total_line(const char* what, const analysis::DiffTotal& t) {
  return std::string("**") + what + "**: " + fixed(t.base_ns / 1e6, 3) + " ms → " + fixed(t.new_ns / 1e6, 3) +
         " ms per step (" + fixed(t.change_pct, 1, true) + "%, interval " + fixed(t.change_low_pct, 1, true) +
         ".." + fixed(t.change_high_pct, 1, true) + "%), speed factor " + fixed(t.factor, 3) + ", " +
         fixed(t.excess_pct, 1, true) + "% beyond it; " + std::to_string(t.base_steps) + " against " +
         std::to_string(t.new_steps) + " steps";
}

void markdown_changes(const analysis::DiffResult& r, bool device, size_t top, std::ostream& out) {
  size_t rows = 0, items = 0;
  for (const analysis::DiffItem& i : r.items) items += i.device == device;
  if (items == 0 || top == 0) return;
  out << "\n| # | " << (device ? "device work" : "item") << " | shapes | change | base ms | new ms | "
      << (device ? "% of device time" : "% of step")
      << " | verdict |\n|---:|---|---|---|---:|---:|---:|---|\n";
  size_t rank = 0;
  for (const analysis::DiffItem& i : r.items) {
    if (i.device != device) continue;
    ++rank;
    if (rows++ >= top) break;
    const std::string shapes =
        i.status == analysis::DiffStatus::kShapeChanged ? i.shapes + " → " + i.new_shapes : i.shapes;
    out << "| " << rank << " | " << markdown_text(i.name)
        << (i.module.empty() ? "" : " (" + markdown_text(i.module) + ")") << " | " << markdown_text(shapes)
        << " | " << markdown_text(analysis::change_text(i)) << " | " << fixed(i.base_ns / 1e6, 3) << " | "
        << fixed(i.new_ns / 1e6, 3) << " | " << fixed(i.excess_pct, 1, true) << " | "
        << analysis::verdict_text(i) << " |\n";
  }
  if (items > top) out << "\n" << top << " of " << items << " shown.\n";
}

void render_markdown(const analysis::DiffResult& r, size_t top, std::ostream& out) {
  out << "### strata diff: "
      << (r.has_regression ? "REGRESSION"
          : r.undecided    ? "UNDECIDED"
                           : "no regression")
      << "\n\n";
  out << total_line("step time", r.step) << "\n";
  if (r.device.present) out << "\n" << total_line("device time", r.device) << "\n";
  markdown_changes(r, false, top, out);
  if (r.device.present) markdown_changes(r, true, top, out);
  out << "\n**Verdict**: " << markdown_text(r.verdict) << "\n";
}

}  // namespace

bool parse_diff_format(std::string_view text, DiffFormat* out) {
  if (text == "table")
    *out = DiffFormat::kTable;
  else if (text == "csv")
    *out = DiffFormat::kCsv;
  else if (text == "json")
    *out = DiffFormat::kJson;
  else if (text == "md" || text == "markdown")
    *out = DiffFormat::kMarkdown;
  else
    return false;
  return true;
}

std::string markdown_text(std::string_view text) {
  std::string out;
  for (char c : escape_terminal(text)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '#':
      case '|':
      case '~':
        out += '\\';
        out += c;
        break;
      default:
        out += c;
    }
  }
  return out;
}

void render_diff(const analysis::DiffResult& r, size_t top, DiffFormat format, std::ostream& out) {
  if (format == DiffFormat::kMarkdown) return render_markdown(r, top, out);
  std::vector<table::Table> tables = analysis::diff_tables(r, top);
  if (format == DiffFormat::kTable) {
    tables.pop_back();  // the verdict: its own line below
    render_tables(tables, TableFormat::kText, out);
    out << "\nverdict: " << escape_terminal(r.verdict) << "\n";
    return;
  }
  render_tables(tables, format == DiffFormat::kCsv ? TableFormat::kCsv : TableFormat::kJson, out);
}

}  // namespace strata::exporter
