// Stream classification (DeepProf IV-A, generalized beyond TensorFlow's stream numbering).
//
// A track is one device stream (process, device, stream) or, for host work, one thread
// (process, tid). Roles:
//   main   - the track carrying the workload's compute ops (kernels; on CPU traces the thread with
//            the most framework ops). One per trace; the others holding compute are assist.
//   copy   - tracks holding only memory copies; named by their dominant direction.
//   assist - everything else (memsets, stray copies mixed with other work, helper threads).
// Nothing depends on stream numbers: a track's role comes from what runs on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace/trace.h"

namespace strata::analysis::iterations {

enum class TrackRole { kMain, kCopy, kAssist };
enum class CopyDirection { kNone, kHostToDevice, kDeviceToHost, kDeviceToDevice, kPeer, kHostToHost };

std::string_view role_name(TrackRole role);
std::string_view direction_name(CopyDirection direction);

// What a span is, from its activity type (set by the tracer or importer that made it, never guessed
// from names here): device copies by direction, framework tensor copies as host copies on threads.
CopyDirection copy_direction(uint8_t activity, bool device_span);
bool is_memset(uint8_t activity);

struct TrackKey {
  uint16_t process = 0;
  bool device = false;      // a device stream; otherwise a host thread
  uint16_t device_id = 0;
  uint32_t stream_or_tid = 0;
  auto operator<=>(const TrackKey&) const = default;
};

struct TrackInfo {
  TrackKey key;
  std::string label;  // "pid 12 device 0 stream 7" / "pid 12 thread 345 (MainThread)"
  TrackRole role = TrackRole::kAssist;
  CopyDirection copy_direction = CopyDirection::kNone;  // for copy tracks: the dominant direction
  uint64_t ops = 0;           // top-level op spans at the op level
  uint64_t compute_ops = 0;
  uint64_t copies[6] = {};    // by CopyDirection
  uint64_t memsets = 0;
  uint64_t undirected_copies = 0;  // copies whose source gave no direction (ActivityType kMemcpyOther)
  int64_t busy_ns = 0;        // summed duration of the top-level ops
  std::vector<uint32_t> op_spans;  // indices into trace.spans, top-level only, by start time
};

struct Classification {
  bool device_trace = false;   // main track is a device stream
  uint8_t op_level = 0;        // the level whose spans form the op sequence
  std::vector<TrackInfo> tracks;
  int main_track = -1;         // index into tracks
  std::string note;            // how the main track was chosen
};

// copy_direction(span.activity, device_span).
CopyDirection span_copy_direction(const SpanRecord& span, bool device_span);


struct ClassifyOptions {
  std::optional<uint8_t> op_level;  // default: device if present, else layer, else the busiest level
  std::string stream;               // "device:D/stream:S", "stream:S", "tid:T", "thread:T"; empty = auto
};

// Returns false with *error (one line: what was missing and how to record it) when the trace has no
// usable ops, or when `stream` names no track.
bool classify_tracks(const trace::Trace& trace, const ClassifyOptions& options, Classification* out,
                     std::string* error);

}  // namespace strata::analysis::iterations
