// `strata report`: one self-contained HTML file (docs/report.md). The report is a view of the
// analyses' tables (src/analysis registry, run through the same pipeline as `strata analyze`) and of
// the CPU profile's folded stacks (src/profile): it embeds those tables as JSON, the ECharts library
// and its own script, and draws every chart in the browser from the embedded tables. Nothing is
// recomputed here: the page leads with `strata summary`'s JSON (the same library calls as that
// command), then the analyses that have data. No span is embedded but those of one representative
// step (its timeline, at most max_timeline_spans): tables are aggregates, a table longer than
// max_rows is cut (with a note), and the flame graph keeps the frames above a share of the samples.
#pragma once

#include <cstddef>
#include <optional>
#include <ostream>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/analysis.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::report {

struct ReportOptions {
  std::vector<std::string> inputs;  // the file names shown in the overview
  std::string title;                // "" : "Strata report: <first input>"
  std::string generator;            // e.g. "strata 0.9.0", shown in the footer
  analysis::Params params;          // --param KEY=VALUE, passed to every analysis
  size_t max_rows = 5000;           // rows of one table embedded at most (the rest: a note)
  size_t max_flame_nodes = 4000;    // flame-graph frames embedded at most
  double min_flame_share = 0.0005;  // frames under this share of the samples are folded away
  size_t max_timeline_spans = 3000;  // spans of the representative step's timeline (shallowest first)
  // The run against its model's lower bounds: framework_vs_bound's tables (`strata lowerbound MODEL
  // --trace RUN`), computed by the caller (report sits beside lowerbound, not above it). Unset: the
  // section says how to get it (--model).
  std::optional<table::Result> lower_bound;
};

// The name the lower-bound section's tables are embedded under (the analysis that makes them).
inline constexpr std::string_view kLowerBoundAnalysis = "framework_vs_bound";

// The analyses the report shows, in its order (each one a section or part of one).
std::span<const std::string_view> report_analyses();

// True when this build embeds ECharts (report/node_modules was installed when it was built).
bool have_echarts();

// The page's Content-Security-Policy: no network, no script but these two (by their SHA-256), no
// inline handler, form or base URL. The scripts are the exact text of their <script> elements.
std::string content_security_policy(std::string_view echarts_script, std::string_view app_script);

// Writes the HTML document. False with one line in *error when the report cannot be made (this
// build has no ECharts). Sections whose analysis lacks input say what to record instead.
bool write_report(const trace::Trace& trace, const ReportOptions& options, std::ostream& out,
                  std::string* error);

}  // namespace strata::report
