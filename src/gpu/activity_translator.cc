#include "gpu/activity_translator.h"

#include <cxxabi.h>

#include <cstdlib>
#include <cstring>

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "gpu/gpu_metrics.h"

namespace strata::gpu {

const char* memcpy_kind_name(uint8_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "unknown";
  }
}

const char* memory_kind_name(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "device_static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "managed_static";
    default:
      return "unknown";
  }
}

const char* synchronization_type_name(uint32_t type) {
  switch (type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "cudaEventSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "cudaStreamWaitEvent";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "cudaStreamSynchronize";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "cudaDeviceSynchronize";
    default:
      return "synchronization";
  }
}

const char* overhead_kind_name(uint32_t kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "overhead.driver_compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "overhead.cupti_buffer_flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "overhead.cupti_instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "overhead.cupti_resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "overhead.module_loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "overhead.lazy_function_loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "overhead.command_buffer_full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "overhead.activity_buffer_request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "overhead.uvm_activity_init";
    default:
      return "overhead.unknown";
  }
}

bool ActivityTranslator::translate(const CUpti_Activity* record) {
  ++stats_.records;
  // Records sit unaligned-safe in CUPTI's buffer (8-byte aligned): copy into a typed local so the
  // fields are read without aliasing games.
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      CUpti_ActivityKernel10 k;
      std::memcpy(&k, record, sizeof(k));
      return kernel(k);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      CUpti_ActivityMemcpy6 m;
      std::memcpy(&m, record, sizeof(m));
      return memcpy(m);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      CUpti_ActivityMemcpyPtoP4 m;
      std::memcpy(&m, record, sizeof(m));
      return memcpy_p2p(m);
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      CUpti_ActivityMemset4 m;
      std::memcpy(&m, record, sizeof(m));
      return memset(m);
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      CUpti_ActivitySynchronization2 s;
      std::memcpy(&s, record, sizeof(s));
      return synchronization(s);
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      CUpti_ActivityMemory4 m;
      std::memcpy(&m, record, sizeof(m));
      return memory(m);
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      CUpti_ActivityOverhead3 o;
      std::memcpy(&o, record, sizeof(o));
      return overhead(o);
    }
    case CUPTI_ACTIVITY_KIND_GRAPH_TRACE: {
      CUpti_ActivityGraphTrace2 g;
      std::memcpy(&g, record, sizeof(g));
      return graph(g);
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      CUpti_ActivityExternalCorrelation e;
      std::memcpy(&e, record, sizeof(e));
      external(e);
      return true;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      CUpti_ActivityDevice5 d;
      std::memcpy(&d, record, sizeof(d));
      device(d);
      return true;
    }
    default:
      ++stats_.unknown_kind;
      return false;
  }
}

SpanRecord ActivityTranslator::base(uint64_t start, uint64_t end, uint32_t device, uint32_t stream,
                                    uint32_t correlation, ActivityType activity) {
  SpanRecord r;
  r.start_ns = static_cast<int64_t>(start);
  r.end_ns = static_cast<int64_t>(end);
  r.device = static_cast<uint16_t>(device);
  r.stream = stream;
  r.correlation_id = correlation;
  r.level = static_cast<uint8_t>(Level::kDevice);
  r.kind = static_cast<uint8_t>(SpanKind::kExecution);
  r.activity = static_cast<uint8_t>(activity);
  r.clock = static_cast<uint8_t>(options_.clock);
  if (correlation != 0) {
    auto it = external_by_correlation_.find(correlation);
    if (it != external_by_correlation_.end()) {
      ++stats_.external_links;
      attrs_.add_int(attr_keys::kIssuingSpanId, static_cast<int64_t>(it->second));
      if (options_.parent_is_external) r.parent_id = it->second;
    }
  }
  return r;
}

void ActivityTranslator::emit(SpanRecord& r, std::string_view name) {
  sink_->emit(r, name, attrs_.view());
  ++stats_.spans;
}

static bool bad_interval(uint64_t start, uint64_t end) {
  return start == CUPTI_TIMESTAMP_UNKNOWN || end == CUPTI_TIMESTAMP_UNKNOWN || end < start;
}

// CUPTI names kernels by their mangled symbol ("_ZN2at6native...", seen on an H100); Kineto, Nsight
// Systems and Nsight Compute show them demangled, and so must Strata for names to be read and to
// match across formats (strata diff, the ncu join). A run launches few distinct kernels many times:
// each name is demangled once.
std::string_view ActivityTranslator::demangled(const char* name) {
  if (name[0] != '_' || name[1] != 'Z') return name;
  auto [it, inserted] = demangled_.try_emplace(name);
  if (inserted) {
    int status = 0;
    char* text = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    it->second = status == 0 && text != nullptr ? text : name;
    std::free(text);
  }
  return it->second;
}

bool ActivityTranslator::kernel(const CUpti_ActivityKernel10& k) {
  if (bad_interval(k.start, k.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  std::string_view name = k.name != nullptr ? demangled(k.name) : std::string_view("<unnamed kernel>");
  SpanRecord r = base(k.start, k.end, k.deviceId, k.streamId, k.correlationId, kernel_activity(name));
  attrs_.add_int(attr_keys::kGridX, k.gridX);
  attrs_.add_int(attr_keys::kGridY, k.gridY);
  attrs_.add_int(attr_keys::kGridZ, k.gridZ);
  attrs_.add_int(attr_keys::kBlockX, k.blockX);
  attrs_.add_int(attr_keys::kBlockY, k.blockY);
  attrs_.add_int(attr_keys::kBlockZ, k.blockZ);
  attrs_.add_int(attr_keys::kRegistersPerThread, k.registersPerThread);
  attrs_.add_int("shared_memory_static", k.staticSharedMemory);
  attrs_.add_int("shared_memory_dynamic", k.dynamicSharedMemory);
  attrs_.add_int("local_memory_per_thread", k.localMemoryPerThread);
  attrs_.add_int(attr_keys::kContext, k.contextId);
  if (k.clusterX > 1 || k.clusterY > 1 || k.clusterZ > 1) {
    attrs_.add_int("cluster_x", k.clusterX);
    attrs_.add_int("cluster_y", k.clusterY);
    attrs_.add_int("cluster_z", k.clusterZ);
  }
  if (k.graphId != 0) {
    attrs_.add_int("graph_id", k.graphId);
    attrs_.add_int("graph_node_id", static_cast<int64_t>(k.graphNodeId));
  }
  if (k.isDeviceLaunched) attrs_.add_int("device_launched", 1);
  if (options_.joiner != nullptr) {
    options_.joiner->hold(r, name, attrs_.view());
    ++stats_.spans;
    return true;
  }
  emit(r, name);
  return true;
}

bool ActivityTranslator::memcpy(const CUpti_ActivityMemcpy6& m) {
  if (bad_interval(m.start, m.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  const char* kind = memcpy_kind_name(m.copyKind);
  // The direction is the activity type; the name keeps CUPTI's exact kind (HtoA, AtoD, ...).
  SpanRecord r = base(m.start, m.end, m.deviceId, m.streamId, m.correlationId, memcpy_activity(kind));
  attrs_.add_int(attr_keys::kBytes, static_cast<int64_t>(m.bytes));
  attrs_.add_string(attr_keys::kSrcKind, memory_kind_name(m.srcKind));
  attrs_.add_string(attr_keys::kDstKind, memory_kind_name(m.dstKind));
  attrs_.add_int("async", (m.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0);
  if (m.graphId != 0) attrs_.add_int("graph_id", m.graphId);
  char name[32];
  std::snprintf(name, sizeof(name), "memcpy %s", kind);
  emit(r, name);
  return true;
}

bool ActivityTranslator::memcpy_p2p(const CUpti_ActivityMemcpyPtoP4& m) {
  if (bad_interval(m.start, m.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  SpanRecord r = base(m.start, m.end, m.deviceId, m.streamId, m.correlationId, ActivityType::kMemcpyPtoP);
  attrs_.add_int(attr_keys::kBytes, static_cast<int64_t>(m.bytes));
  attrs_.add_int("src_device", m.srcDeviceId);
  attrs_.add_int("dst_device", m.dstDeviceId);
  emit(r, "memcpy PtoP");
  return true;
}

bool ActivityTranslator::memset(const CUpti_ActivityMemset4& m) {
  if (bad_interval(m.start, m.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  SpanRecord r = base(m.start, m.end, m.deviceId, m.streamId, m.correlationId, ActivityType::kMemset);
  attrs_.add_int(attr_keys::kBytes, static_cast<int64_t>(m.bytes));
  attrs_.add_int("value", m.value);
  attrs_.add_string("memory_kind", memory_kind_name(m.memoryKind));
  emit(r, "memset");
  return true;
}

bool ActivityTranslator::synchronization(const CUpti_ActivitySynchronization2& s) {
  if (bad_interval(s.start, s.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  // Synchronization is host time spent waiting: a device-level span on the stream it waited for.
  SpanRecord r = base(s.start, s.end, kNoDevice, s.streamId, s.correlationId, ActivityType::kSync);
  attrs_.add_int(attr_keys::kContext, s.contextId);
  if (s.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE ||
      s.type == CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT)
    attrs_.add_int("event", s.cudaEventId);
  emit(r, synchronization_type_name(s.type));
  return true;
}

bool ActivityTranslator::memory(const CUpti_ActivityMemory4& m) {
  if (m.timestamp == CUPTI_TIMESTAMP_UNKNOWN) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  SpanRecord r =
      base(m.timestamp, m.timestamp, m.deviceId, m.streamId, m.correlationId, ActivityType::kMemoryEvent);
  r.kind = static_cast<uint8_t>(SpanKind::kInstant);
  r.correlation_id = 0;  // an instant is not the execution of a launch
  attrs_.add_int(attr_keys::kBytes, static_cast<int64_t>(m.bytes));
  attrs_.add_int("address", static_cast<int64_t>(m.address));
  attrs_.add_string("memory_kind", memory_kind_name(m.memoryKind));
  attrs_.add_int("api_correlation_id", m.correlationId);
  attrs_.add_int("async", m.isAsync ? 1 : 0);
  emit(r, m.memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? "memory.release"
                                                                                : "memory.allocation");
  return true;
}

bool ActivityTranslator::overhead(const CUpti_ActivityOverhead3& o) {
  if (bad_interval(o.start, o.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  SpanRecord r = base(o.start, o.end, kNoDevice, kNoStream, 0, ActivityType::kOverhead);
  r.level = static_cast<uint8_t>(Level::kRuntimeApi);
  r.kind = static_cast<uint8_t>(SpanKind::kSpan);
  if (o.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) r.tid = o.objectId.pt.threadId;
  emit(r, overhead_kind_name(o.overheadKind));
  return true;
}

bool ActivityTranslator::graph(const CUpti_ActivityGraphTrace2& g) {
  if (bad_interval(g.start, g.end)) {
    ++stats_.bad_timestamps;
    return false;
  }
  attrs_.clear();
  SpanRecord r = base(g.start, g.end, g.deviceId, g.streamId, g.correlationId, ActivityType::kGraph);
  attrs_.add_int("graph_id", g.graphId);
  if (g.endDeviceId != g.deviceId) attrs_.add_int("end_device", g.endDeviceId);
  emit(r, "cudaGraph");
  return true;
}

void ActivityTranslator::external(const CUpti_ActivityExternalCorrelation& e) {
  if (e.externalKind != CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) return;  // someone else's ids
  if (e.externalId == 0) return;  // no Strata span was open at the call
  if (external_by_correlation_.size() >= options_.max_external_entries) {
    // Bounded memory on very long runs: old entries belong to finished work.
    external_by_correlation_.clear();
    ++stats_.external_map_resets;
  }
  external_by_correlation_[e.correlationId] = e.externalId;
}

// A device's properties become process properties "device.<id>.*" (the stats chunk carries them as
// collector properties): the name picks the roofline's peak table entry (analysis/device_peaks), and
// SM count, clocks and bandwidth say what the GPU could do, as nsys's TARGET_INFO_GPU does.
void ActivityTranslator::device(const CUpti_ActivityDevice5& d) {
  const std::string prefix = "device." + std::to_string(d.id) + ".";
  if (d.name != nullptr) sink_->report_property(prefix + "name", d.name);
  sink_->report_property(prefix + "compute_capability", std::to_string(d.computeCapabilityMajor) + "." +
                                                            std::to_string(d.computeCapabilityMinor));
  sink_->report_property(prefix + "sm_count", std::to_string(d.numMultiprocessors));
  sink_->report_property(prefix + "core_clock_khz", std::to_string(d.coreClockRate));
  sink_->report_property(prefix + "memory_bandwidth_kbps", std::to_string(d.globalMemoryBandwidth));
  sink_->report_property(prefix + "memory_bytes", std::to_string(d.globalMemorySize));
  sink_->report_property(prefix + "l2_bytes", std::to_string(d.l2CacheSize));
}

}  // namespace strata::gpu
