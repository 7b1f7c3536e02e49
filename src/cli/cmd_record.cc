// strata record [-o OUT] [--level LEVEL] [--runs N] [--leveled] [--serialize] [...] -- CMD ARGS...
//
// Runs CMD with libstrata preloaded (no change to the program), so every process of the command
// (children included) writes its own trace file into a private work directory next to OUT
// (OUT.parts.XXXXXX, mode 0700, created like mkdtemp); when CMD ends, the files of this run are
// merged into OUT with a Record chunk describing the run, and a summary is printed. OUT is never
// written through a symbolic link, and an existing OUT is replaced only with --force.
// --runs N repeats the command; --leveled runs it once per level set (XSP III-C), keeps every run as
// recorded and measures what tracing each level adds (src/runs/leveled.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "cli/bundled_libstdcxx.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/gpu_record_env.h"
#include "cli/jit_map_cleanup.h"
#include "cli/malloc_settings.h"
#include "cli/python_spawn.h"
#include "cli/record_signals.h"
#include "cli/safe_files.h"
#include "collect/clock.h"
#include "collect/trace_context.h"
#include "core/env_vars.h"
#include "core/level.h"
#include "export/summary_render.h"
#include "export/text_escape.h"
#include "format/payloads.h"
#include "format/trace_merge.h"
#include "runs/leveled.h"
#include "runs/run_set.h"
#include "strata_install_layout.h"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"
#include "trace/trace_summary.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

std::string default_output() {
  char buf[64];
  time_t now = time(nullptr);
  struct tm tm {};
  localtime_r(&now, &tm);
  strftime(buf, sizeof(buf), "strata-%Y%m%d-%H%M%S", &tm);
  // Never an existing file: a second recording within the same second gets its own name.
  std::string name = std::string(buf) + ".strata";
  struct stat st {};
  for (int k = 2; lstat(name.c_str(), &st) == 0 && k < 1000; ++k)
    name = std::string(buf) + "-" + std::to_string(k) + ".strata";
  return name;
}

// libstrata.so next to the tool: installed tree (bin/<libdir>), build tree (bin/../lib) or a flat
// copy (same folder).
std::string find_runtime_library() {
  std::string dir = executable_dir();
  for (const std::string& candidate : {dir + "/" STRATA_LIBDIR_FROM_BINDIR "/libstrata.so",
                                       dir + "/../lib/libstrata.so", dir + "/libstrata.so"})
    if (access(candidate.c_str(), R_OK) == 0) return fs::weakly_canonical(candidate).string();
  return "";
}

std::string sibling_library(const std::string& runtime, const char* name) {
  std::string path = (fs::path(runtime).parent_path() / name).string();
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

void prepend_env(const char* name, const std::string& value, char sep) {
  const char* old = getenv(name);
  std::string v = value;
  if (old != nullptr && *old != '\0') v += sep + std::string(old);
  setenv(name, v.c_str(), 1);
}

struct RecordOptions {
  Level level = Level::kModel;
  std::string buffer_mb, compress = "0";  // buffer_mb empty: the runtime's growing default
  std::string gpu_metrics;                // --metrics: read by the CUPTI collector (STRATA_GPU_METRICS)
  bool gpu_pc_sampling = false;           // --gpu-pc-sampling (STRATA_GPU_PC_SAMPLING=mode)
  std::string gpu_pc_sampling_mode;       // --gpu-pc-sampling-mode (empty: continuous)
  std::string onednn_mode;                // --onednn: read by libstrata_onednn.so (STRATA_ONEDNN_MODE)
  bool serialize = false;
  int sample_hz = 0;  // --sample: CPU sampling rate (0: off)
  std::string unwind = "fp";
  std::string runtime, onednn_tracer, sampler, python_dir;
  std::string traceparent;
  std::string malloc_mode{format::keys::kMallocPinned};  // --malloc
  MallocPlan malloc_plan;
};

struct RunOutcome {
  std::string dir;  // the run's directory of per-process files (inside the private work directory)
  int dir_fd = -1;  // held open: the files are read back relative to it
  int64_t wall_ns = 0;
  int exit_code = 0;
  std::string outcome;
  bool started = false;
  int exec_errno = 0;  // the command could not be started (execvp failed)
  pid_t pid = 0;       // the command's process
};

// Whether the recorded processes are asked for oneDNN's perf maps (the user did not choose).
bool asks_for_jit_maps(const RecordOptions& opt) {
  return opt.sample_hz > 0 && getenv("ONEDNN_JIT_PROFILE") == nullptr && getenv("DNNL_JIT_PROFILE") == nullptr;
}

// The child's environment: the runtime preloaded, writing into `parts`, at `level`.
void set_child_environment(const RecordOptions& opt, int lv, const std::string& parts) {
  // Library level: the oneDNN interposer rides along (it must precede libdnnl in lookup order).
  if (lv >= static_cast<int>(Level::kLibrary) && !opt.onednn_tracer.empty())
    prepend_env("LD_PRELOAD", opt.onednn_tracer, ':');
  if (opt.sample_hz > 0) {  // the sampler rides on the runtime's session (loaded after it)
    prepend_env("LD_PRELOAD", opt.sampler, ':');
    setenv(env::kSample, std::to_string(opt.sample_hz).c_str(), 1);
    setenv(env::kSampleUnwind, opt.unwind.c_str(), 1);
    // oneDNN's JIT kernels (PyTorch's CPU convolutions) run from anonymous memory: with a perf map
    // (/tmp/perf-PID.map) the sampler names them (sample/jit_map.h). Asked for only when the user
    // did not choose; the sampler removes the file it caused at exit (STRATA_SAMPLE_JIT_MAP_OWNED),
    // the recorder what a process left (jit_map_cleanup.h).
    if (asks_for_jit_maps(opt)) ask_for_jit_map_in_child();
  } else {
    unsetenv(env::kSample);
  }
  prepend_env("LD_PRELOAD", opt.runtime, ':');
  // From a bundle: the node's libstdc++ first when it is at least as new as the bundled copy.
  const std::string system_cxx = newer_system_libstdcxx(opt.runtime, default_system_library_dirs());
  if (!system_cxx.empty()) prepend_env("LD_PRELOAD", system_cxx, ':');
  setenv(env::kOutputDir, parts.c_str(), 1);
  unsetenv(env::kOutput);
  setenv(env::kLevel, std::to_string(lv).c_str(), 1);
  if (opt.buffer_mb.empty())
    unsetenv(env::kBufferMb);
  else
    setenv(env::kBufferMb, opt.buffer_mb.c_str(), 1);
  setenv(env::kCompress, opt.compress.c_str(), 1);
  setenv(env::kLib, opt.runtime.c_str(), 1);
  // GPU environment setup (owned by "gpu"): NVTX / cuDNN+cuBLAS / CUPTI by level. Keep it one call.
  add_gpu_record_env(lv, opt.runtime);
  if (!opt.gpu_metrics.empty()) setenv(env::kGpuMetrics, opt.gpu_metrics.c_str(), 1);
  if (opt.gpu_pc_sampling)
    setenv(env::kGpuPcSampling,
           opt.gpu_pc_sampling_mode.empty() ? "continuous" : opt.gpu_pc_sampling_mode.c_str(), 1);
  if (!opt.onednn_mode.empty()) setenv(env::kOnednnMode, opt.onednn_mode.c_str(), 1);
  // A root context: every process of the command shares this trace id.
  setenv("TRACEPARENT", opt.traceparent.c_str(), 1);
  apply_malloc_plan(opt.malloc_plan);
  if (!opt.python_dir.empty()) {
    prepend_env("PYTHONPATH", opt.python_dir, ':');
    // Framework tracers (PyTorch ops) arm themselves from a sitecustomize when torch is imported.
    if (lv >= static_cast<int>(Level::kLayer))
      prepend_env("PYTHONPATH", opt.python_dir + "/strata/_startup", ':');
  }
  if (opt.serialize) {  // XSP III-A: one thread of intra-op work, synchronous device work
    setenv("OMP_NUM_THREADS", "1", 1);
    setenv("MKL_NUM_THREADS", "1", 1);
    setenv("CUDA_LAUNCH_BLOCKING", "1", 1);
  }
}

// Runs the command once at `level`, its processes writing into run->dir. A pipe closed by exec
// tells a command that never started (errno written back) from one that started and failed.
void run_once(char** command, const RecordOptions& opt, Level level, RunOutcome* run) {
  const int lv = static_cast<int>(level);
  int exec_pipe[2];
  if (pipe2(exec_pipe, O_CLOEXEC) != 0) {
    run->outcome = std::string("cannot create a pipe: ") + std::strerror(errno);
    run->exit_code = 1;
    return;
  }
  const pid_t recorder = getpid();
  int64_t start_ns = collect::monotonic_ns();
  pid_t child = fork();
  if (child < 0) {
    run->outcome = std::string("fork failed: ") + std::strerror(errno);
    run->exit_code = 1;
    close(exec_pipe[0]);
    close(exec_pipe[1]);
    return;
  }
  if (child == 0) {
    close(exec_pipe[0]);
    prepare_child_signals(recorder);
    set_child_environment(opt, lv, run->dir);
    execvp(command[0], command);
    int err = errno;
    ssize_t ignored = write(exec_pipe[1], &err, sizeof(err));
    (void)ignored;
    _exit(127);
  }
  close(exec_pipe[1]);
  set_forwarded_child(child);
  run->pid = child;
  int err = 0;
  ssize_t n;
  while ((n = read(exec_pipe[0], &err, sizeof(err))) < 0 && errno == EINTR) {
  }
  close(exec_pipe[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  set_forwarded_child(0);
  run->wall_ns = collect::monotonic_ns() - start_ns;
  if (n == static_cast<ssize_t>(sizeof(err))) {
    run->exec_errno = err;
    run->exit_code = 127;
    run->outcome = std::string("cannot run ") + command[0] + ": " + std::strerror(err);
    if (err == ENOENT && std::strchr(command[0], '/') == nullptr) run->outcome += " (not found on PATH)";
    return;
  }
  run->started = true;
  if (WIFEXITED(status)) {
    run->exit_code = WEXITSTATUS(status);
    run->outcome = "exited with code " + std::to_string(run->exit_code);
  } else if (WIFSIGNALED(status)) {
    run->exit_code = 128 + WTERMSIG(status);
    run->outcome = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                   strsignal(WTERMSIG(status)) + ")";
  }
}

// Levels a --leveled experiment runs at: model, then each tracer level down to `deepest`.
std::vector<Level> leveled_levels(Level deepest) {
  std::vector<Level> out;
  for (Level l : {Level::kModel, Level::kLayer, Level::kLibrary, Level::kRuntimeApi, Level::kDevice})
    if (static_cast<int>(l) <= static_cast<int>(deepest)) out.push_back(l);
  if (out.empty()) out.push_back(deepest);
  return out;
}

// What the command line asked for.
struct RecordRequest {
  RecordOptions opt;
  std::string output, level_text = "layer";
  int runs = 1;
  bool keep_parts = false, quiet = false, leveled = false, force = false;
  int command_index = 0;  // argv index of the command
};

// Declares record's options (the text of `strata record --help`).
void describe_record(CommandLine& cl, RecordRequest* req) {
  RecordOptions& opt = req->opt;
  CLI::App& app = cl.app();
  cl.add_output(
      &req->output,
      "trace file to write (default: strata-<date>-<time>.strata); never written through a symbolic link");
  cl.add_force(&req->force);
  app.add_option(
         "--level", req->level_text,
         "deepest level to record: application, model, layer (default: PyTorch ops with shapes and module "
         "paths), library (oneDNN primitives), runtime, device")
      ->check(CLI::IsMember({"application", "model", "layer", "library", "runtime", "device"}))
      ->type_name("LEVEL");
  app.add_option(
         "--onednn", opt.onednn_mode,
         "how --level library traces oneDNN: auto (default: interposer, and oneDNN's verbose output for "
         "what it cannot see, e.g. oneDNN linked statically), interpose, verbose, off")
      ->check(CLI::IsMember({"auto", "interpose", "verbose", "off"}))
      ->type_name("MODE");
  app.add_option("--runs", req->runs,
                 "run the command N times into one trace (processes tagged with property run=<index>)")
      ->check(positive_count(10000))
      ->type_name("N");
  app.add_flag(
      "--leveled", req->leveled,
      "run at each level from model down to LEVEL (N times each; N >= 3 measures noise): every run is "
      "kept as recorded, analyses time each level by the runs where it was the deepest traced; prints "
      "what tracing each level adds, with its run-to-run spread");
  app.add_flag(
      "--serialize", opt.serialize,
      "run with OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, CUDA_LAUNCH_BLOCKING=1 (no overlapping work, so "
      "parents are unambiguous)");
  app.add_option("--malloc", opt.malloc_mode,
                 "pinned (default: glibc's mmap/trim thresholds fixed at 32/64 MiB, so every process runs in one "
                 "allocator regime and recordings compare; docs/diff.md) or default (glibc's dynamic thresholds). "
                 "The command's own MALLOC_*_THRESHOLD_ or glibc.malloc tunables are kept either way")
      ->check(CLI::IsMember({std::string(format::keys::kMallocPinned), std::string(format::keys::kMallocDefault)}))
      ->type_name("MODE");
  app.add_option(
         "--metrics", opt.gpu_metrics,
         "per-kernel GPU metrics with --level device: flops,dram,occupancy (CUPTI Range Profiler). Refused "
         "unless STRATA_GPU_METRICS_UNVALIDATED=1: on an H100 it hung (docs/gpu-collector.md); measure with "
         "ncu and `strata import --metrics NCU.csv --into TRACE` instead")
      ->type_name("LIST");
  app.add_flag("--gpu-pc-sampling", opt.gpu_pc_sampling,
               "with --level device: sample the GPU's program counters (CUPTI PC sampling, CUDA 13): stall "
               "reasons per kernel, PC and source line (strata analyze --analysis gpu_stalls)");
  app.add_option("--gpu-pc-sampling-mode", opt.gpu_pc_sampling_mode,
                 "continuous (default: kernels run concurrently) or serialized (kernels serialized; each "
                 "sample names its launch)")
      ->check(CLI::IsMember({"continuous", "serialized"}))
      ->type_name("MODE");
  app.add_option(
         "--buffer-mb", opt.buffer_mb,
         "event buffer budget per process in MiB, fixed; overflow is dropped and counted (default: 64, "
         "growing under bursts up to 1/16 of memory, at most 512)")
      ->check(number_in(1, 1 << 20, "a number of MiB from 1"))
      ->type_name("N");
  app.add_option("--compress", opt.compress, "zstd level for chunks (default 0: uncompressed)")
      ->check(CLI::Range(0, 19))
      ->type_name("N");
  // A flag with an optional value: --sample is 999 Hz, --sample=HZ sets the rate (a separate word
  // after --sample is the command, as before).
  app.add_flag(
         "--sample{999}", opt.sample_hz,
         "--sample[=HZ]: sample CPU stacks (default 999 Hz per thread of CPU time), each attributed to the "
         "span open on its thread; Python frames for CPython 3.11. Read with `strata profile`")
      ->check(CLI::Range(1, 10000));
  app.add_option(
         "--unwind", opt.unwind,
         "stacks of --sample: fp (frame pointers, the kernel's callchain; default) or dwarf (registers and "
         "16 KiB of stack copied per sample, unwound with the binaries' CFI: code without frame pointers "
         "and system libraries unwind fully)")
      ->check(CLI::IsMember({"fp", "dwarf"}))
      ->type_name("MODE");
  app.add_flag("--keep-parts", req->keep_parts,
               "keep the per-process files (in OUT.parts.XXXXXX/, a private directory)");
  app.footer(
      "CMD runs with libstrata preloaded; the first word that is not an option starts it (the -- before it "
      "is "
      "optional). Ctrl-C reaches CMD as it would without strata; the trace is still written. If the recorder "
      "is killed, CMD gets SIGTERM and its files stay in OUT.parts.XXXXXX/ (read them with strata info "
      "DIR).");
  app.prefix_command();  // everything from CMD on is CMD's
}

// Parses the options; returns -1 to go on, or the exit code to return (help, bad usage).
int parse_record_args(int argc, char** argv, RecordRequest* req) {
  RecordOptions& opt = req->opt;
  CommandLine cl(
      "record",
      "Run a command with tracing and write one trace of all its processes (children included); print "
      "a summary. --runs repeats the command; --leveled runs it once per level set and measures what "
      "tracing each level adds.");
  describe_record(cl, req);
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  req->quiet = is_quiet();
  std::vector<std::string> rest = cl.app().remaining();
  int i = argc - static_cast<int>(rest.size());
  if (!rest.empty() && rest[0] == "--")
    ++i;
  else if (!rest.empty() && rest[0].size() > 1 && rest[0][0] == '-')
    return cl.usage_error("unknown option " + rest[0]);
  if (i >= argc) return cl.usage_error("no command given");
  req->command_index = i;
  opt.level = *parse_level(req->level_text);
  if (!opt.gpu_metrics.empty() && opt.level < Level::kDevice)
    return cl.usage_error("--metrics measures kernels: use it with --level device");
  if (opt.gpu_pc_sampling && opt.level < Level::kDevice)
    return cl.usage_error("--gpu-pc-sampling samples kernels: use it with --level device");
  if (opt.sample_hz > 0 && (req->runs > 1 || req->leveled))
    return cl.usage_error(
        "--sample records one run: combining the samples of --runs/--leveled runs is not supported");
  std::string error;
  if (refuse_gzip_native(req->output, &error)) return cl.usage_error(error);
  return -1;
}

// Merges the single run's per-process files into the output.
bool finish_single(const RunOutcome& run, format::Properties record, OutputFile* out,
                   std::vector<std::string>* warnings, std::string* error) {
  format::PartFiles parts = format::list_part_files(run.dir_fd, run.dir);
  record.set_int("process_files", static_cast<int64_t>(parts.names.size()));
  format::MergeResult merged = format::merge_part_files(run.dir_fd, run.dir, parts, out->temp_path(), record);
  if (!merged.ok) {
    *error = merged.error;
    return false;
  }
  *warnings = merged.warnings;
  return out->commit(error);
}

// Repeated or leveled runs: each run merged and loaded, then appended and tagged (leveled runs also
// measured against each other, src/runs/leveled.h) and saved.
bool finish_runs(const RecordRequest& req, const std::vector<Level>& levels,
                 const std::vector<std::vector<RunOutcome>>& outcomes, bool failed, format::Properties record,
                 OutputFile* out, std::vector<std::string>* warnings, std::string* leveled_text,
                 std::string* error) {
  std::vector<std::vector<std::unique_ptr<trace::Trace>>> traces(levels.size());
  std::vector<std::vector<runs::RunInput>> inputs(levels.size());
  int64_t process_files = 0;
  for (size_t j = 0; j < levels.size(); ++j) {
    for (size_t r = 0; r < outcomes[j].size(); ++r) {
      const RunOutcome& run = outcomes[j][r];
      format::PartFiles parts = format::list_part_files(run.dir_fd, run.dir);
      std::string run_file = run.dir + ".strata";  // inside the private work directory
      format::MergeResult merged =
          format::merge_part_files(run.dir_fd, run.dir, parts, run_file, format::Properties());
      for (const auto& w : merged.warnings) warnings->push_back(w);
      auto trace = std::make_unique<trace::Trace>();
      if (!merged.ok || !trace::load_trace(run_file, trace.get(), error)) {
        if (!merged.ok) *error = merged.error;
        return false;
      }
      process_files += static_cast<int64_t>(parts.names.size());
      record.set_int("run." + level_name(levels[j]) + "." + std::to_string(r) + ".wall_ns", run.wall_ns);
      inputs[j].push_back({trace.get(), run.wall_ns});
      traces[j].push_back(std::move(trace));
    }
  }
  record.set_int("process_files", process_files);
  record.set_int("runs", req.runs);
  trace::Trace combined;
  if (req.leveled && levels.size() > 1 && !failed) {
    std::vector<int> level_values;
    for (Level l : levels) level_values.push_back(static_cast<int>(l));
    runs::LeveledResult result = runs::combine_leveled(level_values, inputs);
    runs::describe_leveled(result, &record);
    *leveled_text = runs::format_leveled(result);
    combined = std::move(result.trace);
  } else {
    if (req.leveled && failed)
      warnings->push_back("a run failed: the leveled runs were not combined; every run is kept");
    for (size_t j = 0; j < levels.size(); ++j)
      for (size_t r = 0; r < inputs[j].size(); ++r)
        runs::append_trace(combined, *inputs[j][r].trace,
                           {{"run", std::to_string(r)}, {"run.level", level_name(levels[j])}});
  }
  for (size_t k = 0; k < warnings->size(); ++k) record.set("warning." + std::to_string(k), (*warnings)[k]);
  combined.record = record;
  if (!trace::save_trace(combined, out->temp_path(), error, std::atoi(req.opt.compress.c_str())))
    return false;
  return out->commit(error);
}

// The three lines of `strata summary` (export/summary_render.h: short_summary) for the written trace.
// Loading a trace costs memory in proportion to its spans, while the rest of the recorder's summary
// is streamed (its memory does not grow with the trace): a trace of more than kShortAnswerMaxSpans
// (~100-200 MB loaded) is not loaded, and one line says to run `strata summary`.
void print_short_answer(const std::string& path, uint64_t spans) {
  constexpr uint64_t kShortAnswerMaxSpans = uint64_t{1} << 20;
  if (spans == 0) return;
  if (spans > kShortAnswerMaxSpans) {
    std::fprintf(stderr, "strata record: run `strata summary %s` for the bottleneck and findings\n",
                 exporter::escape_terminal(path).c_str());
    return;
  }
  trace::Trace trace;
  std::string error;
  if (!load_native_or_import(path, &trace, &error)) return;
  const analysis::RunSummary summary = analysis::summarize_run(trace, trace.tree());
  std::fputs(exporter::short_summary(trace, summary).c_str(), stderr);
}

// The closing summary, streamed from the written trace (memory independent of its size).
void print_closing_summary(const RecordRequest& req, const RunOutcome& last, int64_t total_wall,
                           size_t process_files, const std::string& leveled_text,
                           const std::vector<std::string>& warnings) {
  std::fprintf(stderr, "\nstrata record: %s, wall time %s\n", last.outcome.c_str(),
               format_duration_ns(total_wall).c_str());
  if (process_files == 0)
    std::fprintf(stderr,
                 "strata record: no process of the command loaded the Strata runtime (a static or "
                 "setuid binary ignores LD_PRELOAD); the trace holds only the run record\n");
  trace::TraceSummary summary;
  std::string error;
  const bool summarized = trace::summarize_file(req.output, &summary, &error);
  if (summarized) {
    print_summary(summary, stderr);
    if (auto note = gpu_outcome_note(summary, static_cast<int>(req.opt.level)))
      std::fprintf(stderr, "strata record: %s\n", exporter::escape_terminal(*note).c_str());
  } else
    std::fprintf(stderr, "strata record: %s\n", exporter::escape_terminal(error).c_str());
  if (!leveled_text.empty()) std::fputs(leveled_text.c_str(), stderr);
  if (summarized) print_short_answer(req.output, summary.spans);
  for (size_t k = 0; k < warnings.size() && k < 5; ++k)
    std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(warnings[k]).c_str());
  std::fprintf(stderr, "trace written to %s\n", exporter::escape_terminal(req.output).c_str());
}

// Finds the runtime and its companions next to the tool; false (message printed) when missing.
bool locate_runtime(RecordRequest* req) {
  RecordOptions& opt = req->opt;
  opt.runtime = find_runtime_library();
  if (opt.runtime.empty()) {
    fail("record", "libstrata.so not found next to the strata executable (" + executable_dir() +
                       "/../lib); reinstall Strata or run it from its build tree");
    return false;
  }
  opt.onednn_tracer = sibling_library(opt.runtime, "libstrata_onednn.so");
  if (static_cast<int>(opt.level) >= static_cast<int>(Level::kLibrary) && opt.onednn_tracer.empty() &&
      !req->quiet)
    std::fprintf(stderr,
                 "strata record: libstrata_onednn.so not found next to %s; oneDNN primitives "
                 "will not be traced (build Strata with libdnnl-dev installed)\n",
                 opt.runtime.c_str());
  opt.python_dir = find_python_package_dir();
  if (opt.sample_hz > 0) {
    opt.sampler = sibling_library(opt.runtime, "libstrata_sample.so");
    if (opt.sampler.empty()) {
      fail("record", "--sample: libstrata_sample.so not found next to " + opt.runtime +
                         " (build Strata with libunwind-dev installed)");
      return false;
    }
  }
  return true;
}

// A work directory of an earlier recording to the same output that did not finish is kept, never
// deleted: say where it is and how to read it.
void note_leftover_work_dirs(const std::string& output) {
  for (const std::string& dir : leftover_work_dirs(output))
    std::fprintf(stderr,
                 "strata record: note: %s is left from a recording that did not finish; it is kept (read it "
                 "with `strata info %s`, remove it when done)\n",
                 exporter::escape_terminal(dir).c_str(), exporter::escape_terminal(dir).c_str());
}

// GPU levels on a machine that cannot run GPU work: say so once (the note is also stored in the
// trace), record the CPU levels. Empty when the request needs no GPU or one is usable.
std::string gpu_unavailable_note(const RecordRequest& req) {
  const RecordOptions& opt = req.opt;
  if (static_cast<int>(opt.level) < static_cast<int>(Level::kRuntimeApi) && opt.gpu_metrics.empty())
    return {};
  auto why = gpu_unavailable_reason();
  if (!why) return {};
  std::string note = "--level " + req.level_text +
                     (opt.gpu_metrics.empty() ? "" : " --metrics " + opt.gpu_metrics) +
                     std::string(opt.gpu_pc_sampling ? " --gpu-pc-sampling" : "") +
                     ": no GPU work can be recorded here: " + *why +
                     "; only the CPU levels are recorded (run on a machine with an NVIDIA GPU and driver; on "
                     "CPU, --level library traces oneDNN)";
  std::fprintf(stderr, "strata record: %s\n", exporter::escape_terminal(note).c_str());
  return note;
}

}  // namespace

int run_record(int argc, char** argv) {
  RecordRequest req;
  if (int code = parse_record_args(argc, argv, &req); code >= 0) return code;
  RecordOptions& opt = req.opt;
  const int i = req.command_index;
  if (req.output.empty()) req.output = default_output();
  // Checked before the command runs: a long recording must not end in "cannot write".
  std::string error;
  if (!check_output_target(req.output, req.force, &error)) return fail("record", error);
  if (!locate_runtime(&req)) return 2;
  if (!req.quiet) note_leftover_work_dirs(req.output);

  // The processes' files go to a fresh private directory next to the output (same file system).
  PrivateDir work;
  if (!work.create(fs::absolute(req.output).string() + ".parts.", &error)) return fail("record", error, 1);

  collect::TraceContext context = collect::new_trace_context();
  context.parent_span_id = 0;
  opt.malloc_plan = plan_malloc(opt.malloc_mode);
  opt.traceparent = "00-" + context.trace_id_hex() + "-" + collect::hex16(collect::random_u64() | 1) + "-01";
  std::string command_line;
  for (int k = i; k < argc; ++k) command_line += (k > i ? " " : "") + std::string(argv[k]);

  install_signal_handling();

  const std::string gpu_note = gpu_unavailable_note(req);
  const std::vector<Level> levels = req.leveled ? leveled_levels(opt.level) : std::vector<Level>{opt.level};
  if (req.leveled && levels.size() == 1 && !req.quiet)
    std::fprintf(stderr,
                 "strata record: --leveled with --level %s has a single level to run; give a deeper "
                 "--level (e.g. layer, library) to measure what each level adds\n",
                 req.level_text.c_str());
  const bool single = levels.size() == 1 && req.runs == 1;
  int64_t start_real = collect::realtime_ns();
  int64_t total_wall = 0;
  std::vector<std::vector<RunOutcome>> outcomes(levels.size());
  RunOutcome last;
  bool failed = false;
  size_t process_files = 0;
  // Repetitions rotate through the levels (model, layer, ..., model, layer, ...) so that drift in the
  // machine's load or a cold first start falls on every level alike, not on the one run first.
  for (int r = 0; r < req.runs && !failed; ++r) {
    for (size_t j = 0; j < levels.size() && !failed; ++j) {
      RunOutcome run;
      if (single) {
        run.dir = work.path();
        run.dir_fd = work.fd();
      } else {
        std::string name = level_name(levels[j]) + "-" + std::to_string(r);
        run.dir = work.path() + "/" + name;
        run.dir_fd = work.make_subdir(name, &error);
        if (run.dir_fd < 0) return fail("record", error + " (earlier runs kept in " + work.path() + ")", 1);
        if (!req.quiet)
          std::fprintf(stderr, "strata record: run %d/%d at level %s\n", r + 1, req.runs,
                       level_name(levels[j]).c_str());
      }
      run_once(argv + i, opt, levels[j], &run);
      if (run.exec_errno != 0 || !run.started) {
        // Nothing ran: no trace. Earlier runs' files (if any) stay where the message says.
        if (r == 0 && j == 0) {
          work.remove(&error);
          return fail("record", run.outcome, run.exit_code ? run.exit_code : 1);
        }
        return fail("record", run.outcome + " (earlier runs' files kept in " + work.path() + ")",
                    run.exit_code ? run.exit_code : 1);
      }
      total_wall += run.wall_ns;
      process_files += format::list_part_files(run.dir_fd, run.dir).names.size();
      last = run;
      // A failing run ends the experiment: later runs would measure a different program.
      if (run.exit_code != 0) failed = true;
      outcomes[j].push_back(std::move(run));
    }
  }

  // File times are the kernel's coarse clock: a second of slack, far shorter than any pid reuse.
  // The command's own map too: the recorder created it, even where no runtime ran (a static binary).
  if (single && asks_for_jit_maps(opt)) {
    std::vector<std::string> pids = format::list_part_files(last.dir_fd, last.dir).names;
    pids.push_back(std::to_string(last.pid) + ".strata");
    remove_leftover_jit_maps(pids, start_real - 1'000'000'000);
  }

  format::Properties record;
  record.set("command", command_line);
  record.set("outcome", last.outcome);
  record.set_int("exit_code", last.exit_code);
  record.set_int("wall_ns", total_wall);
  record.set_int("start_realtime_ns", start_real);
  record.set_int("level", static_cast<int>(opt.level));
  record.set("trace_id", context.trace_id_hex());
  record.set(std::string(format::keys::kRecordMalloc), opt.malloc_plan.record);
  if (opt.serialize) record.set("serialized", "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_LAUNCH_BLOCKING=1");
  if (!gpu_note.empty()) record.set("gpu.unavailable", gpu_note);
  std::vector<std::string> warnings;
  std::string leveled_text;

  OutputFile out;
  bool written = work.verify(&error) && out.begin(req.output, req.force, &error);
  if (written)
    written =
        single ? finish_single(last, record, &out, &warnings, &error)
               : finish_runs(req, levels, outcomes, failed, record, &out, &warnings, &leveled_text, &error);
  for (auto& per_level : outcomes)
    for (RunOutcome& run : per_level)
      if (run.dir_fd != work.fd() && run.dir_fd >= 0) close(run.dir_fd);
  if (!written) {
    fail("record", out.about_target(error) + " (per-process files kept in " + work.path() + ")");
    return last.exit_code ? last.exit_code : 1;
  }
  if (req.keep_parts) {
    if (!req.quiet)
      std::fprintf(stderr, "strata record: per-process files kept in %s\n",
                   exporter::escape_terminal(work.path()).c_str());
  } else if (!work.remove(&error)) {
    std::fprintf(stderr, "strata record: warning: %s\n", exporter::escape_terminal(error).c_str());
  }
  if (!req.quiet) print_closing_summary(req, last, total_wall, process_files, leveled_text, warnings);
  return last.exit_code;
}

}  // namespace strata::cli
