// Encoding and decoding of chunk payloads. The decoders validate every size against the payload.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/span_record.h"
#include "format/file_format.h"

namespace strata::format {

// Property keys used in Process, Stats, End and Record chunks (documented in docs/trace-format.md).
namespace keys {
inline constexpr std::string_view kPid = "pid";
inline constexpr std::string_view kPpid = "ppid";
inline constexpr std::string_view kHost = "host";
inline constexpr std::string_view kArgv = "argv";  // arguments separated by NUL
inline constexpr std::string_view kExe = "exe";
inline constexpr std::string_view kTraceId = "trace_id";
inline constexpr std::string_view kParentSpanId = "parent_span_id";
inline constexpr std::string_view kStartRealtimeNs = "start_realtime_ns";
inline constexpr std::string_view kStartMonotonicNs = "start_monotonic_ns";
inline constexpr std::string_view kLevel = "level";
inline constexpr std::string_view kClockDomains = "clock_domains";
inline constexpr std::string_view kWriter = "writer";
inline constexpr std::string_view kTscNsPerTick = "tsc_ns_per_tick";
inline constexpr std::string_view kTscAnchorTicks = "tsc_anchor_ticks";  // the calibration's origin:
inline constexpr std::string_view kTscAnchorNs = "tsc_anchor_ns";        // ns = anchor_ns + (ticks - anchor_ticks) * ns_per_tick
inline constexpr std::string_view kDroppedPrefix = "dropped.";
inline constexpr std::string_view kEndMonotonicNs = "end_monotonic_ns";
// End chunk: the process's OS threads when it ended (Strata's writer thread left out), those of them
// that used at least a tenth of the CPU time of its busiest thread, and the CPUs it was
// allowed to run on (its affinity mask); the loader keeps them as properties "end.threads",
// "end.busy_threads" and "end.cpus" (the thread_oversubscription rule of `strata summary` reads them).
inline constexpr std::string_view kEndThreads = "threads";
inline constexpr std::string_view kEndBusyThreads = "busy_threads";
inline constexpr std::string_view kEndCpus = "cpus";
// Record chunk: how `strata record` set the command's allocator (src/cli/malloc_settings.h), read by
// `strata diff`: "pinned: <the variables set>", "default" (glibc's dynamic thresholds), or
// "user: <the command's own threshold settings>". Absent in recordings older than it.
inline constexpr std::string_view kRecordMalloc = "malloc";
inline constexpr std::string_view kMallocPinned = "pinned";
inline constexpr std::string_view kMallocDefault = "default";
inline constexpr std::string_view kMallocUser = "user";
}  // namespace keys

struct StringEntry {
  uint32_t id;
  std::string_view text;
};

// Strings payload: u32 count, then { u32 id, u32 len, bytes } per entry.
void encode_strings(std::span<const std::pair<uint32_t, std::string_view>> entries, std::string* out);
bool decode_strings(std::string_view payload, std::vector<StringEntry>* out, std::string* error);

// Spans payload: SpansChunkHeader, SpanRecord[span_count], AttrRecord[attr_count].
// The attributes of consecutive spans follow each other in span order (attr_count per span).
void encode_spans(std::span<const SpanRecord> spans, std::span<const AttrRecord> attrs, std::string* out);
struct DecodedSpans {
  // Raw views into the payload (possibly unaligned): copy records out with memcpy.
  const char* span_bytes = nullptr;
  const char* attr_bytes = nullptr;
  uint32_t span_count = 0;
  uint32_t attr_count = 0;
};
bool decode_spans(std::string_view payload, DecodedSpans* out, std::string* error);

void encode_clock_snapshot(std::span<const ClockReading> readings, std::string* out);
bool decode_clock_snapshot(std::string_view payload, std::vector<ClockReading>* out, std::string* error);

}  // namespace strata::format
