// strata summary TRACE... [--format table|json|md] [--top N]
// The answer first: what ran (process roles, the steps and how they were found), where the step time
// goes, the bottleneck with its evidence, ranked findings and the top ops. The work is
// analysis/run_summary.h; the rendering export/summary_render.h; the JSON contract docs/summary.md.
#include <iostream>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/summary_render.h"

namespace strata::cli {

int run_summary(int argc, char** argv) {
  std::vector<std::string> inputs;
  std::string format_text = "table";
  size_t top = 10;
  CommandLine cl(
      "summary",
      "The first thing to run on a trace: what ran (processes and their roles: main, "
      "dataloader_worker, subprocess, rank; the steps found and how; step time median/p90), where "
      "each step's time goes (data, forward, backward, optimizer, eval, communication, other; on GPU "
      "traces the device's busy, kernel, memcpy, memset and idle shares), the bottleneck with the "
      "numbers that decide it, ranked findings with what to do, and the top ops by self time.");
  cl.app()
      .add_option("TRACE", inputs,
                  "a Strata trace"
#ifdef STRATA_HAVE_IMPORT
                  ", or a Kineto/PyTorch profiler JSON or Nsight Systems SQLite export (imported on the fly)"
#endif
                  "; several are read as one trace")
      ->required();
  cl.add_format(&format_text, {"table", "json", "md"},
                "table (default; one screen), json (the contract: docs/summary.md) or md (markdown)");
  cl.app()
      .add_option("--top", top, "top ops to list (default 10)")
      ->check(CLI::Range(0, 1000))
      ->type_name("N");
  cl.set_footer(
      "Bottleneck kinds: input, framework_overhead, cpu_compute, gpu_compute, gpu_idle, memcpy, "
      "communication, "
      "sync (device kinds only on traces with device activity). Finding rules and their thresholds: "
      "docs/summary.md.");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  exporter::SummaryFormat format;
  exporter::parse_summary_format(format_text, &format);
  trace::Trace trace;
  std::string error;
  if (!open_inputs(inputs, &trace, &error)) return fail("summary", error, 1);
  print_warnings(trace.warnings);
  analysis::SummaryOptions options;
  options.top_ops = top;
  const analysis::RunSummary summary = analysis::summarize_run(trace, trace.tree(), options);
  exporter::render_summary(trace, summary, format, std::cout);
  std::cout.flush();
  if (!std::cout) return fail("summary", "could not write the summary to standard output", 1);
  return 0;
}

}  // namespace strata::cli
