// A model's lower bounds loaded from the performance database, and the lower-bound analyses run over
// a trace: shared by `strata lowerbound MODEL --trace RUN` and `strata report RUN --model MODEL`
// (the report's lower-bound section is the same framework_vs_bound tables, computed here because the
// report module sits beside lowerbound, not above it).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/analysis.h"
#include "cli/lowerbound_options.h"
#include "lowerbound/bounds/bound_inputs.h"
#include "lowerbound/bounds/estimate.h"
#include "trace/trace.h"

namespace strata::cli {

struct LoadedBound {
  lowerbound::BoundRequest request;                  // from the options (first --dtype/--layout: the main)
  lowerbound::BoundInputs inputs;                    // the model and this system's database rows
  std::vector<lowerbound::ModelEstimate> estimates;  // [0]: the main bound; [1]: fused (--fusion)
};

// Loads opt.models[0] and the database and estimates its bounds; warns on stderr
// ("strata COMMAND: warning: ...") about layers the bound leaves out and untrusted rows. False with one
// error line when the model or the database cannot be read, or no layer has a measurement.
bool load_bound(std::string_view command, const CommandOptions& opt, LoadedBound* out, std::string* error);

// Runs the named lower-bound analyses (lowerbound::kBoundAnalyses) over one trace, against the main
// bound, over one span tree and workload view. A result lacking input keeps its missing_input line.
std::vector<std::pair<std::string_view, analysis::AnalysisResult>> run_bound_analyses(
    const trace::Trace& trace, const LoadedBound& bound, size_t top, std::span<const std::string_view> names);

}  // namespace strata::cli
