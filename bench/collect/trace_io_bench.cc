// Writer throughput (spans/s reaching the file, threads recording at full speed) and reader
// throughput (load_trace, spans/s on one core) with its peak memory relative to the file size.
#include <benchmark/benchmark.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "collect/runtime.h"
#include "core/crc32c.h"
#include "strata/strata.hpp"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"

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
    strata::trace::Trace t;
    std::string error;
    strata::trace::load_trace(path, &t, &error, {.sort_by_start = false});
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
    strata::trace::Trace t;
    std::string error;
    strata::trace::load_trace(path, &t, &error, {.sort_by_start = false});
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
    strata::trace::Trace t;
    std::string error;
    if (!strata::trace::load_trace(path, &t, &error, {.sort_by_start = false}))
      state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(t.spans.data());
  }
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(spans) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(st.st_size) / 1e6;
  state.counters["peak_rss_over_file"] = load_peak_rss_ratio(path, static_cast<uint64_t>(st.st_size));
  unlink(path.c_str());
}
BENCHMARK(BM_ReaderSpansPerSecond)->Arg(5'000'000)->Unit(benchmark::kMillisecond)->Iterations(5);

// Loading a format 1.0 file, whose spans the loader types and whose keys it renames
// (trace/activity_upgrade.h), against the same spans written as 1.1: arg 0 = 1.1, 1 = 1.0. Half
// the spans are PyTorch ops with a "shape" (renamed to "shapes" in 1.0), the rest device work and
// launches, six names in all.
void BM_ReaderFormat10Upgrade(benchmark::State& state) {
  using namespace strata;
  const bool old_format = state.range(0) == 1;
  const std::string path = path_for(old_format ? "format-1-0" : "format-1-1");
  {
    trace::Trace t;
    t.add_process(trace::Process{});
    const char* names[] = {"aten::conv2d", "aten::relu", "aten::to", "volta_sgemm",
                           "Memcpy HtoD (Pageable -> Device)", "cudaLaunchKernel"};
    const Level levels[] = {Level::kLayer, Level::kLayer, Level::kLayer, Level::kDevice, Level::kDevice,
                            Level::kRuntimeApi};
    const ActivityType types[] = {ActivityType::kCpuOp,  ActivityType::kCpuOp,      ActivityType::kTensorCopy,
                                  ActivityType::kKernel, ActivityType::kMemcpyHtoD, ActivityType::kRuntimeCall};
    for (int64_t i = 0; i < 2'000'000; ++i) {
      const int k = static_cast<int>(i % 6);
      SpanRecord r;
      r.span_id = static_cast<uint64_t>(i + 1);
      r.start_ns = i * 10;
      r.end_ns = r.start_ns + 5;
      r.name = t.strings.intern(names[k]);
      r.level = static_cast<uint8_t>(levels[k]);
      r.kind = static_cast<uint8_t>(levels[k] == Level::kDevice ? SpanKind::kExecution : SpanKind::kSpan);
      r.activity = old_format ? 0 : static_cast<uint8_t>(types[k]);
      std::vector<AttrRecord> a;
      if (levels[k] == Level::kLayer) a.push_back(t.string_attr(old_format ? "shape" : "shapes", "[[1,2]]"));
      t.add_span(r, a);
    }
    std::string error;
    trace::save_trace(t, path, &error);
    if (old_format) {  // the header of a 1.0 writer: minor version 0 (header CRC over bytes 0..27)
      std::FILE* f = std::fopen(path.c_str(), "r+b");
      unsigned char h[32];
      if (f == nullptr || std::fread(h, 1, 32, f) != 32) state.SkipWithError("cannot rewrite the header");
      h[10] = h[11] = 0;
      uint32_t crc = crc32c(h, 28);
      std::memcpy(h + 28, &crc, 4);
      std::fseek(f, 0, SEEK_SET);
      std::fwrite(h, 1, 32, f);
      std::fclose(f);
    }
  }
  uint64_t spans = 0;
  for (auto _ : state) {
    trace::Trace t;
    std::string error;
    trace::load_trace(path, &t, &error);
    spans = t.spans.size();
    benchmark::DoNotOptimize(t.spans.data());
  }
  std::remove(path.c_str());
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(spans) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.SetLabel(old_format ? "format 1.0 (upgraded at load)" : "format 1.1");
}
BENCHMARK(BM_ReaderFormat10Upgrade)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->Iterations(5);

// A trace as an import writes it: zstd-compressed chunks, kernels with a dozen attributes each, so
// the file holds many more spans than its size / 64 bytes (what the loader reserves up front). The
// columns then grow chunk by chunk: this measures that growth (it was quadratic: each chunk reserved
// its exact size, 16.7 s of CPU for the 5.4-million-span import of a 2.3 GB Kineto trace).
void BM_ReaderCompressedManyAttributes(benchmark::State& state) {
  using namespace strata;
  const std::string path = path_for("compressed-attrs");
  const int64_t spans = state.range(0);
  {
    trace::Trace t;
    t.add_process(trace::Process{});
    const uint32_t name = t.strings.intern("volta_sgemm_128x64_nn");
    const char* keys[] = {"grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z",
                          "registers_per_thread", "shared_memory", "queued", "device", "stream", "context"};
    std::vector<AttrRecord> a;
    for (int64_t i = 0; i < spans; ++i) {
      SpanRecord r;
      r.span_id = static_cast<uint64_t>(i + 1);
      r.start_ns = i * 10;
      r.end_ns = r.start_ns + 5;
      r.name = name;
      r.level = static_cast<uint8_t>(Level::kDevice);
      r.kind = static_cast<uint8_t>(SpanKind::kExecution);
      r.activity = static_cast<uint8_t>(ActivityType::kKernel);
      a.clear();
      for (int k = 0; k < 12; ++k) a.push_back(t.int_attr(keys[k], (i + k) % 97));
      t.add_span(r, a);
    }
    std::string error;
    if (!trace::save_trace(t, path, &error, /*zstd_level=*/3)) state.SkipWithError(error.c_str());
  }
  struct stat st {};
  stat(path.c_str(), &st);
  for (auto _ : state) {
    trace::Trace t;
    std::string error;
    if (!trace::load_trace(path, &t, &error, {.sort_by_start = false})) state.SkipWithError(error.c_str());
    benchmark::DoNotOptimize(t.spans.data());
  }
  std::remove(path.c_str());
  state.counters["spans_per_s"] =
      benchmark::Counter(static_cast<double>(spans) * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  state.counters["file_MB"] = static_cast<double>(st.st_size) / 1e6;
}
BENCHMARK(BM_ReaderCompressedManyAttributes)->Arg(3'000'000)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
