// Iteration mining throughput, and mining time against the time to load a native trace with the
// same number of spans (same binary, same machine, side by side).
//
//   iterations_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "analysis/iterations/iterations_analysis.h"
#include "analysis/iterations/pattern_miner.h"
#include "analysis/iterations/suffix_array.h"
#include "core/level.h"
#include "trace/trace.h"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"

namespace {

using strata::analysis::iterations::MinerOptions;

// A training-like op stream: set-up, then iterations of a 250-op cycle over 90 op names, 3% of
// them with an extra op inside, an evaluation block (60 ops) after every 10th; gaps in ns. (Random
// names: no nested repetition to speak of; nested_workload below has it.)
struct Workload {
  std::vector<int32_t> seq;
  std::vector<int64_t> gaps;
  int64_t iterations = 0;
};

const Workload& workload(int64_t ops) {
  static std::map<int64_t, Workload> cache;
  auto it = cache.find(ops);
  if (it != cache.end()) return it->second;
  Workload w;
  std::mt19937 rng(42);
  std::vector<int32_t> cycle(250), eval(60);
  for (auto& c : cycle) c = static_cast<int32_t>(rng() % 90);
  for (auto& c : eval) c = static_cast<int32_t>(rng() % 90);
  for (int i = 0; i < 100; ++i) w.seq.push_back(100 + static_cast<int32_t>(rng() % 50));
  while (static_cast<int64_t>(w.seq.size()) < ops) {
    ++w.iterations;
    for (size_t j = 0; j < cycle.size(); ++j) {
      w.seq.push_back(cycle[j]);
      if (j == 100 && rng() % 100 < 3) w.seq.push_back(200);
    }
    if (w.iterations % 10 == 0) w.seq.insert(w.seq.end(), eval.begin(), eval.end());
  }
  w.seq.resize(ops);
  w.gaps.resize(ops);
  for (size_t j = 0; j < w.gaps.size(); ++j) w.gaps[j] = w.seq[j] == cycle[0] ? 50000 : 2000 + rng() % 500;
  return cache.emplace(ops, std::move(w)).first->second;
}

// A training loop with nested repetition, like a GRU's: each step is 30 ops (data, zero_grad, forward,
// loss), a 14-op backward time step repeated 12 times, 15 ops (the rest of backward, optimizer step);
// an 8-op evaluation pass after every 50th step; 1% of the steps with an inserted op. The old miner
// read the time steps as the iterations (issue 12); the step is the answer.
const Workload& nested_workload(int64_t ops) {
  static std::map<int64_t, Workload> cache;
  auto it = cache.find(ops);
  if (it != cache.end()) return it->second;
  Workload w;
  std::mt19937 rng(7);
  std::vector<int32_t> pre(30), unit(14), post(15), eval(8);
  for (auto& c : pre) c = static_cast<int32_t>(rng() % 60);
  for (auto& c : unit) c = 60 + static_cast<int32_t>(rng() % 20);
  for (auto& c : post) c = 80 + static_cast<int32_t>(rng() % 40);
  for (auto& c : eval) c = static_cast<int32_t>(rng() % 60);
  for (int i = 0; i < 100; ++i) w.seq.push_back(130 + static_cast<int32_t>(rng() % 50));
  w.gaps.assign(w.seq.size(), 3000);
  while (static_cast<int64_t>(w.seq.size()) < ops) {
    ++w.iterations;
    const size_t start = w.seq.size();
    w.seq.insert(w.seq.end(), pre.begin(), pre.end());
    for (int t = 0; t < 12; ++t) w.seq.insert(w.seq.end(), unit.begin(), unit.end());
    w.seq.insert(w.seq.end(), post.begin(), post.end());
    if (rng() % 100 == 0) w.seq.insert(w.seq.begin() + static_cast<int64_t>(start + 1 + rng() % 200), 200);
    if (w.iterations % 50 == 0) w.seq.insert(w.seq.end(), eval.begin(), eval.end());
    w.gaps.resize(w.seq.size(), 2000);
    w.gaps[start] = 50000;  // the host's loop between steps
  }
  w.seq.resize(ops);
  w.gaps.resize(ops);
  return cache.emplace(ops, std::move(w)).first->second;
}

long peak_rss_kb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

void BM_Mine(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  size_t found = 0;
  for (auto _ : state) {
    auto r = strata::analysis::iterations::mine_iterations(w.seq, w.gaps, MinerOptions{});
    found = r.iterations.size();
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["iterations_found"] = static_cast<double>(found);
  state.counters["iterations_true"] = static_cast<double>(w.iterations);
  state.counters["peak_rss_MB"] = static_cast<double>(peak_rss_kb()) / 1024.0;
}

void BM_MineNested(benchmark::State& state) {
  const Workload& w = nested_workload(state.range(0));
  size_t found = 0;
  for (auto _ : state) {
    auto r = strata::analysis::iterations::mine_iterations(w.seq, w.gaps, MinerOptions{});
    found = r.iterations.size();
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["iterations_found"] = static_cast<double>(found);
  state.counters["iterations_true"] = static_cast<double>(w.iterations);
}

void BM_SuffixArrayAndLcp(benchmark::State& state) {
  const Workload& w = workload(state.range(0));
  for (auto _ : state) {
    auto sa = strata::analysis::iterations::build_suffix_array(w.seq, 201);
    auto lcp = strata::analysis::iterations::build_lcp_array(w.seq, sa);
    benchmark::DoNotOptimize(lcp.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

// Trace files written by this run, removed at exit.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const auto& p : paths) std::filesystem::remove(p);
  }
} temp_files;

// A native trace with `spans` layer spans named after the workload's ops, written once.
std::string trace_file(int64_t spans) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("strata-iterations-bench-" + std::to_string(getpid()) + "-" + std::to_string(spans) + ".strata"))
                               .string();
  if (std::filesystem::exists(path)) return path;
  const Workload& w = workload(spans);
  strata::trace::Trace t;
  strata::trace::Process p;
  p.pid = 1;
  t.add_process(p);
  std::vector<uint32_t> names;
  for (int i = 0; i < 256; ++i) names.push_back(t.strings.intern("aten::op" + std::to_string(i)));
  t.spans.reserve(spans);
  int64_t now = 0;
  for (int64_t j = 0; j < spans; ++j) {
    strata::SpanRecord s;
    s.span_id = static_cast<uint64_t>(j + 1);
    now += w.gaps[j];
    s.start_ns = now;
    s.end_ns = now + 5000;
    now = s.end_ns;
    s.name = names[w.seq[j] & 255];
    s.tid = 1;
    s.level = static_cast<uint8_t>(strata::Level::kLayer);
    s.kind = static_cast<uint8_t>(strata::SpanKind::kSpan);
    t.add_span(s);
  }
  std::string error;
  if (!strata::trace::save_trace(t, path, &error)) std::fprintf(stderr, "save_trace: %s\n", error.c_str());
  temp_files.paths.push_back(path);
  return path;
}

void BM_LoadTrace(benchmark::State& state) {
  const std::string path = trace_file(state.range(0));
  for (auto _ : state) {
    strata::trace::Trace t;
    std::string error;
    if (!strata::trace::load_trace(path, &t, &error)) state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(t.spans.data());
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
}

// The whole analysis on a loaded trace (stream classification, op sequence, alphabet, mining,
// metrics, diagnosis): what `strata iterations` costs after loading.
void BM_RunIterations(benchmark::State& state) {
  static std::map<int64_t, strata::trace::Trace> traces;
  strata::trace::Trace& t = traces[state.range(0)];
  if (t.spans.empty()) {
    std::string error;
    if (!strata::trace::load_trace(trace_file(state.range(0)), &t, &error))
      state.SkipWithError(error.c_str());
  }
  size_t found = 0;
  for (auto _ : state) {
    strata::analysis::iterations::IterationsReport report;
    std::string error;
    if (!strata::analysis::iterations::run_iterations(t, strata::analysis::iterations::IterationsOptions{},
                                                      &report, &error))
      state.SkipWithError(error.c_str());
    found = report.mining.iterations.size();
    benchmark::DoNotOptimize(found);
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
  state.counters["iterations_found"] = static_cast<double>(found);
}

}  // namespace

BENCHMARK(BM_Mine)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_MineNested)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SuffixArrayAndLcp)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_LoadTrace)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_RunIterations)->Arg(1'000'000)->Arg(10'000'000)->Unit(benchmark::kMillisecond)->UseRealTime();

BENCHMARK_MAIN();
