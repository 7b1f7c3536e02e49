#include <cstdio>

#include "analysis/workload.h"
#include "cli/lowerbound_compare.h"
#include "export/text_escape.h"
#include "lowerbound/analyses/lowerbound_analyses.h"
#include "trace/span_tree.h"

namespace strata::cli {

namespace lb = strata::lowerbound;

namespace {

lb::BoundRequest bound_request(const CommandOptions& opt) {
  lb::BoundRequest request;
  request.onnx_path = opt.models[0];
  request.db_url = opt.db_url;
  request.backend = opt.bench.backend;
  request.system_tag = opt.bench.system_tag;
  request.threads = opt.measure.threads;
  request.dtype = opt.bench.dtypes[0];
  request.layout = opt.bench.layouts[0];
  request.fusion = opt.bench.fusion;
  return request;
}

// The layers the bound leaves out, with the command that fills them.
void warn_missing(std::string_view command, const CommandOptions& opt, const lb::BoundInputs& in,
                  const lb::ModelEstimate& main) {
  const std::string& dtype = opt.bench.dtypes[0];
  const std::string& layout = opt.bench.layouts[0];
  const std::string tag = opt.bench.system_tag.empty() ? "" : " --system-tag " + opt.bench.system_tag;
  if (main.missing > 0)
    std::fprintf(
        stderr,
        "strata %.*s: warning: %llu of %zu layers have no measurement for this system (%s, %s) in %s; the "
        "bound leaves them out. Fill them with: strata bench run %s --db %s --dtype %s --layout %s%s%s\n",
        static_cast<int>(command.size()), command.data(), static_cast<unsigned long long>(main.missing),
        in.model.layers.size(), dtype.c_str(), layout.c_str(), in.db_description.c_str(),
        in.model.path.c_str(), in.db_description.c_str(), join(opt.bench.dtypes, ",").c_str(), layout.c_str(),
        opt.bench.fusion ? " --fusion" : "", tag.c_str());
  if (main.unsupported > 0)
    std::fprintf(stderr,
                 "strata %.*s: warning: %llu layers have no benchmark (operator without a library-call "
                 "mapping, or no implementation in the library): they count 0 in the bound; `strata "
                 "lowerbound --layers` lists them\n",
                 static_cast<int>(command.size()), command.data(),
                 static_cast<unsigned long long>(main.unsupported));
}

}  // namespace

bool load_bound(std::string_view command, const CommandOptions& opt, LoadedBound* out, std::string* error) {
  out->request = bound_request(opt);
  if (!lb::load_bound_inputs(out->request, &out->inputs, error)) return false;
  const std::string& dtype = opt.bench.dtypes[0];
  const std::string& layout = opt.bench.layouts[0];
  const lb::BoundInputs& in = out->inputs;
  out->estimates.push_back(lb::estimate_model(in.model, in.index, dtype, layout, false));
  if (opt.bench.fusion) out->estimates.push_back(lb::estimate_model(in.model, in.index, dtype, layout, true));
  const lb::ModelEstimate& main = out->estimates[0];
  if (std::string none = lb::no_measurement_error(out->request, in, main); !none.empty()) {
    *error = none;
    return false;
  }
  warn_missing(command, opt, in, main);
  if (std::string w = lb::untrusted_rows_warning(out->request, in, main); !w.empty())
    std::fprintf(stderr, "strata %.*s: warning: %s\n", static_cast<int>(command.size()), command.data(),
                 exporter::escape_terminal(w).c_str());
  return true;
}

std::vector<std::pair<std::string_view, analysis::AnalysisResult>> run_bound_analyses(
    const trace::Trace& trace, const LoadedBound& bound, size_t top,
    std::span<const std::string_view> names) {
  const trace::SpanTree& tree = trace.tree();  // built once, when the trace was opened
  const analysis::Workload workload(trace, tree);
  const analysis::Params params;
  const analysis::AnalysisInput input{trace, tree, params, &workload};
  const lb::BoundContext context{&bound.inputs.model, &bound.estimates[0], top};
  std::vector<std::pair<std::string_view, analysis::AnalysisResult>> results;
  for (std::string_view name : names)
    if (const lb::BoundAnalysis* analysis = lb::find_bound_analysis(name))
      results.emplace_back(name, analysis->run_bound(input, context));
  return results;
}

}  // namespace strata::cli
