// strata bench generate|run MODEL...: per unique layer, the library call a framework would make.
// `generate` writes standalone Google Benchmark sources; `run` times the same calls in-process and
// stores them in the performance database (only what the database lacks for this system).
#include <cstdio>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/lowerbound_options.h"
#include "lowerbound/harness/bench_runner.h"
#include "lowerbound/harness/codegen.h"
#include "lowerbound/perfdb/perf_db.h"

namespace strata::cli {

namespace lb = strata::lowerbound;

namespace {

constexpr const char* kUsage =
    "usage: strata bench generate MODEL.onnx... -o DIR [--backend cpu|cuda] [--dtype fp32,bf16,fp16]\n"
    "                             [--layout nchw,nhwc,blocked] [--fusion]\n"
    "       strata bench run MODEL.onnx... [--db URL] [--backend cpu|cuda] [--dtype ...] [--layout ...]\n"
    "                             [--fusion] [--threads N] [--repetitions N] [--min-time-ms MS]\n"
    "                             [--max-spread F] [--attempts N] [--recheck] [--system-tag TAG]\n"
    "  generate: standalone C++ benchmarks (Google Benchmark) + CMakeLists.txt, one per unique layer,\n"
    "            algorithm, data type and layout.\n"
    "  run:      times them here and stores median, spread and repetitions in the performance database\n"
    "            (--db FILE.sqlite or postgresql://...; default $STRATA_PERF_DB or\n"
    "            ~/.cache/strata/perf.sqlite). Layers the database already has for this system are skipped.\n"
    "  --threads N     library (OpenMP) threads: the framework run's count (default $OMP_NUM_THREADS, else "
    "1;\n"
    "                  PyTorch: torch.get_num_threads()). One thread is timed by its CPU clock, several by\n"
    "                  the wall clock with preempted repetitions discarded, so other processes do not "
    "count.\n"
    "  --max-spread F  a measurement whose interquartile range exceeds F x its median (default 0.1) is\n"
    "                  re-measured, up to --attempts times (default 3); still noisy, the layer is not "
    "stored.\n"
    "  --recheck       also re-measure stored layers whose rows are suspicious (no quality recorded, or "
    "noisy).\n"
    "  cpu backend: oneDNN; cuda backend: cuDNN + cuBLAS (needs a GPU and the CUDA plugin).\n"
    "  --fusion: also each convolution fused with what follows it as oneDNN post-ops: an activation\n"
    "            (Relu, Clip/ReLU6, Sigmoid, Tanh, Elu, LeakyRelu) or a residual Add (+ activation).\n";

// The run's summary on stdout; warnings, re-measured and refused entries on stderr.
void print_run(const CommandOptions& opt, const lb::PerfDb& db, const lb::BenchRunStats& stats) {
  auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("database: %s\n", db.describe().c_str());
  if (opt.bench.backend == "cpu")
    std::printf(
        "threads: %d (%s)\n", stats.threads,
        opt.threads_given ? "--threads" : "$OMP_NUM_THREADS or 1: pass --threads to match the framework run");
  std::printf("machine: %s before, %s after\n", stats.load_before.text().c_str(),
              stats.load_after.text().c_str());
  std::printf("work items (unique layer x dtype x layout%s): %llu\n",
              opt.bench.fusion ? ", plus fused pairs" : "", n(stats.work_items));
  std::printf("  already in the database: %llu\n", n(stats.already_in_db));
  std::printf("  benchmarked now:         %llu (%llu algorithm cases timed, %llu rejected by the library)\n",
              n(stats.benchmarked), n(stats.cases_run), n(stats.cases_unsupported));
  if (opt.bench.recheck) std::printf("  rechecked:               %llu\n", n(stats.rechecked));
  std::printf("  re-measured (noisy):     %llu\n", n(stats.remeasured));
  std::printf("  not stored (noisy):      %llu\n", n(stats.refused));
  std::printf("  without a mapping:       %llu\n", n(stats.unmapped));
  std::printf("layers with no library call (free): %llu\n", n(stats.free_layers));
  std::printf("time: %.1f s\n", stats.seconds);
  for (const std::string& e : stats.remeasured_entries) std::printf("re-measured: %s\n", e.c_str());
  std::fflush(stdout);  // whole lines before the warnings, also when both go to one file
  for (const std::string& e : stats.refused_entries) std::fprintf(stderr, "strata bench: %s\n", e.c_str());
  for (const std::string& w : stats.warnings) std::fprintf(stderr, "strata bench: %s\n", w.c_str());
}

}  // namespace

int run_bench(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string mode = argv[1];
  if (mode != "generate" && mode != "run")
    return fail("bench", "unknown mode '" + mode + "': use generate or run");
  CommandOptions opt;
  std::string error;
  if (!parse_command_options(argc, argv, 2, &opt, &error)) return fail("bench", error);
  if (opt.help) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (opt.models.empty()) return fail("bench", "no model given: strata bench " + mode + " MODEL.onnx...");
  std::vector<lb::LayerModel> models;
  if (!check_inputs(opt.models, InputKind::kFile, &error) || !load_models(opt.models, &models, &error))
    return fail("bench", error, 1);

  if (mode == "generate") {
    if (opt.output.empty()) return fail("bench", "generate needs -o DIR");
    lb::GenerateStats stats;
    if (!lb::generate_benchmarks(models, opt.bench, opt.output, &stats, &error))
      return fail("bench", error, 1);
    std::printf("wrote %llu benchmarks (%s backend) to %s\n",
                static_cast<unsigned long long>(stats.benchmarks), opt.bench.backend.c_str(),
                opt.output.c_str());
    for (const std::string& f : stats.files) std::printf("  %s\n", f.c_str());
    for (const std::string& w : stats.warnings)
      std::fprintf(stderr, "strata bench: not generated: %s\n", w.c_str());
    std::printf("build: cmake -S %s -B %s/build -G Ninja && ninja -C %s/build && %s/build/layer_benchmarks\n",
                opt.output.c_str(), opt.output.c_str(), opt.output.c_str(), opt.output.c_str());
    return 0;
  }

  std::string url = opt.db_url.empty() ? lb::default_perf_db_url() : opt.db_url;
  auto db = lb::open_perf_db(url, &error);
  if (!db) return fail("bench", error, 1);
  lb::BenchRunStats stats;
  if (!lb::run_benchmarks(models, opt.bench, opt.measure, db.get(), &stats, &error, stderr))
    return fail("bench", error, 1);
  print_run(opt, *db, stats);
  return stats.refused > 0 ? 3 : 0;
}

}  // namespace strata::cli
