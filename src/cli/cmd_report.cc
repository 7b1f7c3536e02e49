// strata report TRACE... -o report.html [--force] [--param KEY=VALUE ...] [--title TEXT] [--max-rows N]
//               [--model MODEL.onnx [--db URL --threads N --dtype --layout --fusion --top N ...]]
// One self-contained HTML file drawn from the analyses' tables (src/report; docs/report.md).
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "cli/version.h"
#include "report/report.h"
#ifdef STRATA_HAVE_LOWERBOUND
#include "cli/lowerbound_compare.h"
#include "cli/lowerbound_options.h"
#include "export/text_escape.h"
#endif

namespace strata::cli {

namespace {

#ifdef STRATA_HAVE_LOWERBOUND
// The options of `strata lowerbound` the report reads (--model instead of the MODEL positional).
constexpr unsigned kReportBoundOptions = kModelOption | kBenchOptions | kDbOptions | kTopOption;
constexpr const char* kBoundOptionNames[] = {"--db",    "--system-tag", "--threads", "--backend",
                                             "--dtype", "--layout",     "--fusion",  "--top"};

// --model: the lower bound loaded before the (possibly long) trace load, so a bad model or database
// stops the command early. 0 to go on, else the exit code.
int load_report_bound(CommandLine& cl, const CommandOptions& opt, LoadedBound* bound) {
  if (opt.models.empty()) {
    for (const char* name : kBoundOptionNames)
      if (cl.app().count(name) > 0)
        return cl.usage_error(std::string(name) +
                              " is an option of the lower-bound section: give --model MODEL.onnx");
    return 0;
  }
  if (opt.models.size() != 1) return cl.usage_error("give one --model MODEL.onnx (the model the trace ran)");
  std::string error;
  if (!check_inputs(opt.models, InputKind::kFile, &error)) return fail("report", error, 1);
  if (!load_bound("report", opt, bound, &error)) return fail("report", error, 1);
  return 0;
}

// framework_vs_bound over the loaded trace. A trace it cannot compare (no layer-level spans) keeps the
// reason in the section and says it on stderr; the rest of the report is still written.
table::Result report_bound(const trace::Trace& trace, const std::string& trace_name, const LoadedBound& bound,
                           size_t top) {
  constexpr std::string_view kNames[] = {report::kLowerBoundAnalysis};
  auto results = run_bound_analyses(trace, bound, top, kNames);
  if (results.empty()) {
    table::Result none;
    none.missing_input = "this strata has no framework_vs_bound analysis";
    return none;
  }
  table::Result r = std::move(results.front().second);
  if (r.missing_input)
    std::fprintf(stderr, "strata report: warning: %s: no lower-bound comparison: %s\n",
                 exporter::escape_terminal(trace_name).c_str(),
                 exporter::escape_terminal(*r.missing_input).c_str());
  for (const table::Table& t : r.tables)
    if (t.name == report::kLowerBoundAnalysis)
      for (const std::string& note : t.notes)
        if (note.rfind("warning: the sequential bound", 0) == 0 || note.rfind("warning: threads", 0) == 0)
          std::fprintf(stderr, "strata report: %s\n", exporter::escape_terminal(note).c_str());
  return r;
}
#endif

}  // namespace

int run_report(int argc, char** argv) {
  std::vector<std::string> inputs, param_texts;
  std::string output, title;
  int64_t max_rows = 5000;
  bool force = false;
  CommandLine cl(
      "report",
      "One self-contained HTML file with charts of the analyses (ECharts inlined; opens offline in "
      "any browser; docs/report.md). Several traces are one trace, as with `strata analyze` "
      "(repeated runs, or the ranks of a merged job). With --model (and the options of `strata "
      "lowerbound`), a section compares the run with the model's sequential and parallel lower bounds.");
  cl.app()
      .add_option("TRACE", inputs,
                  "any trace strata reads (native, Kineto/PyTorch JSON, Nsight Systems SQLite, ...)")
      ->required();
  cl.add_output(&output, "the HTML file")->required()->type_name("REPORT.html");
  cl.add_force(&force);
  cl.app()
      .add_option("-p,--param", param_texts,
                  "KEY=VALUE passed to the analyses, as with `strata analyze` (e.g. device=h100, trim=0.1)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  cl.app().add_option("--title", title, "the page's title (default: \"Strata report: TRACE\")");
  cl.app()
      .add_option("--max-rows", max_rows,
                  "rows of one table embedded at most (default 5000; the rest is left out with a note)")
      ->check(positive_count(10000000));
#ifdef STRATA_HAVE_LOWERBOUND
  CommandOptions bound_options;
  if (int code = parse_command_options(cl, argc, argv, kReportBoundOptions, &bound_options); code >= 0)
    return code;
#else
  if (int code = cl.parse(argc, argv); code >= 0) return code;
#endif
  analysis::Params params;
  for (const std::string& value : param_texts) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0)
      return cl.usage_error("--param needs KEY=VALUE, e.g. --param device=h100");
    params.set(value.substr(0, eq), value.substr(eq + 1));
  }
  report::ReportOptions options;
  options.max_rows = static_cast<size_t>(max_rows);
  if (auto bad = analysis::validate_params(params)) return fail("report", *bad);
  std::vector<const analysis::Analysis*> analyses;
  for (std::string_view name : report::report_analyses())
    if (const auto* a = analysis::find_analysis(name)) analyses.push_back(a);
  analysis::ParamKeyCheck keys = analysis::check_param_keys(params, analyses);
  if (keys.error) return fail("report", *keys.error);
  if (!report::have_echarts())
    return fail("report",
                "this strata was built without ECharts (report/node_modules was not installed when it was "
                "built): run "
                "scripts/setup.sh (or `npm ci` in report/) and rebuild",
                1);

  std::string error;
  // Checked before the (possibly long) load: an existing file without --force stops here.
  if (!check_output_target(output, force, &error)) return fail("report", error, 1);
  if (!check_inputs(inputs, InputKind::kTrace, &error)) return fail("report", error, 1);
#ifdef STRATA_HAVE_LOWERBOUND
  LoadedBound bound;
  if (int code = load_report_bound(cl, bound_options, &bound); code != 0) return code;
#endif
  trace::Trace trace;
  if (!open_inputs(inputs, &trace, &error)) return fail("report", error, 1);
  print_warnings(trace.warnings);
#ifdef STRATA_HAVE_LOWERBOUND
  if (!bound_options.models.empty())
    options.lower_bound = report_bound(trace, inputs.front(), bound, bound_options.top);
#endif

  options.inputs = inputs;
  options.title = title;
  options.generator = std::string("strata ") + version_text();
  options.params = params;
  OutputFile target;
  OutputStream file;
  if (!target.begin(output, force, &error) || !file.open(target.temp_path(), output, &error))
    return fail("report", error, 1);
  const bool written = report::write_report(trace, options, file.stream(), &error);
  // A failed write is named by the stream (with its reason), whatever else the report said.
  if (std::string write_error; !file.finish(&write_error)) return fail("report", write_error, 1);
  if (!written) return fail("report", output + ": " + error, 1);
  if (!target.commit(&error)) return fail("report", error, 1);
  return 0;
}

}  // namespace strata::cli
