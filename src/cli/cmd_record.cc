// strata record [-o OUT] [--level LEVEL] [--runs N] [--leveled] [--serialize] [...] -- CMD ARGS...
//
// Runs CMD with libstrata preloaded (no change to the program), so every process of the command
// (children included) writes its own trace file into OUT.parts/; when CMD ends, the parts are
// merged into OUT with a Record chunk describing the run, and a summary is printed.
// --runs N repeats the command; --leveled runs it once per level set (XSP III-C), keeps every run as
// recorded and measures what tracing each level adds (src/runs/leveled.h).
#include <signal.h>
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

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/gpu_record_env.h"
#include "collect/clock.h"
#include "collect/trace_context.h"
#include "core/level.h"
#include "format/trace_merge.h"
#include "model/trace_loader.h"
#include "model/trace_saver.h"
#include "runs/leveled.h"
#include "runs/run_set.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: strata record [-o OUT] [--level LEVEL] [--runs N] [--leveled] [--serialize] [--buffer-mb N]\n"
    "                     [--compress N] [--keep-parts] -- CMD [ARGS...]\n"
    "  -o OUT         trace file to write (default: strata-<date>-<time>.strata)\n"
    "  --level LEVEL  deepest level to record: application, model, layer, library, runtime, device (default "
    "layer)\n"
    "                 layer: PyTorch ops (aten::*) with shapes and module paths; library: oneDNN primitives\n"
    "  --onednn MODE  how --level library traces oneDNN: auto (default: interposer, and oneDNN's verbose\n"
    "                 output for what it cannot see, e.g. oneDNN linked statically), interpose, verbose, off\n"
    "  --runs N       run the command N times into one trace (processes tagged with property run=<index>)\n"
    "  --leveled      run at each level from model down to LEVEL (N times each; N >= 3 measures noise): every\n"
    "                 run is kept as recorded, analyses time each level by the runs where it was the deepest\n"
    "                 traced; prints what tracing each level adds, with its run-to-run spread\n"
    "  --serialize    run with OMP_NUM_THREADS=1, MKL_NUM_THREADS=1, CUDA_LAUNCH_BLOCKING=1 (no overlapping\n"
    "                 work, so parents are unambiguous)\n"
    "  --metrics LIST per-kernel GPU metrics with --level device: flops,dram,occupancy (CUPTI Range Profiler,\n"
    "                 kernel replay: slow; GPU machines only)\n"
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
    if (access((candidate + "/strata/__init__.py").c_str(), R_OK) == 0)
      return fs::weakly_canonical(candidate).string();
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
  std::string buffer_mb = "64", compress = "0";
  std::string gpu_metrics;  // --metrics: read by the CUPTI collector (STRATA_GPU_METRICS)
  std::string onednn_mode;  // --onednn: read by libstrata_onednn.so (STRATA_ONEDNN_MODE)
  bool serialize = false;
  std::string runtime, onednn_tracer, python_dir;
  std::string traceparent;
};

struct RunOutcome {
  std::vector<std::string> files;  // per-process trace files of this run
  int64_t wall_ns = 0;
  int exit_code = 0;
  std::string outcome;
  bool started = false;
};

// Runs the command once at `level`, its processes writing into `parts`.
RunOutcome run_once(char** command, const RecordOptions& opt, Level level, const std::string& parts) {
  RunOutcome run;
  std::error_code ec;
  fs::remove_all(parts, ec);
  if (!fs::create_directories(parts, ec) && ec) {
    run.outcome = parts + ": cannot create directory: " + ec.message();
    run.exit_code = 1;
    return run;
  }
  const int lv = static_cast<int>(level);
  int64_t start_ns = collect::monotonic_ns();
  pid_t child = fork();
  if (child < 0) {
    run.outcome = std::string("fork failed: ") + std::strerror(errno);
    run.exit_code = 1;
    return run;
  }
  if (child == 0) {
    // Library level: the oneDNN interposer rides along (it must precede libdnnl in lookup order).
    if (lv >= static_cast<int>(Level::kLibrary) && !opt.onednn_tracer.empty())
      prepend_env("LD_PRELOAD", opt.onednn_tracer, ':');
    prepend_env("LD_PRELOAD", opt.runtime, ':');
    setenv("STRATA_OUTPUT_DIR", fs::absolute(parts).c_str(), 1);
    unsetenv("STRATA_OUTPUT");
    setenv("STRATA_LEVEL", std::to_string(lv).c_str(), 1);
    setenv("STRATA_BUFFER_MB", opt.buffer_mb.c_str(), 1);
    setenv("STRATA_COMPRESS", opt.compress.c_str(), 1);
    setenv("STRATA_LIB", opt.runtime.c_str(), 1);
    // GPU environment setup (owned by "gpu"): NVTX / cuDNN+cuBLAS / CUPTI by level. Keep it one call.
    add_gpu_record_env(lv, opt.runtime);
    if (!opt.gpu_metrics.empty()) setenv("STRATA_GPU_METRICS", opt.gpu_metrics.c_str(), 1);
    if (!opt.onednn_mode.empty()) setenv("STRATA_ONEDNN_MODE", opt.onednn_mode.c_str(), 1);
    // A root context: every process of the command shares this trace id.
    setenv("TRACEPARENT", opt.traceparent.c_str(), 1);
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
    execvp(command[0], command);
    std::fprintf(stderr, "strata record: cannot run %s: %s\n", command[0], std::strerror(errno));
    _exit(127);
  }
  run.started = true;
  g_child = child;
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  g_child = 0;
  run.wall_ns = collect::monotonic_ns() - start_ns;
  if (WIFEXITED(status)) {
    run.exit_code = WEXITSTATUS(status);
    run.outcome = "exited with code " + std::to_string(run.exit_code);
  } else if (WIFSIGNALED(status)) {
    run.exit_code = 128 + WTERMSIG(status);
    run.outcome = std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                  strsignal(WTERMSIG(status)) + ")";
  }
  for (const auto& entry : fs::directory_iterator(parts, ec))
    if (entry.path().extension() == ".strata") run.files.push_back(entry.path());
  std::sort(run.files.begin(), run.files.end());
  return run;
}

// Levels a --leveled experiment runs at: model, then each tracer level down to `deepest`.
std::vector<Level> leveled_levels(Level deepest) {
  std::vector<Level> out;
  for (Level l : {Level::kModel, Level::kLayer, Level::kLibrary, Level::kRuntimeApi, Level::kDevice})
    if (static_cast<int>(l) <= static_cast<int>(deepest)) out.push_back(l);
  if (out.empty()) out.push_back(deepest);
  return out;
}

int parse_count(const std::string& text, int* out) {
  char* end = nullptr;
  long v = std::strtol(text.c_str(), &end, 10);
  if (end == text.c_str() || *end != '\0' || v < 1 || v > 10000) return 0;
  *out = static_cast<int>(v);
  return 1;
}

}  // namespace

int run_record(int argc, char** argv) {
  std::string output, level_text = "layer", runs_text = "1";
  RecordOptions opt;
  bool keep_parts = false, quiet = false, leveled = false;
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
        take_option(argc, argv, &i, "--runs", &runs_text, &missing) ||
        take_option(argc, argv, &i, "--buffer-mb", &opt.buffer_mb, &missing) ||
        take_option(argc, argv, &i, "--metrics", &opt.gpu_metrics, &missing) ||
        take_option(argc, argv, &i, "--onednn", &opt.onednn_mode, &missing) ||
        take_option(argc, argv, &i, "--compress", &opt.compress, &missing)) {
      if (missing) return fail("record", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (arg == "--keep-parts") {
      keep_parts = true;
      continue;
    }
    if (arg == "--leveled") {
      leveled = true;
      continue;
    }
    if (arg == "--serialize") {
      opt.serialize = true;
      continue;
    }
    if (arg == "--quiet" || arg == "-q") {
      quiet = true;
      continue;
    }
    if (!arg.empty() && arg[0] == '-')
      return fail("record", "unknown option " + std::string(arg) + "\n" + kUsage);
    break;  // first non-option: the command (the "--" is optional)
  }
  if (i >= argc) return fail("record", std::string("no command given\n") + kUsage);
  auto level = parse_level(level_text);
  if (!level)
    return fail("record", "--level " + level_text +
                              " is not a level (application, model, layer, library, runtime, device)");
  opt.level = *level;
  if (!opt.gpu_metrics.empty() && opt.level < Level::kDevice)
    return fail("record", "--metrics measures kernels: use it with --level device");
  if (!opt.onednn_mode.empty() && opt.onednn_mode != "auto" && opt.onednn_mode != "interpose" &&
      opt.onednn_mode != "verbose" && opt.onednn_mode != "off")
    return fail("record", "--onednn " + opt.onednn_mode + " is not auto, interpose, verbose or off");
  int runs = 1;
  if (!parse_count(runs_text, &runs))
    return fail("record", "--runs " + runs_text + " is not a count from 1 to 10000");
  if (output.empty()) output = default_output();

  opt.runtime = find_runtime_library();
  if (opt.runtime.empty())
    return fail("record", "libstrata.so not found next to the strata executable (" + executable_dir() +
                              "/../lib); reinstall Strata or run it from its build tree");
  opt.onednn_tracer = sibling_library(opt.runtime, "libstrata_onednn.so");
  if (static_cast<int>(opt.level) >= static_cast<int>(Level::kLibrary) && opt.onednn_tracer.empty() && !quiet)
    std::fprintf(stderr,
                 "strata record: libstrata_onednn.so not found next to %s; oneDNN primitives "
                 "will not be traced (build Strata with libdnnl-dev installed)\n",
                 opt.runtime.c_str());
  opt.python_dir = find_python_package_dir();

  std::string parts = output + ".parts";
  std::error_code ec;
  fs::remove_all(parts, ec);
  if (!fs::create_directories(parts, ec) && ec)
    return fail("record", parts + ": cannot create directory: " + ec.message());

  collect::TraceContext context = collect::new_trace_context();
  context.parent_span_id = 0;
  opt.traceparent = "00-" + context.trace_id_hex() + "-" + collect::hex16(collect::random_u64() | 1) + "-01";
  std::string command_line;
  for (int k = i; k < argc; ++k) command_line += (k > i ? " " : "") + std::string(argv[k]);

  // Terminal signals reach the child directly (same process group); others sent to us are passed on.
  signal(SIGINT, SIG_IGN);
  signal(SIGQUIT, SIG_IGN);
  for (int sig : {SIGTERM, SIGHUP, SIGUSR1, SIGUSR2}) signal(sig, forward_signal);

  // GPU levels on a machine that cannot run GPU work: say so once, record the CPU levels.
  std::string gpu_note;
  if (static_cast<int>(opt.level) >= static_cast<int>(Level::kRuntimeApi) || !opt.gpu_metrics.empty()) {
    if (auto why = gpu_unavailable_reason()) {
      gpu_note = "--level " + level_text + (opt.gpu_metrics.empty() ? "" : " --metrics " + opt.gpu_metrics) +
                 ": no GPU work can be recorded here: " + *why +
                 "; only the CPU levels are recorded (run on a machine with an NVIDIA GPU and driver; on "
                 "CPU, --level library traces oneDNN)";
      std::fprintf(stderr, "strata record: %s\n", gpu_note.c_str());
    }
  }
  const std::vector<Level> levels = leveled ? leveled_levels(opt.level) : std::vector<Level>{opt.level};
  if (leveled && levels.size() == 1 && !quiet)
    std::fprintf(stderr,
                 "strata record: --leveled with --level %s has a single level to run; give a deeper "
                 "--level (e.g. layer, library) to measure what each level adds\n",
                 level_text.c_str());
  const bool single = levels.size() == 1 && runs == 1;
  int64_t start_real = collect::realtime_ns();
  int64_t total_wall = 0;
  std::vector<std::vector<RunOutcome>> outcomes(levels.size());
  RunOutcome last;
  bool failed = false;
  // Repetitions rotate through the levels (model, layer, ..., model, layer, ...) so that drift in the
  // machine's load or a cold first start falls on every level alike, not on the one run first.
  for (int r = 0; r < runs && !failed; ++r) {
    for (size_t j = 0; j < levels.size() && !failed; ++j) {
      std::string dir = single ? parts : parts + "/" + level_name(levels[j]) + "-" + std::to_string(r);
      if (!single && !quiet)
        std::fprintf(stderr, "strata record: run %d/%d at level %s\n", r + 1, runs,
                     level_name(levels[j]).c_str());
      RunOutcome run = run_once(argv + i, opt, levels[j], dir);
      total_wall += run.wall_ns;
      last = run;
      // A failing run ends the experiment: later runs would measure a different program.
      if (run.exit_code != 0) failed = true;
      outcomes[j].push_back(std::move(run));
    }
  }
  if (!last.started && last.exit_code != 0) return fail("record", last.outcome);

  format::Properties record;
  record.set("command", command_line);
  record.set("outcome", last.outcome);
  record.set_int("exit_code", last.exit_code);
  record.set_int("wall_ns", total_wall);
  record.set_int("start_realtime_ns", start_real);
  record.set_int("level", static_cast<int>(opt.level));
  record.set("trace_id", context.trace_id_hex());
  if (opt.serialize) record.set("serialized", "OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 CUDA_LAUNCH_BLOCKING=1");
  if (!gpu_note.empty()) record.set("gpu.unavailable", gpu_note);
  std::vector<std::string> warnings;
  std::string leveled_text;

  if (single) {
    record.set_int("process_files", static_cast<int64_t>(last.files.size()));
    format::MergeResult merged = format::merge_trace_files(last.files, output, record);
    if (!merged.ok) {
      fail("record", merged.error + " (per-process files kept in " + parts + ")");
      return last.exit_code ? last.exit_code : 1;
    }
    warnings = merged.warnings;
  } else {
    // Each run merged and loaded, then appended (tagged); leveled runs also measured against each other.
    std::vector<std::vector<std::unique_ptr<model::Trace>>> traces(levels.size());
    std::vector<std::vector<runs::RunInput>> inputs(levels.size());
    int64_t process_files = 0;
    for (size_t j = 0; j < levels.size(); ++j) {
      for (size_t r = 0; r < outcomes[j].size(); ++r) {
        const RunOutcome& run = outcomes[j][r];
        std::string run_file = parts + "/" + level_name(levels[j]) + "-" + std::to_string(r) + ".strata";
        format::MergeResult merged = format::merge_trace_files(run.files, run_file, format::Properties());
        for (const auto& w : merged.warnings) warnings.push_back(w);
        auto trace = std::make_unique<model::Trace>();
        std::string error;
        if (!merged.ok || !model::load_trace(run_file, trace.get(), &error)) {
          fail("record", (merged.ok ? error : merged.error) + " (per-process files kept in " + parts + ")");
          return last.exit_code ? last.exit_code : 1;
        }
        process_files += static_cast<int64_t>(run.files.size());
        record.set_int("run." + level_name(levels[j]) + "." + std::to_string(r) + ".wall_ns", run.wall_ns);
        inputs[j].push_back({trace.get(), run.wall_ns});
        traces[j].push_back(std::move(trace));
      }
    }
    record.set_int("process_files", process_files);
    record.set_int("runs", runs);
    model::Trace combined;
    if (leveled && levels.size() > 1 && !failed) {
      std::vector<int> level_values;
      for (Level l : levels) level_values.push_back(static_cast<int>(l));
      runs::LeveledResult result = runs::combine_leveled(level_values, inputs);
      runs::describe_leveled(result, &record);
      leveled_text = runs::format_leveled(result);
      combined = std::move(result.trace);
    } else {
      if (leveled && failed)
        warnings.push_back("a run failed: the leveled runs were not combined; every run is kept");
      for (size_t j = 0; j < levels.size(); ++j)
        for (size_t r = 0; r < inputs[j].size(); ++r)
          runs::append_trace(combined, *inputs[j][r].trace,
                             {{"run", std::to_string(r)}, {"run.level", level_name(levels[j])}});
    }
    for (size_t k = 0; k < warnings.size(); ++k) record.set("warning." + std::to_string(k), warnings[k]);
    combined.record = record;
    std::string error;
    int zstd = std::atoi(opt.compress.c_str());
    if (!model::save_trace(combined, output, &error, zstd)) {
      fail("record", error + " (per-process files kept in " + parts + ")");
      return last.exit_code ? last.exit_code : 1;
    }
  }
  if (!keep_parts) fs::remove_all(parts, ec);

  if (!quiet) {
    std::fprintf(stderr, "\nstrata record: %s, wall time %s\n", last.outcome.c_str(),
                 format_duration_ns(total_wall).c_str());
    if (last.files.empty())
      std::fprintf(stderr,
                   "strata record: no process of the command loaded the Strata runtime (a static or "
                   "setuid binary ignores LD_PRELOAD); the trace holds only the run record\n");
    model::Trace trace;
    std::string error;
    if (model::load_trace(output, &trace, &error)) {
      print_summary(trace, stderr);
      if (gpu_note.empty())
        if (auto note = gpu_outcome_note(trace, static_cast<int>(opt.level), !opt.gpu_metrics.empty()))
          std::fprintf(stderr, "strata record: %s\n", note->c_str());
    } else {
      std::fprintf(stderr, "strata record: %s\n", error.c_str());
    }
    if (!leveled_text.empty()) std::fputs(leveled_text.c_str(), stderr);
    for (size_t k = 0; k < warnings.size() && k < 5; ++k)
      std::fprintf(stderr, "warning: %s\n", warnings[k].c_str());
    std::fprintf(stderr, "trace written to %s\n", output.c_str());
  }
  return last.exit_code;
}

}  // namespace strata::cli
