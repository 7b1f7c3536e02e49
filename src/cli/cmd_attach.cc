// strata attach PID [--hz N] [--epoch SECONDS] [--duration SECONDS] [--max-disk MB] -o DIR:
// continuous CPU profiling of a running process without preloading or restarting it (perf_event
// from the outside; sample/attach.h). One trace file per epoch in DIR; `strata profile DIR` reads
// them together.
#include <signal.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/text_escape.h"
#include "sample/attach.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata attach PID [--hz N] [--epoch SECONDS] [--duration SECONDS] [--max-disk MB]\n"
    "                         [--unwind fp|dwarf] [--timeline] [--no-python] -o DIR\n"
    "  PID             a running process (not restarted, not stopped, not written to)\n"
    "  --hz N          samples per second of each thread's CPU time (default 99)\n"
    "  --epoch S       seconds per trace file (default 60): DIR/<pid>-epoch-NNNNNN.strata\n"
    "  --duration S    stop after S seconds (default: when the process exits, or on Ctrl-C)\n"
    "  --max-disk MB   keep the epoch files under MB megabytes: the oldest are removed (and counted)\n"
    "  --unwind MODE   fp (default) or dwarf (16 KiB of stack per sample, unwound here)\n"
    "  --timeline      keep every sample's time too (for `strata export`), not only the counts\n"
    "  --no-python     do not read CPython 3.11 frames (they are read with process_vm_readv)\n"
    "  -o DIR          directory for the epoch files (created if missing)\n"
    "Needs perf_event on the target (root, or kernel.perf_event_paranoid <= 2 for a process of yours).\n"
    "Read the result with `strata profile DIR`.\n";

std::atomic<bool> g_stop{false};
void on_stop_signal(int) { g_stop.store(true); }

bool parse_seconds(const std::string& text, int64_t* ns) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !std::isfinite(v) || v <= 0 || v > 1e7) return false;
  *ns = static_cast<int64_t>(v * 1e9);
  return true;
}

}  // namespace

int run_attach(int argc, char** argv) {
  std::string pid_text, hz = "99", epoch = "60", duration, max_disk, dir, unwind = "fp";
  sample::AttachOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (take_option(argc, argv, &i, "--hz", &hz, &missing) || take_option(argc, argv, &i, "--epoch", &epoch, &missing) ||
        take_option(argc, argv, &i, "--duration", &duration, &missing) ||
        take_option(argc, argv, &i, "--max-disk", &max_disk, &missing) ||
        take_option(argc, argv, &i, "--unwind", &unwind, &missing) || take_option(argc, argv, &i, "-o", &dir, &missing) ||
        take_option(argc, argv, &i, "--output", &dir, &missing)) {
      if (missing) return fail("attach", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (arg == "--timeline") {
      options.timeline = true;
      continue;
    }
    if (arg == "--no-python") {
      options.python = false;
      continue;
    }
    if (!arg.empty() && arg[0] == '-') return fail("attach", "unknown option " + std::string(arg) + "\n" + kUsage);
    if (!pid_text.empty()) return fail("attach", "one process at a time\n" + std::string(kUsage));
    pid_text = std::string(arg);
  }
  char* end = nullptr;
  long pid = std::strtol(pid_text.c_str(), &end, 10);
  if (pid_text.empty() || end == pid_text.c_str() || *end != '\0' || pid < 1 || pid > (1L << 22))
    return fail("attach", (pid_text.empty() ? std::string("no PID given") : "PID " + pid_text + " is not a process id") +
                              "\n" + kUsage);
  if (dir.empty()) return fail("attach", std::string("-o DIR is required\n") + kUsage);
  options.pid = static_cast<int>(pid);
  options.dir = dir;
  long rate = std::strtol(hz.c_str(), &end, 10);
  if (end == hz.c_str() || *end != '\0' || rate < 1 || rate > 10000)
    return fail("attach", "--hz " + hz + " is not a rate from 1 to 10000");
  options.hz = static_cast<int>(rate);
  if (!parse_seconds(epoch, &options.epoch_ns)) return fail("attach", "--epoch " + epoch + " is not a number of seconds");
  if (!duration.empty() && !parse_seconds(duration, &options.duration_ns))
    return fail("attach", "--duration " + duration + " is not a number of seconds");
  if (!max_disk.empty()) {
    double mb = std::strtod(max_disk.c_str(), &end);
    if (end == max_disk.c_str() || *end != '\0' || !std::isfinite(mb) || mb <= 0)
      return fail("attach", "--max-disk " + max_disk + " is not a number of megabytes");
    options.max_disk_bytes = static_cast<uint64_t>(mb * 1024 * 1024);
  }
  if (unwind != "fp" && unwind != "dwarf") return fail("attach", "--unwind " + unwind + " is not fp or dwarf");
  options.dwarf = unwind == "dwarf";

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sample::AttachResult result;
  std::string error;
  const bool ok = sample::run_attach(options, &g_stop, &result, &error);
  if (!ok) return fail("attach", error, 1);
  std::fprintf(stderr, "strata attach: %s\n", exporter::escape_terminal(result.mode).c_str());
  std::fprintf(stderr, "strata attach: %s\n", exporter::escape_terminal(result.python_note).c_str());
  std::fprintf(stderr,
               "strata attach: %s; %u epoch file(s) written to %s (%.1f MB kept), %u removed by the disk budget "
               "(%.1f MB); %llu samples, %llu lost\n",
               result.end_reason.c_str(), result.epochs_written, exporter::escape_terminal(dir).c_str(),
               static_cast<double>(result.bytes_kept) / 1048576.0, result.epochs_removed,
               static_cast<double>(result.bytes_removed) / 1048576.0, static_cast<unsigned long long>(result.samples),
               static_cast<unsigned long long>(result.lost));
  if (!error.empty()) std::fprintf(stderr, "strata attach: warning: %s\n", exporter::escape_terminal(error).c_str());
  return 0;
}

}  // namespace strata::cli
