// strata diff BASE NEW [--threshold PCT] [--min-impact PCT] [--fail-on-regression] [--top N]
//                      [--format table|markdown|json|csv]
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "analysis/trace_diff.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/table_render.h"
#include "export/text_escape.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata diff BASE NEW [--threshold PCT] [--min-impact PCT] [--alpha P] [--top N]\n"
    "                   [--no-normalize] [--fail-on-regression] [--format table|markdown|json|csv]\n"
    "  BASE, NEW: traces of the same workload, any format (Strata, Kineto/PyTorch JSON, ...); record\n"
    "             each with --runs 5 so changes are tested against run-to-run noise\n"
    "  Spans are matched by level, name, input shapes and module path; per item: time, count and\n"
    "  allocated bytes per run (medians), the change, its share of the total, and a Mann-Whitney U test.\n"
    "  Changes are judged beyond the common speed factor (everything slower or faster alike: another\n"
    "  machine load between recordings), printed with the result.\n"
    "  --threshold PCT     a regression is slower by more than PCT% of its own time (default 10)\n"
    "  --min-impact PCT    ... and by at least PCT% of the total (default 1)\n"
    "  --alpha P           ... and significant at level P (default 0.05)\n"
    "  --no-normalize      judge raw changes (no common speed factor)\n"
    "  --top N             items shown besides the totals (default 20)\n"
    "  --fail-on-regression  exit 1 when any item is a regression\n"
    "  --format            table (default), markdown (a pull-request comment), json, csv\n";

bool parse_number(const std::string& text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v >= 0) || v > 1e9) return false;
  *out = v;
  return true;
}

}  // namespace

int run_diff(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string format = "table", threshold, min_impact, alpha, top_text;
  bool fail_on_regression = false, normalize = true;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--no-normalize") {
      normalize = false;
      continue;
    }
    if (arg == "--fail-on-regression") {
      fail_on_regression = true;
      continue;
    }
    if (take_option(argc, argv, &i, "--format", &format, &missing) || take_option(argc, argv, &i, "-f", &format, &missing) ||
        take_option(argc, argv, &i, "--threshold", &threshold, &missing) ||
        take_option(argc, argv, &i, "--min-impact", &min_impact, &missing) ||
        take_option(argc, argv, &i, "--alpha", &alpha, &missing) || take_option(argc, argv, &i, "--top", &top_text, &missing)) {
      if (missing) return fail("diff", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (!arg.empty() && arg[0] == '-') return fail("diff", "unknown option " + std::string(arg) + "\n" + kUsage);
    inputs.emplace_back(arg);
  }
  if (inputs.size() != 2) return fail("diff", std::string("needs two traces, BASE and NEW\n") + kUsage);
  analysis::DiffOptions options;
  options.normalize = normalize;
  double top = 20;
  if (!threshold.empty() && !parse_number(threshold, &options.threshold_pct))
    return fail("diff", "--threshold " + threshold + ": not a percentage (e.g. 10)");
  if (!min_impact.empty() && !parse_number(min_impact, &options.min_impact_pct))
    return fail("diff", "--min-impact " + min_impact + ": not a percentage (e.g. 1)");
  if (!alpha.empty() && (!parse_number(alpha, &options.alpha) || options.alpha <= 0 || options.alpha >= 1))
    return fail("diff", "--alpha " + alpha + ": not a probability between 0 and 1 (e.g. 0.05)");
  if (!top_text.empty() && (!parse_number(top_text, &top) || top != static_cast<double>(static_cast<size_t>(top))))
    return fail("diff", "--top " + top_text + ": not a whole number");
  if (format != "table" && format != "markdown" && format != "json" && format != "csv")
    return fail("diff", "--format " + format + " is not one of table, markdown, json, csv");

  std::string error;
  model::Trace base, next;
  if (!load_native_or_import(inputs[0], &base, &error)) return fail("diff", error, 1);
  if (!load_native_or_import(inputs[1], &next, &error)) return fail("diff", error, 1);
  for (const model::Trace* t : {&base, &next})
    for (const auto& w : t->warnings) std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());
  const analysis::DiffResult result = analysis::diff_traces(base, next, options);
  if (result.items.empty())
    return fail("diff", inputs[0] + ", " + inputs[1] + ": no model, layer, library or device spans to compare", 1);
  const size_t n = static_cast<size_t>(top);
  if (format == "markdown") std::cout << analysis::diff_markdown(result, options, n);
  else {
    exporter::TableFormat tf = format == "json" ? exporter::TableFormat::kJson
                               : format == "csv" ? exporter::TableFormat::kCsv
                                                 : exporter::TableFormat::kText;
    exporter::render_table(analysis::diff_table(result, options, n), tf, std::cout);
  }
  std::cout.flush();
  if (!std::cout) return fail("diff", "stdout: write failed", 1);
  return fail_on_regression && result.has_regression ? 1 : 0;
}

}  // namespace strata::cli
