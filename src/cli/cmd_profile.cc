// strata profile TRACE|DIR [--by function|op|layer|module|line] [--top N] [--format F]: CPU profile
// from a trace's samples (`strata record --sample`, or the epoch files of `strata attach`): self and
// total shares by function (module, line), or by op with the functions that took each op's samples
// and the time outside any op; as a table, CSV, JSON or folded stacks for flame graphs.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "export/profile_formats.h"
#include "export/profile_pprof.h"
#include "export/text_escape.h"
#include "profile/profile.h"
#include "trace/trace_loader.h"

namespace strata::cli {
int run_profile(int argc, char** argv) {
  std::string path, by = "function", format = "table", output;
  int64_t top = 30, event = 0;
  bool force = false;
  CommandLine cl(
      "profile",
      "CPU profile from a trace's samples (`strata record --sample`, or the epoch files of `strata "
      "attach`): self and total shares by function (module, line), or by op with the functions that "
      "took each op's samples and the time outside any op; as a table, CSV, JSON, folded stacks for "
      "flame graphs, pprof or speedscope.");
  cl.app()
      .add_option(
          "TRACE", path,
          "a trace recorded with `strata record --sample`, or the directory `strata attach` wrote (all "
          "its epochs are read together)")
      ->required();
  cl.app()
      .add_option(
          "--by", by,
          "function: self share (the sample's leaf) and total share (anywhere on the stack) per function "
          "(default), Python functions with their file and hottest line; op: per op (the innermost layer "
          "span open at the sample), with the functions that took its samples, samples outside any op in "
          "their own row; layer: per outermost layer-level span; module: per mapped file (Python frames: "
          "per source file); line: Python frames per file:line (native frames per function)")
      ->check(CLI::IsMember({"function", "op", "layer", "module", "line"}))
      ->type_name("KEY");
  cl.app()
      .add_option("--top", top, "rows shown in the table (default 30; csv and json have every row)")
      ->check(positive_count(1000000))
      ->type_name("N");
  cl.app()
      .add_option("--event", event,
                  "which sampled event (0: CPU time; more with a hardware PMU; see strata info)")
      ->check(CLI::Range(int64_t{0}, int64_t{64}))
      ->type_name("N");
  cl.add_format(
      &format, {"table", "csv", "json", "collapsed", "pprof", "speedscope"},
      "table (default), csv, json, or collapsed: folded stacks \"root;...;leaf count\" for flame-graph "
      "tools, the layer spans open at the sample as \"[op] NAME\" root frames; pprof: gzip "
      "profile.proto (labels op, layer, thread), written to -o FILE; speedscope: speedscope's JSON, "
      "one profile per thread");
  cl.add_output(
      &output,
      "write the output to FILE; never through a symbolic link; a name ending in .gz is gzip'd (pprof "
      "is gzip'd whatever its name)");
  cl.add_force(&force);
  cl.set_extra_argument_note("one trace at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  profile::ProfileOptions options;
  profile::parse_profile_by(by, &options.by);
  if (format == "pprof" && output.empty())
    return cl.usage_error("--format pprof writes binary data: give -o FILE");
  options.top = static_cast<size_t>(top);
  options.event = static_cast<int>(event);

  trace::Trace trace;
  std::string error;
  if (!output.empty() && !check_output_target(output, force, &error)) return fail("profile", error, 1);
  if (!trace::load_trace(path, &trace, &error)) return fail("profile", error, 1);
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  profile::Profile result = profile::build_profile(trace, options, namer);
  if (format != "table" ||
      !output.empty()) {  // machine-readable: written as is (consumers escape for display)
    std::string text;
    if (format == "pprof") {
      text = exporter::format_profile_pprof(trace, options, namer, &error);
      if (text.empty()) return fail("profile", error, 1);
    } else {
      text = format == "csv"          ? exporter::format_profile_csv(result, options)
             : format == "json"       ? exporter::format_profile_json(result, options)
             : format == "collapsed"  ? profile::format_collapsed(trace, options, namer)
             : format == "speedscope" ? exporter::format_profile_speedscope(trace, options, namer)
                                      : profile::format_profile(result, options);
    }
    if (output.empty()) {
      OutputStream out;
      out.open_stdout();
      out.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
      if (!out.finish(&error)) return fail("profile", error, 1);
    } else {
      // pprof is gzip'd by its writer: a second gzip for a .gz name would make it unreadable.
      OutputFile plain;
      Output target;
      OutputStream file;
      const bool pprof = format == "pprof";
      if (!(pprof ? plain.begin(output, force, &error) : target.begin(output, force, &error)) ||
          !file.open(pprof ? plain.temp_path() : target.path(), output, &error))
        return fail("profile", error, 1);
      file.stream().write(text.data(), static_cast<std::streamsize>(text.size()));
      // A failed write leaves nothing: the temporary file is removed, the target never appears.
      if (!file.finish(&error) || !(pprof ? plain.commit(&error) : target.commit(&error)))
        return fail("profile", error, 1);
    }
    if (!is_quiet())
      for (const std::string& note : result.notes)
        std::fprintf(stderr, "note: %s\n", exporter::escape_terminal(note).c_str());
    print_warnings(trace.warnings);
    return result.samples > 0 ? 0 : 1;
  }
  const std::string text = profile::format_profile(result, options);
  // Names come from the trace and the profiled binaries: escaped for the terminal, line by line.
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::printf("%s\n", exporter::escape_terminal(std::string_view(text).substr(start, nl - start)).c_str());
    start = nl + 1;
  }
  print_warnings(trace.warnings);
  return result.samples > 0 ? 0 : 1;
}

}  // namespace strata::cli
