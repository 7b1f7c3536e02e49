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

// The times a trace holds: within 2^62 ns (146 years) either side of the clock's origin, so the
// difference of any two (a duration, an offset from the trace's start) fits in int64. Readers and
// importers bring every time from a file into this range (clamp_span_times) or drop the event.
inline constexpr int64_t kMaxTimeNs = (int64_t{1} << 62) - 1;
inline constexpr int64_t kMinTimeNs = -kMaxTimeNs;
inline constexpr bool time_in_range(int64_t ns) { return ns >= kMinTimeNs && ns <= kMaxTimeNs; }

// A time computed in floating point (clock refinement, unit conversion) as an int64 within the
// range above: converting a double outside int64 (or a NaN) is undefined behaviour otherwise.
inline int64_t clamp_to_time_ns(double ns) {
  if (!(ns > static_cast<double>(kMinTimeNs))) return kMinTimeNs;  // also NaN
  if (ns >= static_cast<double>(kMaxTimeNs)) return kMaxTimeNs;
  return static_cast<int64_t>(ns);
}
inline int64_t clamp_time_ns(int64_t ns) {
  return ns < kMinTimeNs ? kMinTimeNs : ns > kMaxTimeNs ? kMaxTimeNs : ns;
}
// base + offset, saturated into the range.
inline int64_t add_time_ns(int64_t base, int64_t offset) {
  int64_t sum;
  if (__builtin_add_overflow(base, offset, &sum)) return offset > 0 ? kMaxTimeNs : kMinTimeNs;
  return clamp_time_ns(sum);
}
// end - start, saturated at the int64 limits instead of overflowing.
inline int64_t elapsed_ns(int64_t start, int64_t end) {
  int64_t d;
  if (__builtin_sub_overflow(end, start, &d)) return end > start ? INT64_MAX : INT64_MIN;
  return d;
}
// a - b as a double, exact when the difference fits in int64 (times from a file may not).
inline double time_difference(int64_t a, int64_t b) {
  int64_t d;
  if (!__builtin_sub_overflow(a, b, &d)) return static_cast<double>(d);
  return static_cast<double>(a) - static_cast<double>(b);
}

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

  // Saturates instead of overflowing (loaded spans keep times within kMaxTimeNs, so it is exact).
  int64_t duration_ns() const { return elapsed_ns(start_ns, end_ns); }
  ActivityType activity_type() const { return static_cast<ActivityType>(activity); }
};
static_assert(sizeof(SpanRecord) == 64);
static_assert(offsetof(SpanRecord, activity) == 62);  // docs/trace-format.md

// Moves a span's times into [kMinTimeNs, kMaxTimeNs]; true when one was outside (forged or corrupt).
inline bool clamp_span_times(SpanRecord& span) {
  if (time_in_range(span.start_ns) && time_in_range(span.end_ns)) return false;
  span.start_ns = clamp_time_ns(span.start_ns);
  span.end_ns = clamp_time_ns(span.end_ns);
  return true;
}
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
