// Import throughput on the real V100 Kineto trace (68,692 events): JSON parse + conversion + sort,
// from bytes already in memory (decompressed once outside the timed loop), and the correlation engine.
// Run: bench_import --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <zlib.h>

#include <fstream>
#include <sstream>
#include <string>

#include "import/importer.h"
#include "model/span_tree.h"

namespace {

const std::string kTrace = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/v100_train_rank0.json.gz";

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string gunzip_file(const std::string& path) {
  std::string out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

void run_import(benchmark::State& state, const std::string& bytes) {
  if (bytes.empty()) {
    state.SkipWithError("cannot read tests/data/kineto/v100_train_rank0.json.gz");
    return;
  }
  uint64_t events = 0;
  for (auto _ : state) {
    strata::model::Trace trace;
    std::string error;
    strata::import::ImportStats stats;
    if (!strata::import::import_buffer_with_stats(bytes, kTrace, &trace, &error, {}, &stats)) {
      state.SkipWithError(error.c_str());
      return;
    }
    events = stats.get(strata::stats::Stat::kImportEventsRead);
    benchmark::DoNotOptimize(trace.spans.data());
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(events) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

// From the .json.gz bytes: inflate + parse + convert + sort.
void BM_ImportKinetoGz(benchmark::State& state) {
  static const std::string gz = read_all(kTrace);
  run_import(state, gz);
}
BENCHMARK(BM_ImportKinetoGz)->Unit(benchmark::kMillisecond);

// From the decompressed JSON: parse + convert + sort.
void BM_ImportKinetoJson(benchmark::State& state) {
  static const std::string json = gunzip_file(kTrace);
  run_import(state, json);
}
BENCHMARK(BM_ImportKinetoJson)->Unit(benchmark::kMillisecond);

void BM_CorrelateV100(benchmark::State& state) {
  strata::model::Trace trace;
  std::string error;
  if (!strata::import::import_trace(kTrace, &trace, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  for (auto _ : state) {
    strata::model::SpanTree tree = strata::model::build_span_tree(trace);
    benchmark::DoNotOptimize(tree.size());
  }
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(trace.spans.size()) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CorrelateV100)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
