// Cost of a span site: enabled (recording), gated at run time, compiled out; plus the clock read
// the enabled path cannot avoid, measured side by side in one run.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <string>

#include "collect/runtime.h"
#include "strata/strata.hpp"

int compiled_out_site(int x);

namespace {

std::string bench_path() { return "/tmp/strata-span-bench-" + std::to_string(getpid()) + ".strata"; }

void start(int level) {
  strata::collect::SessionConfig c;
  c.path = bench_path();
  c.level = level;
  c.buffer_bytes = 512u << 20;
  strata::collect::start_recording(c);
}
void stop() {
  strata::collect::stop_recording();
  unlink(bench_path().c_str());
}

__attribute__((noinline)) void enabled_spans(int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    STRATA_SPAN("enabled", layer);
    benchmark::ClobberMemory();
  }
}

// The site's own cost, on buffers a recording already touched. A thread that does nothing but open
// spans outruns the writer, so without the warm-up every block of the timed loop would be fresh
// memory, and the page faults of first touch (about 6-20 ns per span here, varying with how far the
// writer lags) would be measured instead of the site: BM_SpanEnabledFreshBuffers measures those.
void BM_SpanEnabled(benchmark::State& state) {
  start(STRATA_LEVEL_LAYER);
  // Twice the timed loop: the writer hands some blocks back during the warm-up, which the warm-up
  // then reuses, so this many spans touch at least as many distinct blocks as the timed loop needs.
  enabled_spans(2 * static_cast<int64_t>(state.max_iterations));
  strata_flush();  // the writer has read the warm-up: its blocks are back in the pool
  for (auto _ : state) {
    STRATA_SPAN("enabled", layer);
    benchmark::ClobberMemory();
  }
  stop();
  state.SetLabel("STRATA_SPAN begin+end, recording (warm buffers)");
}
BENCHMARK(BM_SpanEnabled)->Iterations(5'000'000);

// The same loop in a fresh session: each span also pays its share of first-touching the buffer
// memory (the first budget's worth of events of a recording, and every block a burst grows by).
void BM_SpanEnabledFreshBuffers(benchmark::State& state) {
  start(STRATA_LEVEL_LAYER);
  for (auto _ : state) {
    STRATA_SPAN("enabled", layer);
    benchmark::ClobberMemory();
  }
  stop();
  state.SetLabel("STRATA_SPAN begin+end, recording (fresh buffers: page faults included)");
}
BENCHMARK(BM_SpanEnabledFreshBuffers)->Iterations(5'000'000);

void BM_SpanGatedAtRunTime(benchmark::State& state) {
  start(STRATA_LEVEL_MODEL);  // layer spans are deeper than the recorded level
  for (auto _ : state) {
    STRATA_SPAN("gated", layer);
    benchmark::ClobberMemory();
  }
  stop();
  state.SetLabel("STRATA_SPAN deeper than --level");
}
BENCHMARK(BM_SpanGatedAtRunTime);

void BM_SpanNotRecording(benchmark::State& state) {
  for (auto _ : state) {
    STRATA_SPAN("idle", layer);
    benchmark::ClobberMemory();
  }
  state.SetLabel("STRATA_SPAN, process not recorded");
}
BENCHMARK(BM_SpanNotRecording);

void BM_SpanCompiledOut(benchmark::State& state) {
  int x = 0;
  for (auto _ : state) {
    x = compiled_out_site(x);
    benchmark::DoNotOptimize(x);
  }
  state.SetLabel("STRATA_ENABLED=0 (call overhead of the wrapper only)");
}
BENCHMARK(BM_SpanCompiledOut);

void BM_TwoClockReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(strata::detail::now_ticks());
    benchmark::DoNotOptimize(strata::detail::now_ticks());
  }
  state.SetLabel("floor: the two timestamps an enabled span needs");
}
BENCHMARK(BM_TwoClockReads);

void BM_CApiSpan(benchmark::State& state) {
  start(STRATA_LEVEL_LAYER);
  for (auto _ : state) {
    strata_span_end(strata_span_begin("c_api_span", STRATA_LEVEL_LAYER));
  }
  stop();
  state.SetLabel("strata_span_begin/end with a run-time name");
}
BENCHMARK(BM_CApiSpan)->Iterations(2'000'000);

// What the PyTorch layer tracer does per op: a typed begin (the activity travels in the begin event).
void BM_CApiSpanTyped(benchmark::State& state) {
  start(STRATA_LEVEL_LAYER);
  for (auto _ : state) {
    strata_span_end(strata_span_begin_as("aten::conv2d", 12, STRATA_LEVEL_LAYER, STRATA_ACTIVITY_CPU_OP));
  }
  stop();
  state.SetLabel("strata_span_begin_as/end (activity type given)");
}
BENCHMARK(BM_CApiSpanTyped)->Iterations(2'000'000);

}  // namespace

BENCHMARK_MAIN();
