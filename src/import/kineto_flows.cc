// Binding Chrome-trace flow events ("s"/"t"/"f": Kineto's launch-to-kernel ac2g and forward-to-backward
// arrows) to the slices they start and end in, the way Chrome's viewer does. Kept apart from the Kineto
// converter (kineto_importer.cc), which calls it once all events are read.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "core/level.h"
#include "core/span_record.h"
#include "import/converters.h"

namespace strata::import {

namespace {

// The first member starting after ts (std::upper_bound by start), searched outwards from `hint`, the
// answer for the previous flow of the track: flows of a track mostly come in time order, so the
// answer is usually a few members away, and a full binary search over a track of tens of thousands
// of slices was most of this function's time. Exact for any hint in [0, members.size()].
template <typename Member>
size_t upper_from(const std::vector<Member>& members, int64_t ts, size_t hint) {
  const size_t n = members.size();
  auto after = [ts](const Member& m) { return ts < m.start_ns; };
  auto search = [&](size_t from, size_t to) {  // upper_bound within [from, to)
    return static_cast<size_t>(std::partition_point(members.begin() + static_cast<ptrdiff_t>(from),
                                                    members.begin() + static_cast<ptrdiff_t>(to),
                                                    [&](const Member& m) { return !after(m); }) -
                               members.begin());
  };
  if (hint < n && !after(members[hint])) {  // the answer is beyond hint: gallop right
    size_t low = hint, step = 1;
    while (low + step < n && !after(members[low + step])) {
      low += step;
      step *= 2;
    }
    return search(low + 1, std::min(low + step, n));
  }
  size_t high = hint;  // the answer is at or before hint: gallop left
  size_t step = 1;
  while (high >= step && after(members[high - step])) {
    high -= step;
    step *= 2;
  }
  return search(high >= step ? high - step + 1 : 0, high);
}

}  // namespace

std::vector<size_t> bind_flows(const std::vector<PendingSpan>& spans, const std::vector<FlowEvent>& flows) {
  std::vector<size_t> result(flows.size(), SIZE_MAX);
  if (flows.empty()) return result;
  // Spans per JSON track, by start, with their start beside them: the searches below stay in one
  // contiguous array instead of reaching into the span list at every step.
  // The end is kept too: the enclosing search reads it for every slice it steps back over, and
  // reaching into the span list for it was a cache miss per step (most of this function's time).
  struct Member {
    int64_t start_ns, end_ns;
    uint32_t span;
  };
  // hint: the previous flow's answer on this track. Flows alternate between tracks (an ac2g arrow
  // starts on a CPU thread and ends on a GPU stream), so each track keeps its own: one shared hint,
  // reset at every change of track, made most flows gallop from the track's first slice.
  struct Track {
    std::vector<Member> members;
    size_t hint = 0;
  };
  std::map<std::pair<int64_t, int64_t>, Track> tracks;
  std::pair<int64_t, int64_t> track_of_last{};
  std::vector<Member>* members_of_last = nullptr;  // consecutive spans are mostly on one track
  for (size_t i = 0; i < spans.size(); ++i) {
    const PendingSpan& s = spans[i];
    if (s.record.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
        s.record.kind == static_cast<uint8_t>(SpanKind::kCounter))
      continue;
    if (members_of_last == nullptr || track_of_last != std::pair(s.track_pid, s.track_tid)) {
      track_of_last = {s.track_pid, s.track_tid};
      members_of_last = &tracks[track_of_last].members;
    }
    members_of_last->push_back({s.record.start_ns, s.record.end_ns, static_cast<uint32_t>(i)});
  }
  // std::sort by start alone, as before: equal starts keep the order this sort has always given them.
  // A track whose starts already strictly increase (most GPU streams) has one order, its own: no sort.
  auto by_start = [](const Member& a, const Member& b) { return a.start_ns < b.start_ns; };
  auto strictly_increasing = [](const std::vector<Member>& m) {
    for (size_t i = 1; i < m.size(); ++i)
      if (m[i].start_ns <= m[i - 1].start_ns) return false;
    return true;
  };
  for (auto& [key, track] : tracks)
    if (!strictly_increasing(track.members)) std::sort(track.members.begin(), track.members.end(), by_start);
  const std::pair<int64_t, int64_t>* last_key = nullptr;
  Track* last_track = nullptr;
  for (size_t k = 0; k < flows.size(); ++k) {
    const FlowEvent& f = flows[k];
    if (last_key == nullptr || *last_key != std::pair(f.track_pid, f.track_tid)) {
      auto it = tracks.find({f.track_pid, f.track_tid});
      if (it == tracks.end()) continue;
      last_key = &it->first;
      last_track = &it->second;
    }
    const auto& members = last_track->members;
    size_t& hint = last_track->hint;
    // First span starting after ts; candidates for "enclosing" are before it.
    hint = upper_from(members, f.ts_ns, hint);
    auto upper = members.begin() + static_cast<ptrdiff_t>(hint);
    if (f.enclosing) {
      // The innermost (shortest) slice containing ts; scanning back a bounded number of slices keeps
      // this O(log n) per flow on well-nested tracks. A slice starting at s that contains ts lasts at
      // least ts - s, so once that reaches the best duration no earlier slice can win: the scan
      // stops there (same answer, usually after one or two slices instead of 256).
      size_t best = SIZE_MAX;
      int64_t best_duration = INT64_MAX;
      int budget = 256;
      for (auto p = upper; p != members.begin() && budget-- > 0;) {
        --p;
        if (f.ts_ns - p->start_ns >= best_duration) break;
        const int64_t duration = elapsed_ns(p->start_ns, p->end_ns);  // SpanRecord::duration_ns
        if (p->end_ns >= f.ts_ns && duration < best_duration) {
          best = p->span;
          best_duration = duration;
        }
      }
      result[k] = best;
    } else {
      // The next slice to start at or after ts: the first of those starting at ts just before upper
      // (members before upper start at or before ts), by a binary search if there are many.
      auto lower = upper;
      for (int back = 0; lower != members.begin() && (lower - 1)->start_ns >= f.ts_ns; ++back) {
        if (back == 8) {
          lower = std::lower_bound(members.begin(), upper, f.ts_ns,
                                   [](const Member& m, int64_t ts) { return m.start_ns < ts; });
          break;
        }
        --lower;
      }
      if (lower != members.end()) result[k] = lower->span;
    }
  }
  return result;
}

}  // namespace strata::import
