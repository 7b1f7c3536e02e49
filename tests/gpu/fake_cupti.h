// Test doubles for the GPU collector: a scripted CUPTI and a sink that keeps what it is given.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/attr_keys.h"
#include "gpu/cupti_interface.h"
#include "gpu/span_sink.h"

namespace strata::gpu::testing {

struct RecordedAttr {
  std::string key;
  AttrType type;
  int64_t i;
  double d;
  std::string s;
};

struct RecordedSpan {
  SpanRecord record;
  std::string name;
  std::vector<RecordedAttr> attrs;

  const RecordedAttr* attr(std::string_view key) const {
    for (const auto& a : attrs)
      if (a.key == key) return &a;
    return nullptr;
  }
  int64_t int_attr(std::string_view key) const {
    const RecordedAttr* a = attr(key);
    return a != nullptr ? a->i : -999999;
  }
  std::string string_attr(std::string_view key) const {
    const RecordedAttr* a = attr(key);
    return a != nullptr ? a->s : "<missing>";
  }
};

class RecordingSink : public SpanSink {
 public:
  void emit(const SpanRecord& record, std::string_view name,
            std::span<const collect::AttrDraft> attrs) override {
    RecordedSpan s{record, std::string(name), {}};
    for (const auto& a : attrs) s.attrs.push_back({std::string(a.key), a.type, a.i, a.d, std::string(a.s)});
    spans.push_back(std::move(s));
  }
  uint64_t current_api_span() override { return api_span; }
  void report_drops(std::string_view cause, uint64_t total) override { drops[std::string(cause)] = total; }
  void report_property(std::string_view key, std::string_view value) override {
    properties[std::string(key)] = std::string(value);
  }
  const RecordedSpan* find(const std::string& name) const {
    for (const auto& s : spans)
      if (s.name == name) return &s;
    return nullptr;
  }

  std::vector<RecordedSpan> spans;
  uint64_t api_span = 0;
  std::map<std::string, uint64_t> drops;
  std::map<std::string, std::string> properties;
};

// Scripted CUPTI: names for a few callback ids, configurable failures, and "activity buffers" whose
// records are the test's fabricated structs (handed out by next_record in order).
class FakeCupti : public CuptiInterface {
 public:
  CUptiResult subscribe(CUpti_CallbackFunc, void*) override { return subscribe_result; }
  CUptiResult unsubscribe() override {
    ++unsubscribes;
    return CUPTI_SUCCESS;
  }
  CUptiResult enable_callback(CUpti_CallbackDomain domain, CUpti_CallbackId id) override {
    enabled_callbacks.emplace_back(domain, id);
    return CUPTI_SUCCESS;
  }
  const char* callback_name(CUpti_CallbackDomain domain, CUpti_CallbackId id) override {
    auto it = names.find({domain, id});
    return it != names.end() ? it->second.c_str() : nullptr;
  }
  CUptiResult activity_enable(CUpti_ActivityKind kind) override {
    if (failing_kinds.count(kind)) return CUPTI_ERROR_NOT_COMPATIBLE;
    enabled_kinds.push_back(kind);
    return CUPTI_SUCCESS;
  }
  CUptiResult register_buffer_callbacks(CUpti_BuffersCallbackRequestFunc r,
                                        CUpti_BuffersCallbackCompleteFunc c) override {
    requested = r;
    completed = c;
    return CUPTI_SUCCESS;
  }
  CUptiResult register_timestamp_callback(CUpti_TimestampCallbackFunc fn) override {
    timestamp = fn;
    return timestamp_result;
  }
  CUptiResult set_flush_period_ms(uint32_t) override { return CUPTI_SUCCESS; }
  // Delivers the queued records as one buffer, the way CUPTI does on a forced flush.
  CUptiResult flush_all(uint32_t) override {
    if (requested == nullptr || completed == nullptr || pending.empty()) return CUPTI_SUCCESS;
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    requested(&buffer, &size, &max_records);
    delivering = std::move(pending);
    pending.clear();
    next = 0;
    completed(nullptr, 0, buffer, size, 1);
    return CUPTI_SUCCESS;
  }
  CUptiResult next_record(uint8_t*, size_t, CUpti_Activity** record) override {
    if (next == walk_error_at) return CUPTI_ERROR_INVALID_KIND;
    if (next >= delivering.size()) return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = reinterpret_cast<CUpti_Activity*>(delivering[next++].data());
    return CUPTI_SUCCESS;
  }
  CUptiResult dropped_records(CUcontext, uint32_t, size_t* dropped) override {
    *dropped = dropped_per_buffer;
    return CUPTI_SUCCESS;
  }
  CUptiResult push_external_correlation(uint64_t id) override {
    pushed.push_back(id);
    return CUPTI_SUCCESS;
  }
  CUptiResult pop_external_correlation(uint64_t* id) override {
    *id = pushed.empty() ? 0 : pushed.back();
    ++pops;
    return CUPTI_SUCCESS;
  }
  const char* result_string(CUptiResult r) override {
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
               ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
               : "fake CUPTI error";
  }

  template <typename T>
  void queue(const T& record) {
    std::vector<uint8_t> bytes(sizeof(T));
    std::memcpy(bytes.data(), &record, sizeof(T));
    pending.push_back(std::move(bytes));
  }

  CUptiResult subscribe_result = CUPTI_SUCCESS;
  CUptiResult timestamp_result = CUPTI_SUCCESS;
  std::map<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>, std::string> names;
  std::map<CUpti_ActivityKind, bool> failing_kinds;
  std::vector<std::pair<CUpti_CallbackDomain, CUpti_CallbackId>> enabled_callbacks;
  std::vector<CUpti_ActivityKind> enabled_kinds;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  std::vector<std::vector<uint8_t>> pending, delivering;
  size_t next = 0;
  size_t walk_error_at = static_cast<size_t>(-1);
  size_t dropped_per_buffer = 0;
  std::vector<uint64_t> pushed;
  int pops = 0;
  int unsubscribes = 0;
};

}  // namespace strata::gpu::testing
