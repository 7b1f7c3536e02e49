#include "trace/tracks.h"

#include <algorithm>
#include <numeric>

#include "trace/trace.h"

namespace strata::trace {
namespace {

// Calls f(span index, track key) for every span; consecutive spans mostly share a track, so the
// caller's lookups can be cached on the key.
template <typename F>
void for_each_key(const Trace& trace, F&& f) {
  for (size_t i = 0; i < trace.spans.size(); ++i) f(i, track_key(trace.spans[i]));
}

}  // namespace

TrackTable TrackTable::build(const Trace& trace) {
  TrackTable table;
  table.span_count_ = trace.spans.size();
  std::unordered_map<TrackKey, uint32_t, TrackKeyHash> counts;
  TrackKey last{};
  uint32_t* last_count = nullptr;
  for_each_key(trace, [&](size_t, const TrackKey& key) {
    if (last_count == nullptr || !(key == last)) {
      last_count = &counts[key];
      last = key;
    }
    ++*last_count;
  });
  table.tracks_.reserve(counts.size());
  for (const auto& [key, count] : counts) {
    Track t;
    t.key = key;
    t.span_count = count;
    if (key.process < trace.processes.size())
      t.rank = trace.processes[key.process].properties.get_int("rank").value_or(-1);
    table.tracks_.push_back(t);
  }
  std::sort(table.tracks_.begin(), table.tracks_.end(),
            [](const Track& a, const Track& b) { return a.key < b.key; });
  table.ids_.reserve(table.tracks_.size());
  for (uint32_t t = 0; t < table.tracks_.size(); ++t) table.ids_.emplace(table.tracks_[t].key, t);
  return table;
}

std::string TrackTable::label(const Trace& trace, uint32_t track) const {
  const TrackKey& k = tracks_[track].key;
  if (k.on_device())
    return "GPU " + std::to_string(k.device == kNoDevice ? 0 : k.device) + " stream " +
           std::to_string(k.stream == kNoStream ? 0 : k.stream);
  if (k.process < trace.processes.size()) {
    const Process& p = trace.processes[k.process];
    if (auto it = p.thread_names.find(k.tid); it != p.thread_names.end()) return it->second;
    if (static_cast<int64_t>(k.tid) == p.pid) return "main thread";
  }
  return "thread " + std::to_string(k.tid);
}

void TrackTable::group(const Trace& trace, std::vector<uint32_t>* begin, std::vector<uint32_t>* members,
                       std::vector<uint32_t>* track_of) const {
  begin->assign(tracks_.size() + 1, 0);
  for (size_t t = 0; t < tracks_.size(); ++t) (*begin)[t + 1] = (*begin)[t] + tracks_[t].span_count;
  members->resize(trace.spans.size());
  if (track_of != nullptr) track_of->resize(trace.spans.size());
  std::vector<uint32_t> fill(begin->begin(), begin->end() - 1);
  TrackKey last{};
  uint32_t last_id = UINT32_MAX;
  for_each_key(trace, [&](size_t i, const TrackKey& key) {
    if (last_id == UINT32_MAX || !(key == last)) {
      last_id = ids_.at(key);
      last = key;
    }
    (*members)[fill[last_id]++] = static_cast<uint32_t>(i);
    if (track_of != nullptr) (*track_of)[i] = last_id;
  });
}

}  // namespace strata::trace
