// strata diff BASE NEW [--threshold PCT] [--min-impact PCT] [--fail-on-regression] [--top N]
//                      [--format table|markdown|json|csv]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "analysis/trace_diff.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/table_render.h"
#include "export/text_escape.h"

namespace strata::cli {
int run_diff(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string format = "table";
  double top = 20;
  bool fail_on_regression = false, no_normalize = false;
  analysis::DiffOptions options;
  CommandLine cl(
      "diff",
      "Compare two traces of the same workload: ops, layers and kernels slower or faster, tested "
      "against run-to-run noise. Spans are matched by level, name, input shapes and module path; per "
      "item: time, count and allocated bytes per run (medians), the change, its share of the total, "
      "and a Mann-Whitney U test. Changes are judged beyond the common speed factor (everything "
      "slower or faster alike: another machine load between recordings), printed with the result.");
  cl.app()
      .add_option("TRACES", inputs,
                  "BASE and NEW: traces of the same workload, any format (Strata, Kineto/PyTorch JSON, ...); "
                  "record each with "
                  "--runs 5 so changes are tested against run-to-run noise")
      ->type_name("BASE NEW");
  cl.app()
      .add_option("--threshold", options.threshold_pct,
                  "a regression is slower by more than PCT% of its own time (default 10)")
      ->check(number_in(0, 1e9, "a percentage (e.g. 10)"))
      ->type_name("PCT");
  cl.app()
      .add_option("--min-impact", options.min_impact_pct, "... and by at least PCT% of the total (default 1)")
      ->check(number_in(0, 1e9, "a percentage (e.g. 1)"))
      ->type_name("PCT");
  cl.app()
      .add_option("--alpha", options.alpha, "... and significant at level P (default 0.05)")
      ->check(number_in(0, 1, "a probability between 0 and 1 (e.g. 0.05)", true))
      ->type_name("P");
  cl.app().add_flag("--no-normalize", no_normalize, "judge raw changes (no common speed factor)");
  cl.app()
      .add_option("--top", top, "items shown besides the totals (default 20)")
      ->check(number_in(0, 1e9, "a count"))
      ->type_name("N");
  cl.app().add_flag("--fail-on-regression", fail_on_regression, "exit 1 when any item is a regression");
  cl.add_format(&format, {"table", "markdown", "json", "csv"},
                "table (default), markdown (a pull-request comment), json, csv");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  if (inputs.size() != 2) return cl.usage_error("needs two traces, BASE and NEW");
  options.normalize = !no_normalize;
  if (top != static_cast<double>(static_cast<size_t>(top)))
    return cl.usage_error("--top: not a whole number");

  std::string error;
  trace::Trace base, next;
  if (!load_native_or_import(inputs[0], &base, &error)) return fail("diff", error, 1);
  if (!load_native_or_import(inputs[1], &next, &error)) return fail("diff", error, 1);
  for (const trace::Trace* t : {&base, &next}) print_warnings(t->warnings);
  const analysis::DiffResult result = analysis::diff_traces(base, next, options);
  if (result.items.empty())
    return fail("diff",
                inputs[0] + ", " + inputs[1] + ": no model, layer, library or device spans to compare", 1);
  const size_t n = static_cast<size_t>(top);
  if (format == "markdown")
    std::cout << analysis::diff_markdown(result, options, n);
  else {
    exporter::TableFormat tf = format == "json"  ? exporter::TableFormat::kJson
                               : format == "csv" ? exporter::TableFormat::kCsv
                                                 : exporter::TableFormat::kText;
    exporter::render_table(analysis::diff_table(result, options, n), tf, std::cout);
  }
  std::cout.flush();
  if (!std::cout) return fail("diff", "stdout: write failed", 1);
  return fail_on_regression && result.has_regression ? 1 : 0;
}

}  // namespace strata::cli
