// strata profile TRACE|DIR [--by function|op|layer|module|line] [--top N] [--format F]: CPU profile
// from a trace's samples (`strata record --sample`, or the epoch files of `strata attach`): self and
// total shares by function (module, line), or by op with the functions that took each op's samples
// and the time outside any op; as a table, CSV, JSON or folded stacks for flame graphs.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/profile_formats.h"
#include "export/profile_pprof.h"
#include "export/text_escape.h"
#include "model/trace_loader.h"
#include "profile/profile.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata profile TRACE|DIR [--by function|op|layer|module|line] [--top N] [--event N]\n"
    "                      [--format table|csv|json|collapsed|pprof|speedscope] [-o FILE]\n"
    "  TRACE|DIR     a trace recorded with `strata record --sample`, or the directory `strata attach`\n"
    "                wrote (all its epochs are read together)\n"
    "  --by function self share (the sample's leaf) and total share (anywhere on the stack) per\n"
    "                function (default); Python functions show their file and hottest line\n"
    "  --by op       per op (the innermost layer span open at the sample), with the functions that took\n"
    "                its samples; samples outside any op form their own row\n"
    "  --by layer    per outermost layer-level span (the module around the ops)\n"
    "  --by module   per mapped file (Python frames: per source file)\n"
    "  --by line     Python frames per file:line (native frames per function)\n"
    "  --top N       rows shown in the table (default 30; csv and json have every row)\n"
    "  --format F    table (default), csv, json, or collapsed: folded stacks \"root;...;leaf count\" for\n"
    "                flame-graph tools, the layer spans open at the sample as \"[op] NAME\" root frames;\n"
    "                pprof: gzip profile.proto (labels op, layer, thread), written to -o FILE;\n"
    "                speedscope: speedscope's JSON, one profile per thread\n"
    "  -o FILE       write the output to FILE (a new file: not replaced, links not followed)\n"
    "  --event N     which sampled event (0: CPU time; more with a hardware PMU; see strata info)\n";

}  // namespace

int run_profile(int argc, char** argv) {
  std::string path, by = "function", top = "30", event = "0", format = "table", output;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (take_option(argc, argv, &i, "--by", &by, &missing) || take_option(argc, argv, &i, "--top", &top, &missing) ||
        take_option(argc, argv, &i, "--event", &event, &missing) ||
        take_option(argc, argv, &i, "--format", &format, &missing) || take_option(argc, argv, &i, "-o", &output, &missing)) {
      if (missing) return fail("profile", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (arg == "--" && i + 1 < argc && path.empty()) {
      path = argv[++i];
      continue;
    }
    if (!arg.empty() && arg[0] == '-') return fail("profile", "unknown option " + std::string(arg) + "\n" + kUsage);
    if (!path.empty()) return fail("profile", "one trace at a time\n" + std::string(kUsage));
    path = std::string(arg);
  }
  if (path.empty()) return fail("profile", std::string("no trace given\n") + kUsage);
  profile::ProfileOptions options;
  if (!profile::parse_profile_by(by, &options.by))
    return fail("profile", "--by " + by + " is not function, op, layer, module or line");
  if (format != "table" && format != "csv" && format != "json" && format != "collapsed" && format != "pprof" &&
      format != "speedscope")
    return fail("profile", "--format " + format + " is not table, csv, json, collapsed, pprof or speedscope");
  if (format == "pprof" && output.empty()) return fail("profile", "--format pprof writes binary data: give -o FILE");
  char* end = nullptr;
  long n = std::strtol(top.c_str(), &end, 10);
  if (end == top.c_str() || *end != '\0' || n < 1 || n > 1000000) return fail("profile", "--top " + top + " is not a count");
  options.top = static_cast<size_t>(n);
  n = std::strtol(event.c_str(), &end, 10);
  if (end == event.c_str() || *end != '\0' || n < 0 || n > 64) return fail("profile", "--event " + event + " is not an event index");
  options.event = static_cast<int>(n);

  model::Trace trace;
  std::string error;
  if (!output.empty() && !check_output_target(output, false, &error)) return fail("profile", error, 1);
  if (!model::load_trace(path, &trace, &error)) return fail("profile", error, 1);
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  profile::Profile result = profile::build_profile(trace, options, namer);
  if (format != "table" || !output.empty()) {  // machine-readable: written as is (consumers escape for display)
    std::string text;
    if (format == "pprof") {
      text = exporter::format_profile_pprof(trace, options, namer, &error);
      if (text.empty()) return fail("profile", error, 1);
    } else {
      text = format == "csv"         ? exporter::format_profile_csv(result, options)
             : format == "json"      ? exporter::format_profile_json(result, options)
             : format == "collapsed" ? profile::format_collapsed(trace, options, namer)
             : format == "speedscope" ? exporter::format_profile_speedscope(trace, options, namer)
                                     : profile::format_profile(result, options);
    }
    if (output.empty()) {
      std::fwrite(text.data(), 1, text.size(), stdout);
    } else {
      OutputFile target;
      if (!target.begin(output, false, &error)) return fail("profile", error, 1);
      std::ofstream file(target.temp_path(), std::ios::binary);
      file.write(text.data(), static_cast<std::streamsize>(text.size()));
      file.close();
      if (!file || !target.commit(&error)) return fail("profile", file ? error : output + ": write failed", 1);
    }
    for (const std::string& note : result.notes) std::fprintf(stderr, "note: %s\n", exporter::escape_terminal(note).c_str());
    for (const std::string& w : trace.warnings)
      std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());
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
  for (const std::string& w : trace.warnings)
    std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());
  return result.samples > 0 ? 0 : 1;
}

}  // namespace strata::cli
