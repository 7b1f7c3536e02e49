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

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "export/text_escape.h"
#include "sample/attach.h"

namespace strata::cli {
namespace {

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
  std::string epoch = "60", duration, dir, unwind = "fp";
  int64_t pid = 0;
  int hz = 99;
  double max_disk_mb = 0;
  bool timeline = false, no_python = false;
  sample::AttachOptions options;
  CommandLine cl(
      "attach",
      "Sample a running process's CPU stacks (no restart, no preload: perf_event from the outside), "
      "one trace file per epoch in DIR (DIR/<pid>-epoch-NNNNNN.strata; an earlier attach's files are "
      "kept and numbering goes on after them). DIR must be a directory of yours (created if missing; "
      "never through a symbolic link). Needs perf_event on the target (root, or "
      "kernel.perf_event_paranoid <= 2 for a process of yours). Read the result with `strata profile "
      "DIR`.");
  cl.app()
      .add_option("PID", pid, "a running process (not restarted, not stopped, not written to)")
      ->required()
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 22));
  cl.app()
      .add_option("--hz", hz, "samples per second of each thread's CPU time (default 99)")
      ->check(CLI::Range(1, 10000))
      ->type_name("N");
  cl.app().add_option("--epoch", epoch, "seconds per trace file (default 60)")->type_name("S");
  cl.app()
      .add_option("--duration", duration,
                  "stop after S seconds (default: when the process exits, or on Ctrl-C)")
      ->type_name("S");
  cl.app()
      .add_option("--max-disk", max_disk_mb,
                  "keep this attach's epoch files under MB megabytes: its oldest are removed (and "
                  "counted); files it did not write are never counted nor removed")
      ->check(number_in(0, 1e12, "a number of megabytes above 0", true))
      ->type_name("MB");
  cl.app()
      .add_option("--unwind", unwind, "fp (default) or dwarf (16 KiB of stack per sample, unwound here)")
      ->check(CLI::IsMember({"fp", "dwarf"}))
      ->type_name("MODE");
  cl.app().add_flag("--timeline", timeline,
                    "keep every sample's time too (for `strata export`), not only the counts");
  cl.app().add_flag("--no-python", no_python,
                    "do not read CPython 3.11 frames (they are read with process_vm_readv)");
  cl.add_output(&dir, "directory for the epoch files (created if missing)")->type_name("DIR")->required();
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  // The directory follows the rules of outputs (safe_files.h): this user's, opened once, used
  // through its descriptor only.
  OutputDir output_dir;
  std::string error;
  if (!output_dir.open(dir, &error)) return fail("attach", error, 1);
  options.pid = static_cast<int>(pid);
  options.dir_fd = output_dir.fd();
  options.dir = output_dir.path();
  options.hz = hz;
  options.timeline = timeline;
  options.python = !no_python;
  if (!parse_seconds(epoch, &options.epoch_ns))
    return cl.usage_error("--epoch " + epoch + " is not a number of seconds");
  if (!duration.empty() && !parse_seconds(duration, &options.duration_ns))
    return cl.usage_error("--duration " + duration + " is not a number of seconds");
  if (max_disk_mb > 0) options.max_disk_bytes = static_cast<uint64_t>(max_disk_mb * 1024 * 1024);
  options.dwarf = unwind == "dwarf";

  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  sample::AttachResult result;
  const bool ok = sample::run_attach(options, &g_stop, &result, &error);
  if (!ok) return fail("attach", error, 1);
  inform("attach", "%s", exporter::escape_terminal(result.mode).c_str());
  inform("attach", "%s", exporter::escape_terminal(result.python_note).c_str());
  inform("attach",
         "%s; %u epoch file(s) written to %s (%.1f MB kept), %u removed by the disk budget "
         "(%.1f MB); %llu samples, %llu lost",
         result.end_reason.c_str(), result.epochs_written, exporter::escape_terminal(dir).c_str(),
         static_cast<double>(result.bytes_kept) / 1048576.0, result.epochs_removed,
         static_cast<double>(result.bytes_removed) / 1048576.0,
         static_cast<unsigned long long>(result.samples), static_cast<unsigned long long>(result.lost));
  if (result.foreign_entries > 0)
    inform("attach",
           "%u entr%s named like this process's epoch files but not files of this user left alone in %s\n",
           result.foreign_entries, result.foreign_entries == 1 ? "y" : "ies",
           exporter::escape_terminal(dir).c_str());
  if (!error.empty())
    std::fprintf(stderr, "strata attach: warning: %s\n", exporter::escape_terminal(error).c_str());
  return 0;
}

}  // namespace strata::cli
