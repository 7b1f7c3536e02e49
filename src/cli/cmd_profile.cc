// strata profile TRACE|DIR [--by function|op] [--top N]: CPU profile from a trace's samples
// (`strata record --sample`, or the epoch files of `strata attach`): self and total shares by
// function, or by op with the functions that took each op's samples and the time outside any op.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/text_escape.h"
#include "model/trace_loader.h"
#include "profile/profile.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata profile TRACE|DIR [--by function|op] [--top N] [--event N]\n"
    "  TRACE|DIR     a trace recorded with `strata record --sample`, or the directory `strata attach`\n"
    "                wrote (all its epochs are read together)\n"
    "  --by function self share (the sample's leaf) and total share (anywhere on the stack) per\n"
    "                function (default); Python functions show their file and hottest line\n"
    "  --by op       per op (the innermost layer span open at the sample), with the functions that took\n"
    "                its samples; samples outside any op form their own row\n"
    "  --top N       rows shown (default 30)\n"
    "  --event N     which sampled event (0: CPU time; more with a hardware PMU; see strata info)\n";

}  // namespace

int run_profile(int argc, char** argv) {
  std::string path, by = "function", top = "30", event = "0";
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (take_option(argc, argv, &i, "--by", &by, &missing) || take_option(argc, argv, &i, "--top", &top, &missing) ||
        take_option(argc, argv, &i, "--event", &event, &missing)) {
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
  if (by == "function") options.by = profile::ProfileBy::kFunction;
  else if (by == "op") options.by = profile::ProfileBy::kOp;
  else return fail("profile", "--by " + by + " is not function or op");
  char* end = nullptr;
  long n = std::strtol(top.c_str(), &end, 10);
  if (end == top.c_str() || *end != '\0' || n < 1 || n > 1000000) return fail("profile", "--top " + top + " is not a count");
  options.top = static_cast<size_t>(n);
  n = std::strtol(event.c_str(), &end, 10);
  if (end == event.c_str() || *end != '\0' || n < 0 || n > 64) return fail("profile", "--event " + event + " is not an event index");
  options.event = static_cast<int>(n);

  model::Trace trace;
  std::string error;
  if (!model::load_trace(path, &trace, &error)) return fail("profile", error, 1);
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  profile::Profile result = profile::build_profile(trace, options, namer);
  const std::string text = profile::format_profile(result, options);
  // Names come from the trace and the profiled binaries: escaped for the terminal, line by line.
  size_t start = 0;
  while (start < text.size()) {
    size_t nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    std::printf("%s\n", exporter::escape_terminal(std::string_view(text).substr(start, nl - start)).c_str());
    start = nl + 1;
  }
  for (const std::string& w : trace.report.warnings)
    std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());
  return result.samples > 0 ? 0 : 1;
}

}  // namespace strata::cli
