// The span as stored on disk and in memory. One fixed 64-byte POD layout for both, so loading a
// trace is a checksum and a copy, and memory stays close to the file size.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "core/activity_type.h"

namespace strata {

inline constexpr uint32_t kNoStream = 0xFFFFFFFFu;
inline constexpr uint16_t kNoDevice = 0xFFFFu;

// Clock domains with fixed ids. Every timestamp names its domain; the trace header records how each
// maps onto the reference domain (monotonic), so traces from several clocks line up.
enum class ClockDomain : uint8_t {
  kMonotonic = 0,  // CLOCK_MONOTONIC, ns: the reference domain
  kRealtime = 1,   // CLOCK_REALTIME, ns
  kTsc = 2,        // CPU time-stamp counter ticks (only inside the collector; converted before writing)
  kGpu = 3,        // device timestamps (CUPTI), ns
  kImported = 4,   // timestamps taken from a foreign trace file, ns relative to its own origin
};

enum SpanFlags : uint8_t {
  kSpanFlagParentReconstructed = 1u << 0,  // parent found by containment, not by a known link
  kSpanFlagUnfinished = 1u << 1,           // end missing (process died); end_ns = last seen time
  kSpanFlagAmbiguousParent = 1u << 2,      // several candidate parents overlapped
  kSpanFlagFromTicks = 1u << 3,             // times converted from CPU ticks by the collector; the
                                            // loader refines them with the stream's clock snapshots
};

struct SpanRecord {
  uint64_t span_id = 0;
  uint64_t parent_id = 0;       // 0: no parent
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint64_t correlation_id = 0;  // 0: none; links a launch to its execution(s)
  uint32_t name = 0;            // string id
  uint32_t tid = 0;
  uint32_t stream = kNoStream;  // device stream / queue
  uint16_t device = kNoDevice;
  uint16_t process = 0;         // index into the trace's process table (set by the loader)
  uint16_t attr_count = 0;      // attributes that follow in the chunk's attribute area
  uint8_t level = 0;            // strata::Level value
  uint8_t kind = 0;             // strata::SpanKind value
  uint8_t clock = 0;            // strata::ClockDomain value
  uint8_t flags = 0;            // SpanFlags
  uint8_t activity = 0;         // strata::ActivityType value; 0 (unknown) in files before format 1.1
  uint8_t reserved = 0;

  int64_t duration_ns() const { return end_ns - start_ns; }
  ActivityType activity_type() const { return static_cast<ActivityType>(activity); }
};
static_assert(sizeof(SpanRecord) == 64);
static_assert(offsetof(SpanRecord, activity) == 62);  // docs/trace-format.md
static_assert(std::is_trivially_copyable_v<SpanRecord>);

enum class AttrType : uint8_t {
  kInt = 1,
  kDouble = 2,
  kString = 3,  // value is a string id
  kMetric = 4,  // a numeric measurement (double), kept apart from descriptive attributes
};

struct AttrRecord {
  uint32_t key = 0;  // string id
  uint8_t type = 0;  // AttrType
  uint8_t reserved[3] = {0, 0, 0};
  union {
    int64_t i;
    double d;
    uint64_t u;
  } value{.i = 0};
};
static_assert(sizeof(AttrRecord) == 16);
static_assert(std::is_trivially_copyable_v<AttrRecord>);

}  // namespace strata
