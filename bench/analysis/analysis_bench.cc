// `strata analyze` pipeline on a generated 1M-span trace: open the file (read, sort once, tracks and
// span tree), build the workload, run the default analyses and render them as CSV (target: <= 2 s).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <sstream>
#include <string>

#include "analysis/pipeline.h"
#include "export/table_render.h"
#include "synthetic_trace.h"
#include "trace/span_tree.h"
#include "trace/trace_loader.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

namespace {

using namespace strata;

const std::string& trace_file(size_t spans) {
  static std::string path;
  if (path.empty()) {
    path = (std::filesystem::temp_directory_path() /
            ("strata-analysis-bench-" + std::to_string(getpid()) + ".strata"))
               .string();
    trace::Trace t = bench::synthetic_gpu_trace(spans);
    std::string error;
    if (!trace::save_trace(t, path, &error))
      std::fprintf(stderr, "cannot write %s: %s\n", path.c_str(), error.c_str());
    std::atexit([] { std::filesystem::remove(path); });
  }
  return path;
}

std::vector<const analysis::Analysis*> default_set() {
  std::vector<const analysis::Analysis*> v;
  for (std::string_view n : analysis::default_analyses()) v.push_back(analysis::find_analysis(n));
  return v;
}

// The whole command: open (load + sort + tracks + tree) + workload + default analyses + CSV.
void BM_AnalyzePipeline(benchmark::State& state) {
  const std::string& path = trace_file(static_cast<size_t>(state.range(0)));
  auto analyses = default_set();
  analysis::Params params;
  size_t spans = 0;
  for (auto _ : state) {
    trace::Trace trace;
    std::string error;
    if (!trace::open_trace(path, &trace, &error)) {
      state.SkipWithError(error.c_str());
      break;
    }
    spans = trace.spans.size();
    analysis::PipelineResult r = analysis::run_pipeline(trace, analyses, params);
    std::ostringstream out;
    for (auto& [a, result] : r.results)
      exporter::render_tables(result.tables, exporter::TableFormat::kCsv, out);
    benchmark::DoNotOptimize(out.str().size());
  }
  state.counters["spans"] = static_cast<double>(spans);
}
BENCHMARK(BM_AnalyzePipeline)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// The stages separately, to see where the time goes.
void BM_LoadOnly(benchmark::State& state) {
  const std::string& path = trace_file(1'000'000);
  for (auto _ : state) {
    trace::Trace trace;
    std::string error;
    benchmark::DoNotOptimize(trace::load_trace(path, &trace, &error));
  }
}
BENCHMARK(BM_LoadOnly)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// Opening: load + sort + the tracks table and span tree, built once.
void BM_OpenTrace(benchmark::State& state) {
  const std::string& path = trace_file(1'000'000);
  for (auto _ : state) {
    trace::Trace trace;
    std::string error;
    benchmark::DoNotOptimize(trace::open_trace(path, &trace, &error));
  }
}
BENCHMARK(BM_OpenTrace)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

// The tree (rebuilt each time: the trace keeps the one it built) and the analyses.
void BM_TreeAndAnalyses(benchmark::State& state) {
  const std::string& path = trace_file(1'000'000);
  trace::Trace trace;
  std::string error;
  trace::load_trace(path, &trace, &error);
  auto analyses = default_set();
  analysis::Params params;
  for (auto _ : state) {
    trace.invalidate_structure();
    benchmark::DoNotOptimize(analysis::run_pipeline(trace, analyses, params).results.size());
  }
}
BENCHMARK(BM_TreeAndAnalyses)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1)
    ->Repetitions(5)
    ->ReportAggregatesOnly(true);

}  // namespace

BENCHMARK_MAIN();
