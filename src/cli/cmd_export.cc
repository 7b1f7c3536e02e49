// strata export FILE --format chrome|json|csv|sqlite [-o OUT]
#include <fstream>
#include <iostream>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/exporters.h"
#include "export/sqlite_export.h"
#include "export/text_escape.h"

namespace strata::cli {

int run_export(int argc, char** argv) {
  constexpr const char* kUsage =
      "usage: strata export FILE --format chrome|json|csv|sqlite [-o OUT] [--force]\n"
      "  FILE: a Strata trace, or any trace a reader of this build reads (Kineto/PyTorch JSON, ...)\n"
      "  chrome: Chrome Trace Event JSON (open in ui.perfetto.dev or chrome://tracing)\n"
      "  json, csv: one record per span with every field and attribute, and its parent in the span tree\n"
      "            (parent_id, parent_link: how it was established; remote_parent_id: a W3C parent\n"
      "            outside this file)\n"
      "  sqlite: an SQLite database (tables spans, attributes, metrics, processes, threads, tracks,\n"
      "          strings, samples; schema in docs/sql.md); needs -o; query it with `strata sql`\n"
      "  -o OUT: file to write (default: standard output); never written through a symbolic link\n"
      "  --force: replace OUT if it exists (only a regular file of yours)\n";
  std::string input, format = "chrome", output;
  bool force = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--force") {
      force = true;
      continue;
    }
    if (take_option(argc, argv, &i, "--format", &format, &missing) || take_option(argc, argv, &i, "-f", &format, &missing) ||
        take_option(argc, argv, &i, "-o", &output, &missing)) {
      if (missing) return fail("export", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (!arg.empty() && arg[0] == '-') return fail("export", "unknown option " + std::string(arg) + "\n" + kUsage);
    if (!input.empty()) return fail("export", "more than one input file\n" + std::string(kUsage));
    input = arg;
  }
  if (input.empty()) return fail("export", std::string("no input file\n") + kUsage);
  if (format != "chrome" && format != "json" && format != "csv" && format != "sqlite")
    return fail("export", "--format " + format + " is not one of chrome, json, csv, sqlite");

  std::string error;
  const bool to_file = !output.empty() && output != "-";
  if (format == "sqlite" && !to_file) return fail("export", "--format sqlite needs -o FILE (a database is not written to standard output)");
  if (to_file && !check_output_target(output, force, &error)) return fail("export", error, 1);
  if (!check_inputs({input}, InputKind::kTrace, &error)) return fail("export", error, 1);
  model::Trace trace;
  if (!load_native_or_import(input, &trace, &error)) return fail("export", error, 1);
  for (const auto& w : trace.warnings) std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());

  if (format == "sqlite") {
    OutputFile target;
    if (!target.begin(output, force, &error)) return fail("export", error, 1);
    if (!exporter::write_sqlite_file(trace, target.temp_path(), &error))
      return fail("export", output + ": " + error, 1);
    if (!target.commit(&error)) return fail("export", error, 1);
    return 0;
  }

  std::ofstream file;
  std::ostream* out = &std::cout;
  OutputFile target;
  if (to_file) {
    if (!target.begin(output, force, &error)) return fail("export", error, 1);
    file.open(target.temp_path(), std::ios::binary | std::ios::trunc);
    if (!file) return fail("export", output + ": cannot create file", 1);
    out = &file;
  }
  if (format == "chrome") exporter::write_chrome_trace(trace, *out);
  else if (format == "json") exporter::write_spans_json(trace, *out);
  else exporter::write_spans_csv(trace, *out);
  out->flush();
  if (!*out) return fail("export", (to_file ? output : std::string("stdout")) + ": write failed", 1);
  if (to_file) {
    file.close();
    if (!file || !target.commit(&error)) return fail("export", file ? error : output + ": write failed", 1);
  }
  return 0;
}

}  // namespace strata::cli
