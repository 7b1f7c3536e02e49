// The CUPTI collector: Callback API -> runtime_api launch spans on the calling thread, Activity API
// -> device execution spans, linked by CUPTI's correlation id; Strata's enclosing span pushed as
// external correlation. Talks to CUPTI only through CuptiInterface, to the recorder only through
// SpanSink, so tests drive it with fabricated records and callback data.
#pragma once

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "gpu/activity_translator.h"
#include "gpu/api_classifier.h"
#include "gpu/cupti_interface.h"
#include "gpu/gpu_metrics.h"
#include "gpu/pc_sampler.h"
#include "gpu/span_sink.h"

namespace strata::gpu {

struct CollectorOptions {
  bool callbacks = true;           // runtime level: API calls on the calling thread
  bool activity = true;            // device level: kernels, copies, ...
  size_t buffer_bytes = 8u << 20;  // one activity buffer
  uint32_t flush_period_ms = 100;  // CUPTI delivers partly filled buffers this often
  bool quiet = false;              // no stderr lines (tests)
  // CUDA graphs: false (default), one record per kernel/copy/memset node of each replay, as Kineto and
  // Nsight Systems' --cuda-graph-trace=node show them; true (STRATA_CUDA_GRAPH_TRACE=graph), one
  // GRAPH_TRACE record per graph launch (cheaper; CUPTI then traces no node of the graph).
  bool graph_level = false;
  MetricRequest metrics;                       // per-kernel GPU metrics (Range Profiler, kernel replay)
  RangeProfilerInterface* profiler = nullptr;  // required when metrics are requested
  PcSamplingOptions pc_sampling;               // GPU PC sampling (needs the callbacks)
  PcSamplingInterface* pc_api = nullptr;       // required when pc_sampling.mode is not kOff
};

struct CollectorStats {
  uint64_t api_spans = 0;            // launch/runtime spans emitted
  uint64_t nested_driver_calls = 0;  // driver calls made inside a traced runtime call (skipped on purpose)
  uint64_t buffers = 0;              // activity buffers completed
  uint64_t buffer_alloc_failures = 0;
  uint64_t cupti_dropped = 0;  // CUPTI's own dropped-record count (buffers full / none given)
  uint64_t record_errors = 0;  // buffers whose walk stopped on an error (rest of the buffer lost)
  uint64_t external_push_failures = 0;
  TranslatorStats activity;
  uint64_t kernels_with_metrics = 0;
  uint64_t kernels_without_metrics = 0;  // held for metrics, no range came (profiler off or dropped it)
  uint64_t ranges_without_kernel = 0;
  uint64_t profiler_dropped_ranges = 0;
};

class CuptiCollector {
 public:
  CuptiCollector(CuptiInterface* api, SpanSink* sink, CollectorOptions options);
  ~CuptiCollector();

  // Subscribes and enables what the options ask for. On a CUPTI error: one line (error()) on stderr,
  // everything undone, false: the program keeps running untraced at GPU level.
  bool start();
  // Makes CUPTI hand over every buffer (completed or not) and translates them now.
  void flush();
  // flush(), a "cupti.stats" instant with the counts, unsubscribe. Idempotent.
  void stop();

  // CUPTI entry points (the static trampolines in the injection library forward here).
  void on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id, const CUpti_CallbackData* data);
  // CUPTI_CB_DOMAIN_RESOURCE (contexts and modules: PC sampling's enable points).
  void on_resource(CUpti_CallbackId id, const CUpti_ResourceData* data);
  void on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
  void on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid);

  CollectorStats stats() const;
  uint64_t total_dropped() const;
  const std::string& error() const { return error_; }
  bool running() const { return running_; }
  // "cupti_timestamp_callback:CLOCK_MONOTONIC" or "cupti_default" (see TranslatorOptions::clock).
  const char* clock_source() const { return clock_source_; }
  const std::vector<std::string>& unsupported_kinds() const { return unsupported_kinds_; }
  // The PC sampler when PC sampling is on and supported (its poll thread calls collect_all()).
  PcSampler* pc_sampler() { return sampler_.get(); }

 private:
  bool fail(const char* what, CUptiResult r);
  void emit_session_instant(const char* name);
  void start_profiler(CUcontext context);
  bool start_pc_sampling();
  void finish_metrics();
  ApiClass class_of(CUpti_CallbackDomain domain, CUpti_CallbackId id) const;

  CuptiInterface* api_;
  SpanSink* sink_;
  CollectorOptions options_;
  std::string error_;
  bool running_ = false;
  bool stopped_ = false;
  const char* clock_source_ = "cupti_default";
  std::vector<std::string> unsupported_kinds_;
  std::vector<ApiClass> runtime_classes_, driver_classes_;
  std::unique_ptr<KernelMetricJoiner> joiner_;
  std::unique_ptr<PcSampler> sampler_;
  std::mutex profiler_mu_;
  bool profiler_started_ = false, profiler_failed_ = false;
  uint64_t profiler_dropped_ranges_ = 0;
  std::string profiler_error_;

  mutable std::mutex mu_;  // translator and buffer stats: buffers complete on CUPTI's thread and ours
  ActivityTranslator translator_;
  CollectorStats stats_;
  std::atomic<uint64_t> api_spans_{0}, nested_driver_calls_{0}, external_push_failures_{0};
};

// CLOCK_MONOTONIC in ns: registered as CUPTI's timestamp source so activity records are on the
// trace's reference clock.
uint64_t monotonic_timestamp();

}  // namespace strata::gpu
