// strata: record, inspect, export and analyze across-stack traces of ML workloads.
#include <cstdio>
#include <cstring>
#include <new>
#include <string_view>
#include <system_error>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/version.h"
#include "export/text_escape.h"

namespace {

struct Command {
  const char* name;
  const char* summary;
  int (*run)(int argc, char** argv);
};

// One line per subcommand; later modules add theirs here.
constexpr Command kCommands[] = {
    {"record", "run a command with tracing and write one trace of all its processes",
     strata::cli::run_record},
    {"summary", "the answer first: what ran, where each step's time goes, the bottleneck and what to do",
     strata::cli::run_summary},
    {"info", "show a trace's header, processes, counts, drops and clock domains", strata::cli::run_info},
    {"export", "write a trace as Chrome Trace Event JSON, or spans as JSON/CSV", strata::cli::run_export},
    {"sql", "run SQL queries over a trace (or its `export --format sqlite` database)", strata::cli::run_sql},
    {"diff", "compare two traces: ops, layers and kernels slower or faster, tested against run-to-run noise",
     strata::cli::run_diff},
#ifdef STRATA_HAVE_REPORT
    {"report", "one self-contained HTML report with charts of the analyses (offline; docs/report.md)",
     strata::cli::run_report},
#endif
#ifdef STRATA_HAVE_IMPORT
    {"import", "convert a PyTorch/Kineto, ONNX Runtime or TensorFlow trace JSON into a Strata trace",
     strata::cli::run_import},
#endif
    {"analyze", "run XSP analyses (model/layer/kernel tables, rooflines, per-op stats) on traces",
     strata::cli::run_analyze},
    {"iterations", "find training iterations without step markers; per-iteration metrics and diagnosis",
     strata::cli::run_iterations},
#ifdef STRATA_HAVE_LOWERBOUND
    {"model", "load ONNX models: layer IR, shapes, unique layers per model and across models",
     strata::cli::run_model},
    {"bench", "generate or run per-layer library benchmarks (oneDNN, cuDNN/cuBLAS) into the perf database",
     strata::cli::run_bench},
#endif
    {"profile", "CPU profile from a trace's samples: shares by function or by op (record with --sample)",
     strata::cli::run_profile},
    {"annotate",
     "per-instruction view of a sampled function: basic blocks, llvm-mca cycles, stall culprits (DCPI)",
     strata::cli::run_annotate},
    {"attach", "sample a running process's CPU stacks (no restart), one trace file per epoch",
     strata::cli::run_attach},
#ifdef STRATA_HAVE_LOWERBOUND
    {"lowerbound", "sequential/parallel lower-bound latency of an ONNX model; compare with a framework trace",
     strata::cli::run_lowerbound},
#endif
    {"merge", "merge the traces of a job's ranks into one, clocks aligned on collective kernels",
     strata::cli::run_merge},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: strata COMMAND [ARGS...]\n       strata --version\n\ncommands:\n");
  for (const Command& c : kCommands) std::fprintf(out, "  %-12s %s\n", c.name, c.summary);
  std::fprintf(out, "\n'strata COMMAND --help' describes a command.\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "-h" || name == "--help" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version" || name == "-V") {
    std::printf("strata %s\n", strata::cli::version_text());
    return 0;
  }
  for (const Command& c : kCommands) {
    if (name != c.name) continue;
    try {
      const int code = c.run(argc - 1, argv + 1);
      strata::cli::print_named_file_refusals();  // files a trace named, refused while it was read
      return code;
    } catch (const std::bad_alloc&) {
      // An allocation the memory check's estimate did not foresee (an address-space limit, other
      // processes taking memory meanwhile): one line, not an abort.
      std::fprintf(stderr,
                   "strata %s: out of memory; free memory, read ranks one by one (STRATA_JOBS=1), use a "
                   "larger machine, or narrow the input\n",
                   c.name);
      return 1;
    } catch (const std::system_error& e) {
      // A thread or another resource the system refused (thread or address-space limits).
      std::fprintf(stderr,
                   "strata %s: the system refused a resource (%s); raise the process limits or set "
                   "STRATA_JOBS=1\n",
                   c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "strata: unknown command '%s'\n", strata::exporter::escape_terminal(argv[1]).c_str());
  usage(stderr);
  return 2;
}
