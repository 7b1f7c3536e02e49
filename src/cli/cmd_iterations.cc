// strata iterations FILE [--iterations N] [--stream SPEC] [--level L] [--max-extra-ops K] [--epsilon E]
//                        [--max-loops M] [--format table|csv|json] [--emit OUT [--force]] (strata iterations
//                        --help)
// Finds training/inference iterations without step markers (DeepProf), prints per-iteration metrics
// and a ranked diagnosis.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>

#include "analysis/iterations/iterations_analysis.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/table_render.h"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"

namespace strata::cli {
int run_iterations(int argc, char** argv) {
  std::string input, format_text = "table", emit_path;
  analysis::Params params;
  bool force = false;
  CommandLine cl("iterations",
                 "Find training/inference iterations without step markers (DeepProf); print per-iteration "
                 "metrics and a ranked diagnosis.");
  cl.app()
      .add_option("FILE", input,
                  "a Strata trace"
#ifdef STRATA_HAVE_IMPORT
                  " or a Kineto/PyTorch profiler JSON trace (.json, .json.gz)"
#endif
                  )
      ->required();
  // Each of these is handed on as an analysis parameter (--max-extra-ops -> max_extra_ops); the
  // iterations module checks the values and says which is wrong.
  const struct {
    const char* name;
    const char* type;
    const char* help;
  } kParams[] = {
      {"--iterations", "N", "the dominant loop's iteration count, if known (default: detected)"},
      {"--stream", "SPEC", "main track: device:D/stream:S, stream:S or tid:T (default: classified)"},
      {"--level", "L", "level whose spans are the ops (default: device if present, else layer)"},
      {"--max-extra-ops", "K", "extra ops allowed inside one iteration (Algorithm 1's k0; default: cycle/2)"},
      {"--epsilon", "E", "initial epsilon of Criterion 2 when N is given (doubled until a pattern fits)"},
      {"--max-loops", "M", "loops mined one after another (train, eval, ...; default 4)"},
  };
  for (const auto& p : kParams) {
    std::string key = p.name + 2;
    for (char& c : key)
      if (c == '-') c = '_';
    cl.app()
        .add_option_function<std::string>(
            p.name, [&params, key](const std::string& v) { params.set(key, v); }, p.help)
        ->type_name(p.type);
  }
  cl.add_format(&format_text, {"table", "csv", "json"}, "table (default), csv, json");
  cl.add_output(
        &emit_path,
        "write the trace plus one span per iteration (level iteration) to OUT (a native .strata trace)",
        "--emit")
      ->type_name("OUT");
  cl.add_force(&force);
  cl.set_extra_argument_note("one trace at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  exporter::TableFormat format;
  exporter::parse_table_format(format_text, &format);
  if (std::string error; refuse_gzip_native(emit_path, &error)) return cl.usage_error(error);

  analysis::iterations::IterationsOptions options;
  std::string error;
  if (!analysis::iterations::options_from_params(params, &options, &error))
    return fail("iterations", "--" + error);

  OutputFile emit;  // checked before the work: never through a planted link, replaced only with --force
  if (!emit_path.empty() && !emit.begin(emit_path, force, &error)) return fail("iterations", error, 1);
  trace::Trace trace;
  if (!load_native_or_import(input, &trace, &error)) return fail("iterations", error, 1);
  print_warnings(trace.warnings);

  analysis::iterations::IterationsReport report;
  if (!analysis::iterations::run_iterations(trace, options, &report, &error))
    return fail("iterations", input + ": " + error, 1);
  const auto tables = analysis::iterations::report_tables(trace, report);
  exporter::render_tables(tables, format, std::cout);
  if (!emit_path.empty()) {
    const size_t added = analysis::iterations::add_iteration_spans(&trace, report);
    if (!trace::save_trace(trace, emit.temp_path(), &error) || !emit.commit(&error))
      return fail("iterations", emit.about_target(error), 1);
    inform("iterations", "wrote %s (%zu iteration spans at level iteration)", emit_path.c_str(), added);
  }
  if (trace.total_drops() > 0 && !is_quiet())
    std::fprintf(
        stderr,
        "strata iterations: note: the trace reports %llu dropped events; iterations near them may be cut\n",
        static_cast<unsigned long long>(trace.total_drops()));
  return 0;
}

}  // namespace strata::cli
