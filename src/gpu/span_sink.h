// Where the GPU collectors put their spans. The recording session in production; a vector in tests,
// so translation logic is checked without a recorder or a GPU.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "collect/session.h"
#include "core/span_record.h"

namespace strata::gpu {

class SpanSink {
 public:
  virtual ~SpanSink() = default;
  // A finished span; name and attributes are copied before the call returns.
  virtual void emit(const SpanRecord& record, std::string_view name,
                    std::span<const collect::AttrDraft> attrs) = 0;
  // The innermost open API span of the calling thread (0 when none): the parent of a launch, and
  // the id pushed to CUPTI as external correlation.
  virtual uint64_t current_api_span() = 0;
  // Cumulative loss counters and facts about the collector, reported with the trace's drops and
  // stats (no-ops where there is nothing to report to).
  virtual void report_drops(std::string_view /*cause*/, uint64_t /*total*/) {}
  virtual void report_property(std::string_view /*key*/, std::string_view /*value*/) {}
};

// Forwards to the process's current recording session (collect::current_session()). Spans emitted
// while no session is active are counted in `lost()` so the collector can report them.
class SessionSink final : public SpanSink {
 public:
  void emit(const SpanRecord& record, std::string_view name,
            std::span<const collect::AttrDraft> attrs) override;
  uint64_t current_api_span() override;
  void report_drops(std::string_view cause, uint64_t total) override;
  void report_property(std::string_view key, std::string_view value) override;
  uint64_t lost() const { return lost_; }

 private:
  uint64_t lost_ = 0;
};

// Builds the attribute list of one span; keeps the strings it was given alive until emitted.
class AttrList {
 public:
  void add_int(std::string_view key, int64_t v) { items_.push_back({key, AttrType::kInt, v, 0, {}}); }
  void add_double(std::string_view key, double v) { items_.push_back({key, AttrType::kDouble, 0, v, {}}); }
  void add_metric(std::string_view key, double v) { items_.push_back({key, AttrType::kMetric, 0, v, {}}); }
  // `value` must outlive the emit call (string literals, record-owned strings).
  void add_string(std::string_view key, std::string_view value) {
    items_.push_back({key, AttrType::kString, 0, 0, value});
  }
  std::span<const collect::AttrDraft> view() const { return items_; }
  void clear() { items_.clear(); }

 private:
  std::vector<collect::AttrDraft> items_;
};

}  // namespace strata::gpu
