// strata iterations FILE [--iterations N] [--stream SPEC] [--level L] [--max-extra-ops K] [--epsilon E]
//                        [--max-loops M] [--format table|csv|json] [--emit OUT [--force]]
// Finds training/inference iterations without step markers (DeepProf), prints per-iteration metrics
// and a ranked diagnosis.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "analysis/iterations/iterations_analysis.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/table_render.h"
#include "model/trace_loader.h"
#include "model/trace_saver.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata iterations FILE [--iterations N] [--stream SPEC] [--level L] [--max-extra-ops K]\n"
    "                         [--epsilon E] [--max-loops M] [--format table|csv|json] [--emit OUT [--force]]\n"
    "  FILE: a Strata trace"
#ifdef STRATA_HAVE_IMPORT
    " or a Kineto/PyTorch profiler JSON trace (.json, .json.gz)"
#endif
    "\n"
    "  --iterations N   the dominant loop's iteration count, if known (default: detected)\n"
    "  --stream SPEC    main track: device:D/stream:S, stream:S or tid:T (default: classified)\n"
    "  --level L        level whose spans are the ops (default: device if present, else layer)\n"
    "  --max-extra-ops K  extra ops allowed inside one iteration (Algorithm 1's k0; default: cycle/2)\n"
    "  --epsilon E      initial epsilon of Criterion 2 when N is given (doubled until a pattern fits)\n"
    "  --max-loops M    loops mined one after another (train, eval, ...; default 4)\n"
    "  --emit OUT       write the trace plus one span per iteration (level iteration) to OUT (.strata)\n"
    "  --force          replace OUT if it exists (only a regular file of yours)\n";

}  // namespace

int run_iterations(int argc, char** argv) {
  std::string input, format_text = "table", emit_path;
  analysis::Params params;
  bool force = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    bool missing = false;
    std::string value;
    bool taken = false;
    for (const char* opt : {"--iterations", "--stream", "--level", "--max-extra-ops", "--epsilon", "--max-loops"}) {
      if (take_option(argc, argv, &i, opt, &value, &missing)) {
        std::string key = std::string(opt + 2);
        for (char& c : key)
          if (c == '-') c = '_';
        params.set(key, value);
        taken = true;
        break;
      }
      if (missing) return fail("iterations", std::string(opt) + " needs a value\n" + kUsage);
    }
    if (taken) continue;
    if (take_option(argc, argv, &i, "--format", &format_text, &missing)) continue;
    if (missing) return fail("iterations", "--format needs a value (table, csv or json)");
    if (arg == "--force") {
      force = true;
      continue;
    }
    if (take_option(argc, argv, &i, "--emit", &emit_path, &missing)) continue;
    if (missing) return fail("iterations", "--emit needs an output path");
    if (!arg.empty() && arg[0] == '-') return fail("iterations", "unknown option '" + std::string(arg) + "'\n" + kUsage);
    if (!input.empty()) return fail("iterations", "one trace at a time (got '" + input + "' and '" + std::string(arg) + "')");
    input = arg;
  }
  if (input.empty()) return fail("iterations", std::string("no trace given\n") + kUsage);
  exporter::TableFormat format;
  if (!exporter::parse_table_format(format_text, &format))
    return fail("iterations", "--format '" + format_text + "': expected table, csv or json");

  iterations::IterationsOptions options;
  std::string error;
  if (!iterations::options_from_params(params, &options, &error)) return fail("iterations", "--" + error);

  OutputFile emit;  // checked before the work: never through a planted link, replaced only with --force
  if (!emit_path.empty() && !emit.begin(emit_path, force, &error)) return fail("iterations", error, 1);
  model::Trace trace;
  if (!load_native_or_import(input, &trace, &error)) return fail("iterations", error, 1);
  for (const std::string& w : trace.warnings)
    std::fprintf(stderr, "strata iterations: warning: %s\n", w.c_str());

  iterations::IterationsReport report;
  if (!iterations::run_iterations(trace, options, &report, &error)) return fail("iterations", input + ": " + error, 1);
  const auto tables = iterations::report_tables(trace, report);
  exporter::render_tables(tables, format, std::cout);
  if (!emit_path.empty()) {
    const size_t added = iterations::add_iteration_spans(&trace, report);
    if (!model::save_trace(trace, emit.temp_path(), &error) || !emit.commit(&error))
      return fail("iterations", error, 1);
    std::fprintf(stderr, "strata iterations: wrote %s (%zu iteration spans at level iteration)\n", emit_path.c_str(),
                 added);
  }
  if (trace.total_drops() > 0)
    std::fprintf(stderr, "strata iterations: note: the trace reports %llu dropped events; iterations near them may be cut\n",
                 static_cast<unsigned long long>(trace.total_drops()));
  return 0;
}

}  // namespace strata::cli
