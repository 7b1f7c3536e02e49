// `strata diff` rendered (analysis/trace_diff.h, docs/diff.md): as tables (text, CSV, JSON; the text
// ends with the verdict line) or as markdown for a pull-request comment (the verdict, the totals line,
// the top changes, the verdict line). Every string from a trace is escaped for its medium: the
// terminal escapes of text_escape.h on the text table and in markdown, where the characters markdown
// or HTML read as syntax are escaped too, so a crafted op name renders as its own text.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <string_view>

#include "analysis/trace_diff.h"

namespace strata::exporter {

enum class DiffFormat { kTable, kCsv, kJson, kMarkdown };
bool parse_diff_format(std::string_view text, DiffFormat* out);

// At most `top` rows in every table.
void render_diff(const analysis::DiffResult& result, size_t top, DiffFormat format, std::ostream& out);

// Text from a trace in a markdown document (a table cell or a line): terminal-safe, with markdown's
// syntax characters backslash-escaped and &, <, > written as HTML entities.
std::string markdown_text(std::string_view text);

}  // namespace strata::exporter
