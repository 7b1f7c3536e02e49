// strata record [-o OUT] [--level LEVEL] [...] -- CMD ARGS...
//
// Runs CMD with libstrata preloaded (no change to the program), so every process of the command
// (children included) writes its own trace file into OUT.parts/; when CMD ends, the parts are
// merged into OUT with a Record chunk describing the run, and a summary is printed.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "collect/clock.h"
#include "collect/trace_context.h"
#include "core/level.h"
#include "format/trace_merge.h"
#include "model/trace_loader.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: strata record [-o OUT] [--level LEVEL] [--buffer-mb N] [--compress N] [--keep-parts] -- CMD [ARGS...]\n"
    "  -o OUT         trace file to write (default: strata-<date>-<time>.strata)\n"
    "  --level LEVEL  deepest level to record: application, model, layer, library, runtime, device (default model)\n"
    "  --buffer-mb N  event buffer budget per process in MiB (default 64); overflow is dropped and counted\n"
    "  --compress N   zstd level for chunks (default 0: uncompressed)\n"
    "  --keep-parts   keep the per-process files in OUT.parts/\n"
    "  --quiet        no summary\n";

volatile sig_atomic_t g_child = 0;

void forward_signal(int sig) {
  if (g_child > 0) kill(g_child, sig);
}

std::string default_output() {
  char buf[64];
  time_t now = time(nullptr);
  struct tm tm {};
  localtime_r(&now, &tm);
  strftime(buf, sizeof(buf), "strata-%Y%m%d-%H%M%S.strata", &tm);
  return buf;
}

// libstrata.so next to the tool: installed tree (bin/../lib) or build tree (same layout).
std::string find_runtime_library() {
  std::string dir = executable_dir();
  for (const std::string& candidate : {dir + "/../lib/libstrata.so", dir + "/libstrata.so"})
    if (access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
  return "";
}

std::string find_python_package_dir() {
  std::string dir = executable_dir();
  for (const std::string& candidate : {dir + "/../lib/python", dir + "/../python"})
    if (access((candidate + "/strata/__init__.py").c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
  return "";
}

void prepend_env(const char* name, const std::string& value, char sep) {
  const char* old = getenv(name);
  std::string v = value;
  if (old != nullptr && *old != '\0') v += sep + std::string(old);
  setenv(name, v.c_str(), 1);
}

}  // namespace

int run_record(int argc, char** argv) {
  std::string output, level_text = "model", buffer_mb = "64", compress = "0";
  bool keep_parts = false, quiet = false;
  int i = 1;
  for (; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (take_option(argc, argv, &i, "-o", &output, &missing) ||
        take_option(argc, argv, &i, "--output", &output, &missing) ||
        take_option(argc, argv, &i, "--level", &level_text, &missing) ||
        take_option(argc, argv, &i, "--buffer-mb", &buffer_mb, &missing) ||
        take_option(argc, argv, &i, "--compress", &compress, &missing)) {
      if (missing) return fail("record", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (arg == "--keep-parts") { keep_parts = true; continue; }
    if (arg == "--quiet" || arg == "-q") { quiet = true; continue; }
    if (!arg.empty() && arg[0] == '-') return fail("record", "unknown option " + std::string(arg) + "\n" + kUsage);
    break;  // first non-option: the command (the "--" is optional)
  }
  if (i >= argc) return fail("record", std::string("no command given\n") + kUsage);
  auto level = parse_level(level_text);
  if (!level) return fail("record", "--level " + level_text + " is not a level (application, model, layer, library, runtime, device)");
  if (output.empty()) output = default_output();

  std::string runtime = find_runtime_library();
  if (runtime.empty())
    return fail("record", "libstrata.so not found next to the strata executable (" + executable_dir() +
                              "/../lib); reinstall Strata or run it from its build tree");

  std::string parts = output + ".parts";
  std::error_code ec;
  fs::remove_all(parts, ec);
  if (!fs::create_directories(parts, ec) && ec)
    return fail("record", parts + ": cannot create directory: " + ec.message());

  collect::TraceContext context = collect::new_trace_context();
  context.parent_span_id = 0;
  std::string command_line;
  for (int k = i; k < argc; ++k) command_line += (k > i ? " " : "") + std::string(argv[k]);

  int64_t start_ns = collect::monotonic_ns();
  int64_t start_real = collect::realtime_ns();
  pid_t child = fork();
  if (child < 0) return fail("record", std::string("fork failed: ") + std::strerror(errno));
  if (child == 0) {
    prepend_env("LD_PRELOAD", runtime, ':');
    setenv("STRATA_OUTPUT_DIR", fs::absolute(parts).c_str(), 1);
    unsetenv("STRATA_OUTPUT");
    setenv("STRATA_LEVEL", std::to_string(static_cast<int>(*level)).c_str(), 1);
    setenv("STRATA_BUFFER_MB", buffer_mb.c_str(), 1);
    setenv("STRATA_COMPRESS", compress.c_str(), 1);
    setenv("STRATA_LIB", runtime.c_str(), 1);
    // A root context: every process of the command shares this trace id.
    std::string tp = "00-" + context.trace_id_hex() + "-" + collect::hex16(collect::random_u64() | 1) + "-01";
    setenv("TRACEPARENT", tp.c_str(), 1);
    std::string py = find_python_package_dir();
    if (!py.empty()) prepend_env("PYTHONPATH", py, ':');
    execvp(argv[i], argv + i);
    std::fprintf(stderr, "strata record: cannot run %s: %s\n", argv[i], std::strerror(errno));
    _exit(127);
  }
  g_child = child;
  // Terminal signals reach the child directly (same process group); others sent to us are passed on.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, forward_signal);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  int64_t wall_ns = collect::monotonic_ns() - start_ns;
  int exit_code = 0;
  std::string outcome;
  if (WIFEXITED(status)) {
    exit_code = WEXITSTATUS(status);
    outcome = "exited with code " + std::to_string(exit_code);
  } else if (WIFSIGNALED(status)) {
    exit_code = 128 + WTERMSIG(status);
    outcome = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  }

  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(parts, ec))
    if (entry.path().extension() == ".strata") files.push_back(entry.path());
  std::sort(files.begin(), files.end());

  format::Properties record;
  record.set("command", command_line);
  record.set("outcome", outcome);
  record.set_int("exit_code", exit_code);
  record.set_int("wall_ns", wall_ns);
  record.set_int("start_realtime_ns", start_real);
  record.set_int("level", static_cast<int>(*level));
  record.set("trace_id", context.trace_id_hex());
  record.set_int("process_files", static_cast<int64_t>(files.size()));
  format::MergeResult merged = format::merge_trace_files(files, output, record);
  if (!merged.ok) {
    fail("record", merged.error + " (per-process files kept in " + parts + ")");
    return exit_code ? exit_code : 1;
  }
  if (!keep_parts) fs::remove_all(parts, ec);

  if (!quiet) {
    std::fprintf(stderr, "\nstrata record: %s, wall time %s\n", outcome.c_str(), format_duration_ns(wall_ns).c_str());
    if (files.empty())
      std::fprintf(stderr, "strata record: no process of the command loaded the Strata runtime (a static or "
                           "setuid binary ignores LD_PRELOAD); the trace holds only the run record\n");
    model::Trace trace;
    std::string error;
    if (model::load_trace(output, &trace, &error)) {
      print_summary(trace, stderr);
    } else {
      std::fprintf(stderr, "strata record: %s\n", error.c_str());
    }
    for (size_t k = 0; k < merged.warnings.size() && k < 5; ++k)
      std::fprintf(stderr, "warning: %s\n", merged.warnings[k].c_str());
    std::fprintf(stderr, "trace written to %s\n", output.c_str());
  }
  return exit_code;
}

}  // namespace strata::cli
