// Tracks: the timelines spans live on. A host span lives on its process's thread; device work on
// its process's (device, stream) queue. This is the one definition of a track: the span tree nests
// spans per track, exports draw one row per track, analyses group by it.
#pragma once

#include <compare>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/span_record.h"

namespace strata::trace {

class Trace;

struct TrackKey {
  uint16_t process = 0;         // index into the trace's process table
  uint16_t device = kNoDevice;  // device work: the device, or kNoDevice for a stream without one
  uint32_t stream = kNoStream;  // device work: the stream, or kNoStream for a device without streams
  uint32_t tid = 0;             // host spans: the thread; 0 for device work
  bool on_device() const { return stream != kNoStream || device != kNoDevice; }
  auto operator<=>(const TrackKey&) const = default;
};

// The track a span lives on.
inline TrackKey track_key(const SpanRecord& s) {
  if (s.stream != kNoStream || s.device != kNoDevice) return {s.process, s.device, s.stream, 0};
  return {s.process, kNoDevice, kNoStream, s.tid};
}

struct TrackKeyHash {
  size_t operator()(const TrackKey& k) const {
    const uint64_t a = (uint64_t{k.process} << 48) ^ (uint64_t{k.device} << 32) ^ k.stream;
    return std::hash<uint64_t>()(a * 0x9E3779B97F4A7C15ull ^ k.tid);
  }
};

struct Track {
  TrackKey key;
  int64_t rank = -1;        // the process's rank in a multi-rank job (process property "rank"), -1: none
  uint32_t span_count = 0;  // spans on this track
};

// Every track of a trace, in key order (process, then device, stream, thread). A span's track is
// looked up from its record (no per-span column: the table costs memory per track, not per span).
class TrackTable {
 public:
  static TrackTable build(const Trace& trace);

  std::span<const Track> tracks() const { return tracks_; }
  size_t size() const { return tracks_.size(); }
  const Track& operator[](uint32_t track) const { return tracks_[track]; }
  // The track of a span of the trace the table was built for.
  uint32_t track_of(const SpanRecord& span) const { return ids_.at(track_key(span)); }
  size_t span_count() const { return span_count_; }  // the spans the table was built for
  // A name for the track as profilers show it: "GPU 0 stream 7", or the thread's name ("thread N"
  // when the process did not name it; "main thread" for the thread whose id is the pid).
  std::string label(const Trace& trace, uint32_t track) const;
  // Spans per track in span order, members[begin[t] .. begin[t+1]), and each span's track (when
  // `track_of` is given). Built on demand: 4 bytes a span each.
  void group(const Trace& trace, std::vector<uint32_t>* begin, std::vector<uint32_t>* members,
             std::vector<uint32_t>* track_of = nullptr) const;

 private:
  std::vector<Track> tracks_;
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> ids_;
  size_t span_count_ = 0;
};

}  // namespace strata::trace
