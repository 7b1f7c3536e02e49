// strata merge's work (read the ranks' files, align their clocks, sort once) and the cross-rank
// analyses, on generated ranks (rank_traces.h): 16 ranks x 50k spans here; the full 16 x 1M run is
// scripts/bench_ranks.sh.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "rank_traces.h"
#include "trace/rank_align.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

namespace {

constexpr int kRanks = 16;
constexpr size_t kSpansPerRank = 50'000;

const std::vector<std::string>& rank_files() {
  static const std::vector<std::string> files = [] {
    const std::string dir = std::filesystem::temp_directory_path() / "strata-ranks-bench";
    std::filesystem::create_directories(dir);
    std::vector<std::string> out;
    for (int r = 0; r < kRanks; ++r) {
      out.push_back(dir + "/rank" + std::to_string(r) + ".strata");
      std::string error;
      if (!strata::trace::save_trace(strata::bench::rank_trace(r, kSpansPerRank), out.back(), &error))
        std::abort();
    }
    return out;
  }();
  return files;
}

void merge(strata::trace::Trace* out) {
  strata::trace::OpenOptions options;
  options.structure = false;
  options.before_finish = [](strata::trace::Trace& t, std::span<const size_t>) {
    strata::trace::align_rank_clocks(&t);
  };
  std::string error;
  if (!strata::trace::open_traces(rank_files(), out, &error, options)) std::abort();
}

void BM_MergeAligned(benchmark::State& state) {
  rank_files();
  for (auto _ : state) {
    strata::trace::Trace t;
    merge(&t);
    benchmark::DoNotOptimize(t.spans.data());
  }
  state.SetItemsProcessed(state.iterations() * kRanks * static_cast<int64_t>(kSpansPerRank));
}
BENCHMARK(BM_MergeAligned)->Unit(benchmark::kMillisecond);

void BM_AlignOnly(benchmark::State& state) {
  strata::trace::Trace merged;
  merge(&merged);
  for (auto _ : state) {
    auto clocks = strata::trace::align_rank_clocks(&merged, {.apply = false});
    benchmark::DoNotOptimize(clocks.data());
  }
}
BENCHMARK(BM_AlignOnly)->Unit(benchmark::kMillisecond);

void run_analysis(benchmark::State& state, const char* name) {
  strata::trace::Trace merged;
  merge(&merged);
  const auto& tree = merged.tree();
  strata::analysis::Params params;
  const auto* a = strata::analysis::find_analysis(name);
  for (auto _ : state) {
    auto r = a->run({merged, tree, params});
    benchmark::DoNotOptimize(r.tables.data());
  }
}
void BM_RankBreakdown(benchmark::State& state) { run_analysis(state, "rank_breakdown"); }
void BM_CollectiveWait(benchmark::State& state) { run_analysis(state, "collective_wait"); }
BENCHMARK(BM_RankBreakdown)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CollectiveWait)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
