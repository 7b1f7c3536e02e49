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
  std::map<std::pair<int64_t, int64_t>, std::vector<Member>> tracks;
  std::pair<int64_t, int64_t> track_of_last{};
  std::vector<Member>* members_of_last = nullptr;  // consecutive spans are mostly on one track
  for (size_t i = 0; i < spans.size(); ++i) {
    const PendingSpan& s = spans[i];
    if (s.record.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
        s.record.kind == static_cast<uint8_t>(SpanKind::kCounter))
      continue;
    if (members_of_last == nullptr || track_of_last != std::pair(s.track_pid, s.track_tid)) {
      track_of_last = {s.track_pid, s.track_tid};
      members_of_last = &tracks[track_of_last];
    }
    members_of_last->push_back({s.record.start_ns, s.record.end_ns, static_cast<uint32_t>(i)});
  }
  // std::sort by start alone, as before: equal starts keep the order this sort has always given them.
  for (auto& [key, members] : tracks)
    std::sort(members.begin(), members.end(),
              [](const Member& a, const Member& b) { return a.start_ns < b.start_ns; });
  const std::pair<int64_t, int64_t>* last_key = nullptr;
  const std::vector<Member>* last_members = nullptr;
  for (size_t k = 0; k < flows.size(); ++k) {
    const FlowEvent& f = flows[k];
    if (last_key == nullptr || *last_key != std::pair(f.track_pid, f.track_tid)) {
      auto it = tracks.find({f.track_pid, f.track_tid});
      if (it == tracks.end()) continue;
      last_key = &it->first;
      last_members = &it->second;
    }
    const auto& members = *last_members;
    // First span starting after ts; candidates for "enclosing" are before it.
    auto upper = std::upper_bound(members.begin(), members.end(), f.ts_ns,
                                  [](int64_t ts, const Member& m) { return ts < m.start_ns; });
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
      // The next slice to start at or after ts.
      auto lower = std::lower_bound(members.begin(), members.end(), f.ts_ns,
                                    [](const Member& m, int64_t ts) { return m.start_ns < ts; });
      if (lower != members.end()) result[k] = lower->span;
    }
  }
  return result;
}

}  // namespace strata::import
