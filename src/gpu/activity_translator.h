// CUPTI activity records -> Strata spans. Kernels, copies, memsets, synchronizations and graph
// launches become execution spans (device level) on their device and stream, linked to their launch
// by CUPTI's correlation id; memory allocations become instants; CUPTI overhead becomes a runtime
// span. Each span's activity type (kernel, collective, memcpy by direction, memset, sync, graph,
// memory event, overhead) is set here, from the record's kind and fields. External-correlation
// records map a correlation id to the Strata span that was open when the API was called (pushed by
// the callback side), attached to the execution as `issuing_span_id` (attr_keys::kIssuingSpanId).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "core/activity_type.h"
#include "core/span_record.h"
#include "gpu/span_sink.h"

namespace strata::gpu {

class KernelMetricJoiner;

struct TranslatorStats {
  uint64_t records = 0;         // records seen
  uint64_t spans = 0;           // spans emitted
  uint64_t unknown_kind = 0;    // records of a kind we do not translate (dropped, counted)
  uint64_t bad_timestamps = 0;  // end before start or unknown timestamps (dropped, counted)
  uint64_t external_links = 0;  // executions that found their external (Strata) span
  uint64_t external_map_resets = 0;
};

struct TranslatorOptions {
  // Clock domain of activity timestamps: monotonic when CUPTI's timestamp callback was registered,
  // else CUPTI's own GPU clock.
  ClockDomain clock = ClockDomain::kMonotonic;
  // With no launch spans (callback API off), an execution's parent is its external span directly.
  bool parent_is_external = false;
  size_t max_external_entries = 1u << 22;
  // With GPU metrics on, kernels wait here for their profiler range instead of going to the sink.
  KernelMetricJoiner* joiner = nullptr;
};

class ActivityTranslator {
 public:
  ActivityTranslator(SpanSink* sink, TranslatorOptions options) : sink_(sink), options_(options) {}

  // Translates one record; returns false when it was dropped (counted in stats()).
  bool translate(const CUpti_Activity* record);
  const TranslatorStats& stats() const { return stats_; }
  void set_options(TranslatorOptions options) { options_ = options; }

 private:
  SpanRecord base(uint64_t start, uint64_t end, uint32_t device, uint32_t stream, uint32_t correlation,
                  ActivityType activity);
  void emit(SpanRecord& r, std::string_view name);
  bool kernel(const CUpti_ActivityKernel10& k);
  bool memcpy(const CUpti_ActivityMemcpy6& m);
  bool memcpy_p2p(const CUpti_ActivityMemcpyPtoP4& m);
  bool memset(const CUpti_ActivityMemset4& m);
  bool synchronization(const CUpti_ActivitySynchronization2& s);
  bool memory(const CUpti_ActivityMemory4& m);
  bool overhead(const CUpti_ActivityOverhead3& o);
  bool graph(const CUpti_ActivityGraphTrace2& g);
  void external(const CUpti_ActivityExternalCorrelation& e);
  void device(const CUpti_ActivityDevice5& d);
  std::string_view demangled(const char* name);

  SpanSink* sink_;
  TranslatorOptions options_;
  TranslatorStats stats_;
  AttrList attrs_;
  std::unordered_map<uint32_t, uint64_t> external_by_correlation_;
  std::unordered_map<std::string, std::string> demangled_;  // mangled kernel name -> readable
};

const char* memcpy_kind_name(uint8_t kind);
const char* memory_kind_name(uint32_t kind);
const char* synchronization_type_name(uint32_t type);
const char* overhead_kind_name(uint32_t kind);

}  // namespace strata::gpu
