// Nsight Systems SQLite import throughput on the largest shared export (CloverLeaf, A100, schema
// 3.13.2): SQL reads, translation and the Kineto conversion, then the builder's sort (structure off).
// Rows are the activity rows of the file (kernels, memcpy, memset, sync, runtime, OS runtime).
// Run: bench_nsys_import --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>

#include "import/nsys_sqlite_reader.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace {

const std::string kFile =
    std::string(STRATA_SOURCE_DIR) + "/tests/data/nsys/a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite";

void BM_NsysImport(benchmark::State& state) {
  if (!std::filesystem::exists(kFile)) {
    state.SkipWithError("missing tests/data/nsys/a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite");
    return;
  }
  uint64_t rows = 0;
  for (auto _ : state) {
    strata::trace::Trace trace;
    strata::trace::TraceBuilder builder(&trace);
    std::string error;
    strata::import::ImportStats stats;
    if (!strata::import::import_nsys_sqlite(kFile, builder, &error, &stats)) {
      state.SkipWithError(error.c_str());
      return;
    }
    builder.finish({.structure = false, .tree = {}});
    rows = trace.spans.size();
    benchmark::DoNotOptimize(trace.spans.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(rows * state.iterations()));
  state.counters["spans"] = static_cast<double>(rows);
}
BENCHMARK(BM_NsysImport)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
