// strata report TRACE... -o report.html [--force] [--param KEY=VALUE ...] [--title TEXT] [--max-rows N]
// One self-contained HTML file drawn from the analyses' tables (src/report; docs/report.md).
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "cli/version.h"
#include "report/report.h"

namespace strata::cli {

int run_report(int argc, char** argv) {
  std::vector<std::string> inputs, param_texts;
  std::string output, title;
  int64_t max_rows = 5000;
  bool force = false;
  CommandLine cl(
      "report",
      "One self-contained HTML file with charts of the analyses (ECharts inlined; opens offline in "
      "any browser; docs/report.md). Several traces are one trace, as with `strata analyze` "
      "(repeated runs, or the ranks of a merged job).");
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
  if (int code = cl.parse(argc, argv); code >= 0) return code;
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
  model::Trace trace;
  if (!open_inputs(inputs, &trace, &error)) return fail("report", error, 1);
  for (const auto& w : trace.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());

  options.inputs = inputs;
  options.title = title;
  options.generator = std::string("strata ") + version_text();
  options.params = params;
  OutputFile target;
  if (!target.begin(output, force, &error)) return fail("report", error, 1);
  std::ofstream file(target.temp_path(), std::ios::binary);
  if (!report::write_report(trace, options, file, &error)) return fail("report", output + ": " + error, 1);
  file.close();
  if (!file) return fail("report", output + ": write failed", 1);
  if (!target.commit(&error)) return fail("report", error, 1);
  return 0;
}

}  // namespace strata::cli
