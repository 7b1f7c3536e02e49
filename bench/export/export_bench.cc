// Exports of a generated GPU-shaped trace (synthetic_trace.h; ~1M spans by default): the SQLite
// database of `strata export --format sqlite` (a file in the temp directory, indexes included) and
// the CSV export, side by side. The span tree is built before timing (opening a trace builds it).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "export/exporters.h"
#include "export/sqlite_export.h"
#include "synthetic_trace.h"
#include "trace/span_tree.h"

namespace {

using namespace strata;

const trace::Trace& trace_of(size_t spans) {
  static trace::Trace trace;
  if (trace.spans.empty()) {
    trace = bench::synthetic_gpu_trace(spans);
    (void)trace.tree();
  }
  return trace;
}

std::string temp_file(const char* suffix) {
  return (std::filesystem::temp_directory_path() / ("strata-export-bench-" + std::to_string(getpid()) + suffix))
      .string();
}

void BM_ExportSqlite(benchmark::State& state) {
  const trace::Trace& trace = trace_of(static_cast<size_t>(state.range(0)));
  const std::string path = temp_file(".sqlite");
  uintmax_t bytes = 0;
  for (auto _ : state) {
    std::filesystem::remove(path);
    std::string error;
    if (!exporter::write_sqlite_file(trace, path, &error)) state.SkipWithError(error.c_str());
    bytes = std::filesystem::file_size(path);
  }
  std::filesystem::remove(path);
  state.counters["spans"] = static_cast<double>(trace.spans.size());
  state.counters["file_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(trace.spans.size()), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_ExportSqlite)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

void BM_ExportCsv(benchmark::State& state) {
  const trace::Trace& trace = trace_of(static_cast<size_t>(state.range(0)));
  const std::string path = temp_file(".csv");
  for (auto _ : state) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    exporter::write_spans_csv(trace, out);
  }
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  std::filesystem::remove(path);
}
BENCHMARK(BM_ExportCsv)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1)->Repetitions(3);

}  // namespace

BENCHMARK_MAIN();
