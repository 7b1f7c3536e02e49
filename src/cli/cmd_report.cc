// strata report TRACE... -o report.html [--force] [--param KEY=VALUE ...] [--title TEXT] [--max-rows N]
// One self-contained HTML file drawn from the analyses' tables (src/report; docs/report.md).
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/pipeline.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "cli/version.h"
#include "report/report.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata report TRACE... -o REPORT.html [--force] [--param KEY=VALUE ...] [--title TEXT]\n"
    "                     [--max-rows N]\n"
    "  TRACE: any trace strata reads (native, Kineto/PyTorch JSON, Nsight Systems SQLite, ...); several\n"
    "         are one trace, as with `strata analyze` (repeated runs, or the ranks of a merged job)\n"
    "  -o, --output  the HTML file: self-contained (ECharts inlined), opens offline in any browser\n"
    "  --force       replace REPORT.html if it exists (only a regular file of yours)\n"
    "  --param       passed to the analyses, as with `strata analyze` (e.g. device=h100, trim=0.1)\n"
    "  --title       the page's title (default: \"Strata report: TRACE\")\n"
    "  --max-rows    rows of one table embedded at most (default 5000; the rest is left out with a note)\n";

}  // namespace

int run_report(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string output, title, max_rows_text;
  bool force = false;
  analysis::Params params;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    std::string value;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--force") {
      force = true;
      continue;
    }
    if (take_option(argc, argv, &i, "--param", &value, &missing) ||
        take_option(argc, argv, &i, "-p", &value, &missing)) {
      size_t eq = value.find('=');
      if (missing || eq == std::string::npos || eq == 0)
        return fail("report", "--param needs KEY=VALUE, e.g. --param device=h100");
      params.set(value.substr(0, eq), value.substr(eq + 1));
      continue;
    }
    if (take_option(argc, argv, &i, "--output", &output, &missing) ||
        take_option(argc, argv, &i, "-o", &output, &missing) ||
        take_option(argc, argv, &i, "--title", &title, &missing) ||
        take_option(argc, argv, &i, "--max-rows", &max_rows_text, &missing)) {
      if (missing) return fail("report", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (!arg.empty() && arg[0] == '-')
      return fail("report", "unknown option " + std::string(arg) + "\n" + kUsage);
    inputs.emplace_back(arg);
  }
  if (inputs.empty()) return fail("report", std::string("no trace given\n") + kUsage);
  if (output.empty()) return fail("report", std::string("no output file: give -o REPORT.html\n") + kUsage);
  report::ReportOptions options;
  if (!max_rows_text.empty()) {
    char* end = nullptr;
    long long n = std::strtoll(max_rows_text.c_str(), &end, 10);
    if (end == max_rows_text.c_str() || *end != '\0' || n < 1 || n > 10000000)
      return fail("report", "--max-rows " + max_rows_text + " is not a count from 1 to 10000000");
    options.max_rows = static_cast<size_t>(n);
  }
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
