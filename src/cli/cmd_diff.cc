// strata diff BASE NEW | --base FILE... --new FILE...  [--threshold PCT] [--alpha P] [--no-normalize]
//             [--top N] [--fail-on-regression] [--format table|csv|json|md]
// Exit status: 0, or 1 for a regression with --fail-on-regression; 2 for a usage error; 3 for input
// it cannot use (unreadable, nothing to compare, or too few steps to judge a change beyond the
// threshold with --fail-on-regression).
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/trace_diff.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/diff_render.h"

namespace strata::cli {
namespace {

constexpr int kUnusableInput = 3;

// Every recording of every file of one side; false (and *error) when a file cannot be read.
bool load_side(const std::vector<std::string>& files, std::vector<analysis::RecordingSteps>* out,
               std::vector<std::string>* notes, std::string* error) {
  for (const std::string& path : files) {
    trace::Trace trace;
    if (!load_native_or_import(path, &trace, error)) return false;
    print_warnings(trace.warnings);
    std::string note;
    for (analysis::RecordingSteps& r : analysis::recordings_of(trace, path, &note))
      out->push_back(std::move(r));
    if (!note.empty()) notes->push_back(note);
  }
  return true;
}

size_t steps_of(const std::vector<analysis::RecordingSteps>& side) {
  size_t n = 0;
  for (const analysis::RecordingSteps& r : side) n += r.step_ns.size();
  return n;
}

void add_options(CommandLine& cl, std::vector<std::string>* inputs, std::vector<std::string>* base,
                 std::vector<std::string>* next, analysis::DiffOptions* options, double* top) {
  cl.app()
      .add_option(
          "TRACES", *inputs,
          "BASE and NEW: traces of the same workload, any format (Strata, Kineto/PyTorch JSON, Nsight "
          "Systems SQLite); the steps inside each are the samples")
      ->type_name("BASE NEW");
  cl.app()
      .add_option("--base", *base, "BASE as several files (recordings of one configuration, pooled)")
      ->allow_extra_args(true)
      ->type_name("FILE...");
  cl.app().add_option("--new", *next, "NEW as several files")->allow_extra_args(true)->type_name("FILE...");
  cl.app()
      .add_option("--threshold", options->threshold_pct,
                  "a regression moves the step time by more than PCT% beyond the speed factor (default 5)")
      ->check(number_in(0, 1e9, "a percentage (e.g. 5)"))
      ->type_name("PCT");
  cl.app()
      .add_option("--alpha", options->alpha,
                  "... significantly: false discovery rate and interval level (default 0.05)")
      ->check(number_in(0, 1, "a probability between 0 and 1 (e.g. 0.05)", true))
      ->type_name("P");
  cl.app()
      .add_option("--top", *top,
                  "rows per table (default 20; at least 1: the verdict is a table's row in csv and json)")
      ->check(number_in(1, 1e9, "a count of at least 1"))
      ->type_name("N");
}

}  // namespace

int run_diff(int argc, char** argv) {
  std::vector<std::string> inputs, base_files, new_files;
  std::string format = "table";
  double top = 20;
  bool fail_on_regression = false, no_normalize = false;
  analysis::DiffOptions options;
  CommandLine cl(
      "diff",
      "Compare two versions of a workload: is NEW slower than BASE, and what explains it. The steps the "
      "summary recognizes (ProfilerStep marks, optimizer steps, model spans) are the samples: the step "
      "time of BASE and NEW with its interval first, then the ops, scopes and kernels that changed, "
      "ranked by their share of the step time, judged beyond the common speed factor (everything "
      "slower or faster alike: another machine load), which is printed. Ops are matched by name, "
      "input shapes and module path.");
  add_options(cl, &inputs, &base_files, &new_files, &options, &top);
  cl.app().add_flag("--no-normalize", no_normalize, "judge raw changes (a speed factor of 1)");
  cl.app().add_flag(
      "--fail-on-regression", fail_on_regression,
      "exit 1 on a regression (3 when there are too few steps to judge a change beyond the threshold)");
  cl.add_format(&format, {"table", "csv", "json", "md", "markdown"},
                "table (default), csv, json, md (a pull-request comment; also markdown)");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  if (!inputs.empty() && (!base_files.empty() || !new_files.empty()))
    return cl.usage_error("give BASE NEW, or --base and --new, not both");
  if (inputs.empty() && (base_files.empty() || new_files.empty()))
    return cl.usage_error("needs two traces, BASE and NEW (or --base FILE... and --new FILE...)");
  if (!inputs.empty() && inputs.size() != 2)
    return cl.usage_error("needs two traces, BASE and NEW (several a side: --base FILE... --new FILE...)");
  if (!inputs.empty()) base_files = {inputs[0]}, new_files = {inputs[1]};
  if (top != static_cast<double>(static_cast<size_t>(top)))
    return cl.usage_error("--top: not a whole number");
  options.normalize = !no_normalize;
  exporter::DiffFormat diff_format = exporter::DiffFormat::kTable;
  exporter::parse_diff_format(format, &diff_format);

  std::string error;
  std::vector<analysis::RecordingSteps> base, next;
  std::vector<std::string> notes;
  if (!load_side(base_files, &base, &notes, &error) || !load_side(new_files, &next, &notes, &error))
    return fail("diff", error, kUnusableInput);
  for (const auto& [side, files, recs] :
       {std::tuple{"BASE", &base_files, &base}, std::tuple{"NEW", &new_files, &next}})
    if (steps_of(*recs) == 0)
      return fail(
          "diff",
          std::string(side) + " (" + (*files)[0] + (files->size() > 1 ? ", ..." : "") +
              "): no host or device work to compare (no framework ops, library, runtime or device spans)",
          kUnusableInput);
  analysis::DiffResult result = analysis::diff_recordings(base, next, options);
  for (const std::string& n : notes) result.notes.push_back(n);
  exporter::render_diff(result, static_cast<size_t>(top), diff_format, std::cout);
  std::cout.flush();
  if (!std::cout) return fail("diff", "stdout: write failed", kUnusableInput);
  if (!fail_on_regression) return 0;
  if (result.has_regression) return 1;
  if (result.undecided) {
    std::fprintf(stderr, "strata diff: too few steps to judge (at least %zu a side): exit 3\n",
                 analysis::kMinStepsForTest);
    return kUnusableInput;
  }
  return 0;
}

}  // namespace strata::cli
