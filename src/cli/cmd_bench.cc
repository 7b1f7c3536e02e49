// strata bench generate|run MODEL...: per unique layer, the library call a framework would make.
// `generate` writes standalone Google Benchmark sources; `run` times the same calls in-process and
// stores them in the performance database (only what the database lacks for this system).
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/lowerbound_options.h"
#include "cli/safe_files.h"
#include "export/text_escape.h"
#include "lowerbound/harness/bench_runner.h"
#include "lowerbound/harness/codegen.h"
#include "lowerbound/perfdb/perf_db.h"

namespace strata::cli {

namespace lb = strata::lowerbound;

namespace {

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
  for (const std::string& e : stats.refused_entries)
    std::fprintf(stderr, "strata bench: %s\n", exporter::escape_terminal(e).c_str());
  for (const std::string& w : stats.warnings)
    std::fprintf(stderr, "strata bench: %s\n", exporter::escape_terminal(w).c_str());
}

void describe_generate(CommandLine& cl) {
  cl.app().name("strata bench generate");
  cl.app().description(
      "Generate standalone C++ benchmarks (Google Benchmark) and a CMakeLists.txt, one per unique layer, "
      "algorithm, data type and layout of the models.");
}

void describe_run(CommandLine& cl) {
  cl.app().name("strata bench run");
  cl.app().description(
      "Time every unique layer of the models here and store median, spread and repetitions in the "
      "performance "
      "database; layers the database already has for this system are skipped. One thread is timed by its CPU "
      "clock, several by the wall clock with preempted repetitions discarded, so other processes do not "
      "count.");
}

int parse_mode_options(CommandLine& cl, int argc, char** argv, const std::string& mode, CommandOptions* opt) {
  return parse_command_options(
      cl, argc, argv,
      mode == "generate" ? kBenchOptions | kOutputOption : kBenchOptions | kDbOptions | kMeasureOptions, opt);
}

}  // namespace

int run_bench(int argc, char** argv) {
  const std::string mode = argc >= 2 ? argv[1] : "";
  if (mode != "generate" && mode != "run") {
    // `strata bench --help` (or no mode): both modes' help, from their declarations.
    for (const char* m : {"generate", "run"}) {
      CommandOptions unused;
      CommandLine help("bench", "");
      char* args[] = {const_cast<char*>(m), const_cast<char*>("--help")};
      std::string(m) == "generate" ? describe_generate(help) : describe_run(help);
      if (mode == "-h" || mode == "--help") parse_mode_options(help, 2, args, m, &unused);
    }
    if (mode == "-h" || mode == "--help") return 0;
    CommandLine cl("bench", "");
    return cl.usage_error(mode.empty() ? "give a mode: generate or run"
                                       : "unknown mode '" + mode + "': use generate or run");
  }
  CommandOptions opt;
  std::string error;
  CommandLine cl("bench", "");
  mode == "generate" ? describe_generate(cl) : describe_run(cl);
  if (int code = parse_mode_options(cl, argc - 1, argv + 1, mode, &opt); code >= 0) return code;
  if (opt.models.empty()) return cl.usage_error("no model given: strata bench " + mode + " MODEL.onnx...");
  std::vector<lb::LayerModel> models;
  if (!check_inputs(opt.models, InputKind::kFile, &error) || !load_models(opt.models, &models, &error))
    return fail("bench", error, 1);

  if (mode == "generate") {
    if (opt.output.empty()) return cl.usage_error("generate needs -o DIR");
    std::error_code ec;  // the benchmarks' files would replace what is there: only with --force
    if (!opt.force && std::filesystem::exists(opt.output, ec) && !std::filesystem::is_empty(opt.output, ec))
      return fail("bench",
                  opt.output + ": exists and is not empty; pass --force to write the benchmarks into it", 1);
    // As every output directory (safe_files.h): this user's, opened once; each file as every output.
    OutputDir dir;
    if (!dir.open(opt.output, &error)) return fail("bench", error, 1);
    lb::GenerateStats stats;
    const lb::GeneratedFileWriter write = [&](const std::string& name, std::string_view text,
                                              std::string* why) {
      OutputFile file;
      if (!file.begin_in(dir, name, opt.force, why)) return false;
      std::ofstream out(file.temp_path(), std::ios::binary);
      out.write(text.data(), static_cast<std::streamsize>(text.size()));
      out.close();
      if (!out) {
        *why = dir.path() + "/" + name + ": write failed";
        return false;
      }
      if (!file.commit(why)) return false;
      stats.files.push_back(dir.path() + "/" + name);
      return true;
    };
    if (!lb::generate_benchmarks(models, opt.bench, write, &stats, &error)) return fail("bench", error, 1);
    if (is_quiet()) return 0;
    std::printf("wrote %llu benchmarks (%s backend) to %s\n",
                static_cast<unsigned long long>(stats.benchmarks), opt.bench.backend.c_str(),
                opt.output.c_str());
    for (const std::string& f : stats.files) std::printf("  %s\n", f.c_str());
    for (const std::string& w : stats.warnings)
      std::fprintf(stderr, "strata bench: not generated: %s\n", exporter::escape_terminal(w).c_str());
    std::printf("build: cmake -S %s -B %s/build -G Ninja && ninja -C %s/build && %s/build/layer_benchmarks\n",
                opt.output.c_str(), opt.output.c_str(), opt.output.c_str(), opt.output.c_str());
    return 0;
  }

  std::string url = opt.db_url.empty() ? lb::default_perf_db_url() : opt.db_url;
  auto db = lb::open_perf_db(url, &error);
  if (!db) return fail("bench", error, 1);
  lb::BenchRunStats stats;
  // The per-layer progress line only on a terminal (a log file gets the summary alone).
  FILE* progress = isatty(STDERR_FILENO) && !is_quiet() ? stderr : nullptr;
  if (!lb::run_benchmarks(models, opt.bench, opt.measure, db.get(), &stats, &error, progress))
    return fail("bench", error, 1);
  if (!is_quiet()) print_run(opt, *db, stats);  // quiet: the exit code says whether layers were refused
  return stats.refused > 0 ? 3 : 0;
}

}  // namespace strata::cli
