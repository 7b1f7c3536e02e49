// Per-sample cost of the sampling thread's work (docs/performance.md): a real stack of this process
// (32 frames deep, captured once) fed to SampleCollector as the perf ring would hand it, then the
// batch counted by SampleStore. Three ways a sample arrives:
//   fp_callchain: the kernel's frame-pointer callchain (perf, default): resolve every frame to
//                 (mapping, offset), intern frames and stack, count;
//   fp_stack:     registers and a stack copy, unwound here with frame pointers (the timer fallback);
//   dwarf:        registers and a stack copy, unwound here with libunwind (--unwind dwarf).
// Not included: reading the perf ring itself (one copy of the record, ~3.5 KB with a stack) and the
// kernel's side (the interrupt, the callchain walk). The same stack every time: the interning maps
// hit, as they mostly do in a steady loop.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "sample/collector.h"
#include "sample/sample_store.h"

namespace {

using strata::sample::RawSample;

struct Captured {
  uint64_t ip = 0, sp = 0, bp = 0;
  std::vector<uint8_t> stack;
  std::vector<uint64_t> callchain;  // leaf first, as perf's PERF_SAMPLE_CALLCHAIN (user part)
};

__attribute__((noinline)) void capture(Captured* c) {
  uint64_t ip, sp, bp;
  asm volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2" : "=r"(ip), "=r"(sp), "=r"(bp));
  c->ip = ip;
  c->sp = sp;
  c->bp = bp;
  pthread_attr_t attr;
  void* low = nullptr;
  size_t size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &low, &size);
  pthread_attr_destroy(&attr);
  const uint64_t top = reinterpret_cast<uint64_t>(low) + size;
  const size_t bytes = static_cast<size_t>(std::min<uint64_t>(16384, top - sp));
  c->stack.assign(reinterpret_cast<const uint8_t*>(sp), reinterpret_cast<const uint8_t*>(sp) + bytes);
  c->callchain.push_back(ip);
  const uint64_t* fp = reinterpret_cast<const uint64_t*>(bp);
  while (fp != nullptr && c->callchain.size() < 127 && reinterpret_cast<uint64_t>(fp) < top) {
    if (fp[1] == 0) break;
    c->callchain.push_back(fp[1]);
    const uint64_t* next = reinterpret_cast<const uint64_t*>(fp[0]);
    if (next <= fp) break;
    fp = next;
  }
}

__attribute__((noinline)) void descend(int depth, Captured* c) {
  if (depth == 0) {
    capture(c);
  } else {
    descend(depth - 1, c);
  }
  asm volatile("" ::: "memory");  // not a tail call: every level keeps its frame
}

const Captured& captured() {
  static const Captured c = [] {
    Captured out;
    descend(28, &out);  // + the benchmark's own frames: about 32
    return out;
  }();
  return c;
}

void run(benchmark::State& state, bool dwarf, bool callchain) {
  const Captured& c = captured();
  strata::sample::SampleCollector collector;
  strata::sample::CollectorConfig config;
  config.pid = getpid();
  config.hz = 1;  // the fallback's own timer barely fires: the samples are the ones fed below
  config.dwarf = dwarf;
  config.python = false;
  config.force_fallback = "timer";
  std::string error;
  if (!collector.start(config, &error)) {
    state.SkipWithError(error.c_str());
    return;
  }
  strata::sample::StoreOptions options;
  options.attribute = false;  // no spans here: counted at once
  strata::sample::SampleStore store(options);
  RawSample s;
  s.pid = static_cast<uint32_t>(getpid());
  s.tid = static_cast<uint32_t>(syscall(SYS_gettid));
  if (callchain) {
    s.ips = c.callchain.data();
    s.ip_count = static_cast<uint32_t>(c.callchain.size());
  } else {
    s.has_regs = true;
    s.regs[strata::sample::kRegIp] = c.ip;
    s.regs[strata::sample::kRegSp] = c.sp;
    s.regs[strata::sample::kRegBp] = c.bp;
    s.stack = c.stack.data();
    s.stack_size = static_cast<uint32_t>(c.stack.size());
  }
  strata::sample::SampleBatch batch;
  int64_t time = 1;
  uint64_t samples = 0;
  size_t unwound = 0;
  for (auto _ : state) {
    // 64 samples per drain, as the writer takes them in batches.
    for (int i = 0; i < 64; ++i) {
      s.time_ns = time++;
      collector.process_for_testing(s);
    }
    collector.take(&batch);
    // The stack is interned once: its depth shows the unwinder went all the way up.
    for (const auto& stack : batch.stacks) unwound = std::max(unwound, stack.frames.size());
    store.add_batch(std::move(batch));
    batch.clear();
    store.aggregate(false);
    samples += 64;
  }
  state.counters["per_sample"] = benchmark::Counter(
      static_cast<double>(samples), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["frames"] = static_cast<double>(c.callchain.size());
  state.counters["unwound"] = static_cast<double>(unwound);
  collector.stop();
}

void BM_SampleFpCallchain(benchmark::State& state) { run(state, false, true); }
void BM_SampleFpStackCopy(benchmark::State& state) { run(state, false, false); }
void BM_SampleDwarf(benchmark::State& state) { run(state, true, false); }

BENCHMARK(BM_SampleFpCallchain);
BENCHMARK(BM_SampleFpStackCopy);
BENCHMARK(BM_SampleDwarf);

}  // namespace

BENCHMARK_MAIN();
