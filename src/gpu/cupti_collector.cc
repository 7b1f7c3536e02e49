#include "gpu/cupti_collector.h"

#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "collect/clock.h"
#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/level.h"

namespace strata::gpu {
namespace {

// Depth of traced runtime calls on this thread: a driver callback inside one is the runtime's own
// implementation (cudaLaunchKernel -> cuLaunchKernel) and would double every launch.
thread_local int tl_runtime_depth = 0;

std::atomic<CuptiCollector*> g_active_collector{nullptr};

const CUpti_ActivityKind kRequiredKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
// Optional: a driver or GPU that lacks one still gives kernels; the missing kinds are listed.
const CUpti_ActivityKind kOptionalKinds[] = {
    CUPTI_ACTIVITY_KIND_MEMCPY,      CUPTI_ACTIVITY_KIND_MEMCPY2,
    CUPTI_ACTIVITY_KIND_MEMSET,      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    CUPTI_ACTIVITY_KIND_MEMORY2,     CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_GRAPH_TRACE, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
    CUPTI_ACTIVITY_KIND_DEVICE};

const char* activity_kind_name(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      return "memcpy";
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      return "memcpy2";
    case CUPTI_ACTIVITY_KIND_MEMSET:
      return "memset";
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      return "synchronization";
    case CUPTI_ACTIVITY_KIND_MEMORY2:
      return "memory2";
    case CUPTI_ACTIVITY_KIND_OVERHEAD:
      return "overhead";
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE:
      return "graph_trace";
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION:
      return "external_correlation";
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      return "concurrent_kernel";
    case CUPTI_ACTIVITY_KIND_DEVICE:
      return "device";
    default:
      return "other";
  }
}

}  // namespace

uint64_t monotonic_timestamp() { return static_cast<uint64_t>(collect::monotonic_ns()); }

CuptiCollector::CuptiCollector(CuptiInterface* api, SpanSink* sink, CollectorOptions options)
    : api_(api), sink_(sink), options_(options), translator_(sink, TranslatorOptions{}) {}

CuptiCollector::~CuptiCollector() { stop(); }

bool CuptiCollector::fail(const char* what, CUptiResult r) {
  error_ = std::string("strata: CUPTI ") + what + " failed: " + api_->result_string(r) +
           " (another profiler attached, or no usable GPU/driver); this process runs without GPU tracing";
  if (!options_.quiet) std::fprintf(stderr, "%s\n", error_.c_str());
  api_->unsubscribe();
  running_ = false;
  return false;
}

ApiClass CuptiCollector::class_of(CUpti_CallbackDomain domain, CUpti_CallbackId id) const {
  const auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? runtime_classes_ : driver_classes_;
  return id < table.size() ? table[id] : ApiClass::kIgnored;
}

bool CuptiCollector::start() {
  if (running_) return true;
  // Activity timestamps on CLOCK_MONOTONIC (the trace's reference domain). Must precede enabling.
  TranslatorOptions topts;
  topts.parent_is_external = !options_.callbacks;
  if (!options_.metrics.empty() && options_.activity) {
    if (options_.profiler == nullptr || !options_.callbacks) {
      // The profiler is started from the first launch callback (it needs the launch's context).
      error_ = "strata: GPU metrics need the CUPTI range profiler and the runtime callbacks; metrics are off";
      if (!options_.quiet) std::fprintf(stderr, "%s\n", error_.c_str());
    } else {
      joiner_ = std::make_unique<KernelMetricJoiner>(sink_, options_.metrics);
      topts.joiner = joiner_.get();
    }
  }
  if (options_.activity) {
    if (api_->register_timestamp_callback(&monotonic_timestamp) == CUPTI_SUCCESS) {
      clock_source_ = "cupti_timestamp_callback:CLOCK_MONOTONIC";
      topts.clock = ClockDomain::kMonotonic;
    } else {
      clock_source_ = "cupti_default";
      topts.clock = ClockDomain::kGpu;
    }
  }
  translator_.set_options(topts);

  if (options_.callbacks) {
    auto trampoline = [](void* self, CUpti_CallbackDomain domain, CUpti_CallbackId id, const void* data) {
      auto* collector = static_cast<CuptiCollector*>(self);
      if (domain == CUPTI_CB_DOMAIN_RESOURCE)
        collector->on_resource(id, static_cast<const CUpti_ResourceData*>(data));
      else
        collector->on_callback(domain, id, static_cast<const CUpti_CallbackData*>(data));
    };
    CUptiResult r = api_->subscribe(trampoline, this);
    if (r != CUPTI_SUCCESS) return fail("cuptiSubscribe", r);
    struct DomainInfo {
      CUpti_CallbackDomain domain;
      ApiDomain api_domain;
      uint32_t size;
      std::vector<ApiClass>* table;
    };
    for (DomainInfo d : {DomainInfo{CUPTI_CB_DOMAIN_RUNTIME_API, ApiDomain::kRuntime,
                                    CUPTI_RUNTIME_TRACE_CBID_SIZE, &runtime_classes_},
                         DomainInfo{CUPTI_CB_DOMAIN_DRIVER_API, ApiDomain::kDriver,
                                    CUPTI_DRIVER_TRACE_CBID_SIZE, &driver_classes_}}) {
      d.table->assign(d.size, ApiClass::kIgnored);
      for (uint32_t id = 1; id < d.size; ++id) {
        const char* name = api_->callback_name(d.domain, id);
        if (name == nullptr) continue;
        ApiClass c = classify_api(d.api_domain, name);
        if (c == ApiClass::kIgnored) continue;
        (*d.table)[id] = c;
        r = api_->enable_callback(d.domain, id);
        if (r != CUPTI_SUCCESS) return fail("cuptiEnableCallback", r);
      }
    }
    if (options_.pc_sampling.mode != PcSamplingMode::kOff && !start_pc_sampling()) {
      if (sampler_ && error_.empty()) error_ = sampler_->error();
      sampler_.reset();  // the line was said; kernels are still traced
    }
  } else if (options_.pc_sampling.mode != PcSamplingMode::kOff) {
    error_ = "strata: GPU PC sampling needs the runtime callbacks (--level device); recording without it";
    if (!options_.quiet) std::fprintf(stderr, "%s\n", error_.c_str());
  }
  if (options_.activity) {
    // CUPTI's buffer callbacks carry no user pointer: one active collector per process.
    g_active_collector.store(this);
    CUptiResult r = api_->register_buffer_callbacks(
        [](uint8_t** buffer, size_t* size, size_t* max_records) {
          if (auto* c = g_active_collector.load())
            c->on_buffer_requested(buffer, size, max_records);
          else
            *buffer = nullptr;
        },
        [](CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size, size_t valid) {
          if (auto* c = g_active_collector.load())
            c->on_buffer_completed(context, stream_id, buffer, size, valid);
          else
            std::free(buffer);
        });
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", r);
    for (CUpti_ActivityKind k : kRequiredKinds) {
      r = api_->activity_enable(k);
      if (r != CUPTI_SUCCESS) return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    }
    for (CUpti_ActivityKind k : kOptionalKinds) {
      // GRAPH_TRACE replaces the records of a graph's nodes by one per launch: only when asked for
      // (an H100 run showed the graph's kernels missing from the kernel tables; Kineto has them).
      if (k == CUPTI_ACTIVITY_KIND_GRAPH_TRACE && !options_.graph_level) continue;
      if (api_->activity_enable(k) != CUPTI_SUCCESS) unsupported_kinds_.push_back(activity_kind_name(k));
    }
    if (options_.flush_period_ms > 0) api_->set_flush_period_ms(options_.flush_period_ms);
  }
  running_ = true;
  emit_session_instant("cupti.session");
  return true;
}

// PC sampling is enabled per context when CUPTI reports the context created (resource callback), and
// collected outside launch callbacks in continuous mode (docs/gpu-collector.md: the H100 lessons).
bool CuptiCollector::start_pc_sampling() {
  if (options_.pc_api == nullptr) return false;
  PcSamplingOptions o = options_.pc_sampling;
  o.quiet = o.quiet || options_.quiet;
  sampler_ = std::make_unique<PcSampler>(options_.pc_api, sink_, o);
  if (!sampler_->check_supported()) return false;  // one line said why; tracing goes on
  for (CUpti_CallbackId id :
       {CUPTI_CBID_RESOURCE_CONTEXT_CREATED, CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING,
        CUPTI_CBID_RESOURCE_MODULE_LOADED, CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING}) {
    if (CUptiResult r = api_->enable_callback(CUPTI_CB_DOMAIN_RESOURCE, id); r != CUPTI_SUCCESS) {
      error_ = std::string("strata: GPU PC sampling off: cuptiEnableCallback(RESOURCE) failed: ") +
               api_->result_string(r) + "; kernels are still traced";
      if (!options_.quiet) std::fprintf(stderr, "%s\n", error_.c_str());
      return false;
    }
  }
  return true;
}

void CuptiCollector::on_resource(CUpti_CallbackId id, const CUpti_ResourceData* data) {
  if (!sampler_ || data == nullptr) return;
  switch (id) {
    case CUPTI_CBID_RESOURCE_CONTEXT_CREATED:
      sampler_->on_context_created(data->context);
      break;
    case CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING:
      sampler_->on_context_destroying(data->context);
      break;
    case CUPTI_CBID_RESOURCE_MODULE_LOADED:
      sampler_->on_module_loaded(static_cast<const CUpti_ModuleResourceData*>(data->resourceDescriptor));
      break;
    case CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING:
      sampler_->on_module_unloading();
      break;
    default:
      break;
  }
}

void CuptiCollector::emit_session_instant(const char* name) {
  // Process-level facts (clock source, what is enabled, counts): as attributes of an instant on the
  // timeline, and the loss counters and clock source also into the trace's drops and stats.
  SpanRecord r;
  r.start_ns = r.end_ns = collect::monotonic_ns();
  r.level = static_cast<uint8_t>(Level::kRuntimeApi);
  r.kind = static_cast<uint8_t>(SpanKind::kInstant);
  r.activity = static_cast<uint8_t>(ActivityType::kAnnotation);  // a mark the profiler made
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  CollectorStats s = stats();
  std::string unsupported;
  for (const auto& k : unsupported_kinds_) unsupported += (unsupported.empty() ? "" : ",") + k;
  AttrList a;
  a.add_string("clock_source", clock_source_);
  a.add_int("callbacks", options_.callbacks ? 1 : 0);
  a.add_int("activity", options_.activity ? 1 : 0);
  a.add_string("cuda_graph_trace", options_.graph_level ? "graph" : "node");
  a.add_string("unsupported_activity_kinds", unsupported);
  a.add_int("api_spans", static_cast<int64_t>(s.api_spans));
  a.add_int("activity_records", static_cast<int64_t>(s.activity.records));
  a.add_int("activity_spans", static_cast<int64_t>(s.activity.spans));
  a.add_int("buffers", static_cast<int64_t>(s.buffers));
  a.add_int("dropped.cupti_records", static_cast<int64_t>(s.cupti_dropped));
  a.add_int("dropped.buffer_alloc_failures", static_cast<int64_t>(s.buffer_alloc_failures));
  a.add_int("dropped.buffer_walk_errors", static_cast<int64_t>(s.record_errors));
  a.add_int("dropped.unknown_activity_kind", static_cast<int64_t>(s.activity.unknown_kind));
  a.add_int("dropped.bad_timestamps", static_cast<int64_t>(s.activity.bad_timestamps));
  a.add_int("external_links", static_cast<int64_t>(s.activity.external_links));
  a.add_int("external_push_failures", static_cast<int64_t>(s.external_push_failures));
  a.add_int("nested_driver_calls", static_cast<int64_t>(s.nested_driver_calls));
  if (joiner_) {
    a.add_int("metrics.kernels_with_metrics", static_cast<int64_t>(s.kernels_with_metrics));
    a.add_int("dropped.metrics_kernels_without_range", static_cast<int64_t>(s.kernels_without_metrics));
    a.add_int("dropped.metrics_ranges_without_kernel", static_cast<int64_t>(s.ranges_without_kernel));
    a.add_int("dropped.metrics_profiler_ranges", static_cast<int64_t>(s.profiler_dropped_ranges));
    if (!profiler_error_.empty()) a.add_string("metrics.error", profiler_error_);
  }
  sink_->emit(r, name, a.view());
  sink_->report_property("cupti.clock_source", clock_source_);
  sink_->report_drops("cupti_records", s.cupti_dropped);
  sink_->report_drops("cupti_buffer_alloc_failures", s.buffer_alloc_failures);
  sink_->report_drops("cupti_buffer_walk_errors", s.record_errors);
  sink_->report_drops("cupti_unknown_activity_kind", s.activity.unknown_kind);
  sink_->report_drops("cupti_bad_timestamps", s.activity.bad_timestamps);
}

void CuptiCollector::on_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id,
                                 const CUpti_CallbackData* data) {
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  ApiClass c = class_of(domain, id);
  if (c == ApiClass::kIgnored || data == nullptr) return;
  bool runtime = domain == CUPTI_CB_DOMAIN_RUNTIME_API;
  if (data->callbackSite == CUPTI_API_ENTER) {
    if (!runtime && tl_runtime_depth > 0) {
      nested_driver_calls_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    if (runtime) ++tl_runtime_depth;
    // The context is about to go away: its activity buffers must be handed over first.
    if (c == ApiClass::kDeviceReset && options_.activity) flush();
    if (joiner_ && c == ApiClass::kLaunch && data->context != nullptr) start_profiler(data->context);
    if (data->correlationData != nullptr)
      *data->correlationData = static_cast<uint64_t>(collect::monotonic_ns());
    if (produces_device_work(c) && options_.activity) {
      if (api_->push_external_correlation(sink_->current_api_span()) != CUPTI_SUCCESS)
        external_push_failures_.fetch_add(1, std::memory_order_relaxed);
    }
    return;
  }
  if (data->callbackSite != CUPTI_API_EXIT) return;
  if (!runtime && tl_runtime_depth > 0) return;  // skipped at entry too
  if (runtime && tl_runtime_depth > 0) --tl_runtime_depth;
  int64_t end = collect::monotonic_ns();
  if (sampler_ && c == ApiClass::kLaunch) sampler_->on_launch_exit();  // serialized mode only
  if (produces_device_work(c) && options_.activity) {
    uint64_t ignored = 0;
    api_->pop_external_correlation(&ignored);
  }
  SpanRecord r;
  r.start_ns = data->correlationData != nullptr ? static_cast<int64_t>(*data->correlationData) : end;
  r.end_ns = end;
  r.parent_id = sink_->current_api_span();
  r.level = static_cast<uint8_t>(Level::kRuntimeApi);
  r.activity = static_cast<uint8_t>(runtime ? ActivityType::kRuntimeCall : ActivityType::kDriverCall);
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  if (produces_device_work(c)) {
    r.kind = static_cast<uint8_t>(SpanKind::kLaunch);
    r.correlation_id = data->correlationId;
  } else {
    r.kind = static_cast<uint8_t>(SpanKind::kSpan);
  }
  AttrList a;
  a.add_string(attr_keys::kApiClass, api_class_name(c));
  if (data->symbolName != nullptr && c == ApiClass::kLaunch) a.add_string("kernel", data->symbolName);
  if (data->functionReturnValue != nullptr) {
    int status = 0;
    std::memcpy(&status, data->functionReturnValue, sizeof(status));  // cudaError_t / CUresult
    if (status != 0) a.add_int("status", status);
  }
  sink_->emit(r, data->functionName != nullptr ? data->functionName : "<cuda api>", a.view());
  api_spans_.fetch_add(1, std::memory_order_relaxed);
}

void CuptiCollector::on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;  // as many as fit
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, options_.buffer_bytes));
  *size = *buffer != nullptr ? options_.buffer_bytes : 0;
  if (*buffer == nullptr) {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.buffer_alloc_failures;  // CUPTI drops records meanwhile; its count reports them
  }
}

void CuptiCollector::on_buffer_completed(CUcontext context, uint32_t stream_id, uint8_t* buffer, size_t size,
                                         size_t valid) {
  (void)size;
  std::lock_guard<std::mutex> lock(mu_);
  ++stats_.buffers;
  if (buffer != nullptr && valid > 0) {
    CUpti_Activity* record = nullptr;
    for (;;) {
      CUptiResult r = api_->next_record(buffer, valid, &record);
      if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
      if (r != CUPTI_SUCCESS) {
        ++stats_.record_errors;
        break;
      }
      translator_.translate(record);
    }
  }
  size_t dropped = 0;
  if (api_->dropped_records(context, stream_id, &dropped) == CUPTI_SUCCESS) stats_.cupti_dropped += dropped;
  std::free(buffer);
}

void CuptiCollector::start_profiler(CUcontext context) {
  std::lock_guard<std::mutex> lock(profiler_mu_);
  if (profiler_started_ || profiler_failed_) return;
  std::string error;
  if (options_.profiler->start(context, raw_metric_names(options_.metrics), &error)) {
    profiler_started_ = true;
    return;
  }
  profiler_failed_ = true;  // kernels are still traced; they carry no metrics (counted)
  profiler_error_ = error;
  if (!options_.quiet)
    std::fprintf(stderr, "strata: %s; kernels are recorded without metrics\n", error.c_str());
}

void CuptiCollector::finish_metrics() {
  if (!joiner_) return;
  std::vector<RangeValues> ranges;
  {
    std::lock_guard<std::mutex> lock(profiler_mu_);
    if (profiler_started_) {
      std::string error;
      uint64_t dropped = 0;
      if (!options_.profiler->stop_and_decode(&ranges, &dropped, &error)) {
        profiler_error_ = error;
        if (!options_.quiet)
          std::fprintf(stderr, "strata: %s; kernels are recorded without metrics\n", error.c_str());
      }
      profiler_dropped_ranges_ += dropped;
      profiler_started_ = false;
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  joiner_->add_ranges(std::move(ranges));
  joiner_->finish();
}

void CuptiCollector::flush() {
  if (!running_ || !options_.activity) return;
  api_->flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

void CuptiCollector::stop() {
  if (!running_ || stopped_) return;
  stopped_ = true;
  flush();
  finish_metrics();
  if (sampler_) sampler_->finish();
  emit_session_instant("cupti.stats");
  uint64_t dropped = total_dropped();
  if (dropped > 0 && !options_.quiet)
    std::fprintf(stderr,
                 "strata: CUPTI: %llu GPU activity records dropped (see the cupti.stats span); raise "
                 "STRATA_CUPTI_BUFFER_MB if this repeats\n",
                 static_cast<unsigned long long>(dropped));
  api_->unsubscribe();
  CuptiCollector* self = this;
  g_active_collector.compare_exchange_strong(self, nullptr);
  running_ = false;
}

CollectorStats CuptiCollector::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  CollectorStats s = stats_;
  s.activity = translator_.stats();
  s.api_spans = api_spans_.load();
  s.nested_driver_calls = nested_driver_calls_.load();
  s.external_push_failures = external_push_failures_.load();
  if (joiner_) {
    s.kernels_with_metrics = joiner_->kernels_with_metrics();
    s.kernels_without_metrics = joiner_->kernels_without_metrics();
    s.ranges_without_kernel = joiner_->ranges_without_kernel();
  }
  s.profiler_dropped_ranges = profiler_dropped_ranges_;
  return s;
}

uint64_t CuptiCollector::total_dropped() const {
  CollectorStats s = stats();
  return s.cupti_dropped + s.record_errors + s.activity.unknown_kind + s.activity.bad_timestamps;
}

}  // namespace strata::gpu
