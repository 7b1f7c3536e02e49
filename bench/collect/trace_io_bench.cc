// Writer throughput (spans/s reaching the file, threads recording at full speed) and reader
// throughput (load_trace, spans/s on one core) with its peak memory relative to the file size.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "collect/runtime.h"
#include "model/trace_loader.h"
#include "strata/strata.hpp"

namespace {

std::string path_for(const char* what) {
  return "/tmp/strata-io-bench-" + std::string(what) + "-" + std::to_string(getpid()) + ".strata";
}

// Records `spans` spans from `threads` threads; returns wall seconds from the first span to the
// trace being closed (so the writer's work is included).
double record(const std::string& path, int threads, int64_t spans) {
  strata::collect::SessionConfig c;
  c.path = path;
  c.level = STRATA_LEVEL_LAYER;
  c.buffer_bytes = 1024u << 20;
  strata::collect::start_recording(c);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([n = spans / threads] {
      for (int64_t i = 0; i < n; ++i) {
        STRATA_SPAN("writer_bench", layer);
      }
    });
  }
  for (auto& th : pool) th.join();
  strata::collect::stop_recording();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_WriterSpansPerSecond(benchmark::State& state) {
  const int threads = static_cast<int>(state.range(0));
  const int64_t spans = 4'000'000;
  const std::string path = path_for("writer");
  uint64_t drops = 0;
  for (auto _ : state) {
    double seconds = record(path, threads, spans);
    state.SetIterationTime(seconds);
    strata::model::Trace t;
    std::string error;
    strata::model::load_trace(path, &t, &error, {.sort_by_start = false});
    drops += t.total_drops();
    if (t.spans.size() != static_cast<size_t>(spans)) state.SkipWithError("spans lost");
  }
  state.counters["spans_per_s"] = benchmark::Counter(static_cast<double>(spans) * static_cast<double>(state.iterations()),
                                                     benchmark::Counter::kIsRate);
  state.counters["drops"] = static_cast<double>(drops);
  unlink(path.c_str());
}
BENCHMARK(BM_WriterSpansPerSecond)->Arg(1)->Arg(2)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(3);

// Peak RSS of a child that only loads the file, minus the child's RSS before loading.
double load_peak_rss_ratio(const std::string& path, uint64_t file_size) {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    struct rusage before {};
    getrusage(RUSAGE_SELF, &before);
    strata::model::Trace t;
    std::string error;
    strata::model::load_trace(path, &t, &error, {.sort_by_start = false});
    struct rusage after {};
    getrusage(RUSAGE_SELF, &after);
    long delta_kb = after.ru_maxrss - before.ru_maxrss;
    if (write(fds[1], &delta_kb, sizeof(delta_kb)) != sizeof(delta_kb)) _exit(1);
    _exit(0);
  }
  close(fds[1]);
  long delta_kb = 0;
  if (read(fds[0], &delta_kb, sizeof(delta_kb)) != sizeof(delta_kb)) delta_kb = -1;
  close(fds[0]);
  waitpid(pid, nullptr, 0);
  return static_cast<double>(delta_kb) * 1024.0 / static_cast<double>(file_size);
}

void BM_ReaderSpansPerSecond(benchmark::State& state) {
  const std::string path = path_for("reader");
  const int64_t spans = state.range(0);
  record(path, 1, spans);
  struct stat st {};
  stat(path.c_str(), &st);
  for (auto _ : state) {
    strata::model::Trace t;
    std::string error;
    if (!strata::model::load_trace(path, &t, &error, {.sort_by_start = false})) state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(t.spans.data());
  }
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(spans) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(st.st_size) / 1e6;
  state.counters["peak_rss_over_file"] = load_peak_rss_ratio(path, static_cast<uint64_t>(st.st_size));
  unlink(path.c_str());
}
BENCHMARK(BM_ReaderSpansPerSecond)->Arg(5'000'000)->Unit(benchmark::kMillisecond)->Iterations(5);

}  // namespace

BENCHMARK_MAIN();
