// strata export FILE --format chrome|json|csv|sqlite [-o OUT[.gz]]
#include <iostream>
#include <string>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "export/exporters.h"
#include "export/sqlite_export.h"
#include "export/text_escape.h"

namespace strata::cli {

int run_export(int argc, char** argv) {
  std::string input, format = "chrome", output;
  bool force = false;
  CommandLine cl(
      "export", "Write a trace as Chrome Trace Event JSON, or its spans as JSON, CSV or an SQLite database.");
  cl.app()
      .add_option("FILE", input,
                  "a Strata trace, or any trace a reader of this build reads (Kineto/PyTorch JSON, ...)")
      ->required();
  cl.add_format(
      &format, {"chrome", "json", "csv", "sqlite"},
      "chrome: Chrome Trace Event JSON (open in ui.perfetto.dev); json, csv: one record per span with "
      "every field and attribute and its parent in the span tree (parent_id; parent_link: how it was "
      "established; remote_parent_id: a W3C parent outside this file); sqlite: an SQLite database "
      "(tables spans, attributes, metrics, processes, threads, tracks, strings, samples; schema in "
      "docs/sql.md; needs -o), query it with `strata sql` (default chrome)");
  cl.add_output(
      &output,
      "file to write (default: standard output); never written through a symbolic link; a name ending "
      "in .gz is gzip-compressed");
  cl.add_force(&force);
  cl.set_extra_argument_note("one input file at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;

  std::string error;
  const bool to_file = !output.empty() && output != "-";
  if (format == "sqlite" && !to_file)
    return cl.usage_error("--format sqlite needs -o FILE (a database is not written to standard output)");
  if (to_file && !check_output_target(output, force, &error)) return fail("export", error, 1);
  if (!check_inputs({input}, InputKind::kTrace, &error)) return fail("export", error, 1);
  trace::Trace trace;
  if (!load_native_or_import(input, &trace, &error)) return fail("export", error, 1);
  print_warnings(trace.warnings);

  if (format == "sqlite") {
    Output target;
    if (!target.begin(output, force, &error)) return fail("export", error, 1);
    if (!exporter::write_sqlite_file(trace, target.path(), &error))
      return fail("export", output + ": " + error, 1);
    if (!target.commit(&error)) return fail("export", error, 1);
    return 0;
  }

  OutputStream file;
  Output target;
  if (!to_file)
    file.open_stdout();
  else if (!target.begin(output, force, &error) || !file.open(target.path(), output, &error))
    return fail("export", error, 1);
  if (format == "chrome")
    exporter::write_chrome_trace(trace, file.stream());
  else if (format == "json")
    exporter::write_spans_json(trace, file.stream());
  else
    exporter::write_spans_csv(trace, file.stream());
  // A failed write leaves nothing: the temporary file is removed, the target never appears.
  if (!file.finish(&error) || (to_file && !target.commit(&error))) return fail("export", error, 1);
  return 0;
}

}  // namespace strata::cli
