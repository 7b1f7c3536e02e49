// libstrata_cupti.so: loaded by the CUDA driver through CUDA_INJECTION64_PATH (set by
// `strata record --level runtime|device`); the driver calls InitializeInjection() at cuInit.
// It records into the session that libstrata.so (preloaded) runs in this process.
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "collect/session.h"
#include "core/env_vars.h"
#include "core/level.h"
#include "gpu/cupti_collector.h"
#include "gpu/cupti_interface.h"
#include "gpu/gpu_metrics.h"
#include "gpu/span_sink.h"

namespace strata::gpu {
namespace {

std::unique_ptr<CuptiInterface> g_api;
std::unique_ptr<RangeProfilerInterface> g_profiler;
std::unique_ptr<PcSamplingInterface> g_pc_api;
std::unique_ptr<SessionSink> g_sink;
std::unique_ptr<CuptiCollector> g_collector;
std::atomic<bool> g_initialized{false};
struct sigaction g_previous[32];

// PC sampling's poll thread: cuptiPCSamplingGetData every STRATA_GPU_PC_SAMPLING_POLL_MS (default
// 100 ms) from a thread of ours, never from inside a CUDA callback, so CUPTI's buffers do not fill.
struct PcPoller {
  std::mutex mu;
  std::condition_variable wake;
  bool stop = false;
  std::thread thread;
};
PcPoller g_poller;

void stop_pc_poller() {
  {
    std::lock_guard<std::mutex> lock(g_poller.mu);
    g_poller.stop = true;
  }
  g_poller.wake.notify_all();
  if (g_poller.thread.joinable()) g_poller.thread.join();
}

void stop_at_exit() {
  stop_pc_poller();
  if (g_collector) g_collector->stop();
  if (auto* s = collect::current_session()) s->flush();
}

// Fatal signal: hand CUPTI's pending records to the recorder, then let the previous handler
// (libstrata's, which closes the trace) or the default action run.
void on_fatal_signal(int sig, siginfo_t* info, void* context) {
  static std::atomic<bool> once{false};
  if (!once.exchange(true) && g_collector) g_collector->flush();
  sigaction(sig, &g_previous[sig], nullptr);
  if (g_previous[sig].sa_flags & SA_SIGINFO) {
    if (g_previous[sig].sa_sigaction != nullptr) {
      g_previous[sig].sa_sigaction(sig, info, context);
      return;
    }
  } else if (g_previous[sig].sa_handler != SIG_DFL && g_previous[sig].sa_handler != SIG_IGN) {
    g_previous[sig].sa_handler(sig);
    return;
  }
  raise(sig);
}

void install_signal_handlers() {
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

// STRATA_GPU_PC_SAMPLING=continuous|serialized (set by `strata record --gpu-pc-sampling`), with
// STRATA_GPU_PC_SAMPLING_PERIOD=5..31 (2^n cycles between samples). UNVALIDATED ON A GPU.
void configure_pc_sampling(CollectorOptions* options) {
  const char* mode = std::getenv(env::kGpuPcSampling);
  if (mode == nullptr || *mode == '\0') return;
  std::string error;
  if (!parse_pc_sampling_mode(mode, &options->pc_sampling.mode, &error)) {
    std::fprintf(stderr, "strata: STRATA_GPU_PC_SAMPLING: %s; recording without PC sampling\n",
                 error.c_str());
    return;
  }
  int period = env_int(env::kGpuPcSamplingPeriod, 0);
  if (period != 0 && (period < 5 || period > 31)) {
    std::fprintf(
        stderr, "strata: STRATA_GPU_PC_SAMPLING_PERIOD=%d is outside 5..31; CUPTI's default period is used\n",
        period);
    period = 0;
  }
  options->pc_sampling.sampling_period = static_cast<uint32_t>(period);
  // CUPTI's decoding threads' wake-up period and the hardware buffer: what keeps the buffer from
  // filling when kernels keep every SM busy (docs/gpu-collector.md, "What was checked where").
  options->pc_sampling.worker_sleep_ms =
      static_cast<uint32_t>(std::max(0, env_int(env::kGpuPcSamplingWorkerMs, 0)));
  options->pc_sampling.hardware_buffer_bytes =
      static_cast<size_t>(std::max(0, env_int(env::kGpuPcSamplingHwBufferMb, 0))) << 20;
  g_pc_api = make_real_pc_sampling();
  options->pc_api = g_pc_api.get();
}

void start_pc_poller(PcSampler* sampler) {
  if (sampler == nullptr) return;
  const auto period = std::chrono::milliseconds(std::max(10, env_int(env::kGpuPcSamplingPollMs, 100)));
  g_poller.thread = std::thread([sampler, period] {
    std::unique_lock<std::mutex> lock(g_poller.mu);
    while (!g_poller.wake.wait_for(lock, period, [] { return g_poller.stop; })) {
      lock.unlock();
      sampler->collect_all();
      lock.lock();
    }
  });
}

}  // namespace
}  // namespace strata::gpu

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  using namespace strata::gpu;
  if (g_initialized.exchange(true)) return 1;
  if (strata::collect::current_session() == nullptr) {
    std::fprintf(stderr,
                 "strata: libstrata_cupti.so loaded but no recording session is running (libstrata.so not "
                 "preloaded?); GPU tracing is off. Use `strata record --level device -- CMD`\n");
    return 1;  // the program must keep running
  }
  int level = env_int(strata::env::kLevel, static_cast<int>(strata::Level::kDevice));
  CollectorOptions options;
  options.callbacks = level >= static_cast<int>(strata::Level::kRuntimeApi);
  options.activity = level >= static_cast<int>(strata::Level::kDevice);
  options.buffer_bytes = static_cast<size_t>(std::max(1, env_int(strata::env::kCuptiBufferMb, 8))) << 20;
  if (!options.callbacks && !options.activity) return 1;
  // Per-kernel metrics: STRATA_GPU_METRICS=flops,dram,occupancy (kernel replay: slow, opt-in).
  // On an H100 (driver 580, CUDA 13, PyTorch 2.11) the Range Profiler's start, made from the first
  // launch's callback, never returned: the program hung inside CUPTI/libnvperf. Until it is started
  // outside the callback and validated, the path runs only when asked for knowingly.
  const char* metrics = std::getenv(strata::env::kGpuMetrics);
  const char* unvalidated = std::getenv(strata::env::kGpuMetricsUnvalidated);
  if (metrics != nullptr && *metrics != '\0' &&
      (unvalidated == nullptr || std::strcmp(unvalidated, "1") != 0)) {
    std::fprintf(
        stderr,
        "strata: per-kernel GPU metrics are disabled: CUPTI's Range Profiler hung at the first kernel on an "
        "H100 (docs/gpu-collector.md); measure with `ncu --csv` and join with `strata import --metrics "
        "NCU.csv --into TRACE` (STRATA_GPU_METRICS_UNVALIDATED=1 tries it anyway); recording without GPU "
        "metrics\n");
    metrics = nullptr;
  }
  if (metrics != nullptr && *metrics != '\0') {
    std::string error;
    if (!parse_metric_request(metrics, &options.metrics, &error)) {
      std::fprintf(stderr, "strata: STRATA_GPU_METRICS: %s; recording without GPU metrics\n", error.c_str());
      options.metrics = {};
    } else {
      g_profiler = make_real_range_profiler();
      options.profiler = g_profiler.get();
    }
  }
  // STRATA_CUDA_GRAPH_TRACE=graph: one span per graph launch instead of one per node (node is the default).
  if (const char* g = std::getenv(strata::env::kCudaGraphTrace); g != nullptr && *g != '\0') {
    if (std::strcmp(g, "graph") == 0)
      options.graph_level = true;
    else if (std::strcmp(g, "node") != 0)
      std::fprintf(stderr, "strata: STRATA_CUDA_GRAPH_TRACE=%s: use node or graph; recording graph nodes\n",
                   g);
  }
  configure_pc_sampling(&options);
  g_api = make_real_cupti();
  g_sink = std::make_unique<SessionSink>();
  g_collector = std::make_unique<CuptiCollector>(g_api.get(), g_sink.get(), options);
  if (!g_collector->start()) return 1;  // one line printed; untraced
  start_pc_poller(g_collector->pc_sampler());
  std::atexit(stop_at_exit);
  install_signal_handlers();
  return 1;
}
