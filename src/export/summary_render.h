// `strata summary` rendered: a one-screen table, JSON (the contract, docs/summary.md) or markdown, and
// the three-line short form `strata record` prints. Every string from the trace is escaped for its
// medium: JSON string escapes; on the terminal and in markdown the terminal escapes of text_escape.h
// (markdown also escapes its table and emphasis characters).
#pragma once

#include <ostream>
#include <string>

#include "analysis/run_summary.h"

namespace strata::exporter {

enum class SummaryFormat { kTable, kJson, kMarkdown };
bool parse_summary_format(std::string_view text, SummaryFormat* format);

void render_summary(const trace::Trace& trace, const analysis::RunSummary& summary, SummaryFormat format,
                    std::ostream& out);
// Three lines, each starting "strata: ": what ran, where the step time goes, the verdict.
std::string short_summary(const trace::Trace& trace, const analysis::RunSummary& summary);

}  // namespace strata::exporter
