// The span tree as Strata built it before the build was split into named passes (one 256-line
// function, kept here verbatim in substance as the reference): the passes must link every span of
// any trace exactly as it did.
#include "span_tree_reference.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace strata::trace::testing {
namespace {

// The timeline a span lives on: host spans by (process, thread); device work by (process, device, stream).
struct TrackKey {
  uint16_t process;
  uint32_t tid;
  uint32_t stream;
  uint16_t device;
  bool operator<(const TrackKey& o) const {
    return std::tie(process, device, stream, tid) < std::tie(o.process, o.device, o.stream, o.tid);
  }
  bool on_device() const { return stream != kNoStream || device != kNoDevice; }
};

TrackKey track_of(const SpanRecord& s) {
  if (s.stream != kNoStream || s.device != kNoDevice) return {s.process, 0, s.stream, s.device};
  return {s.process, s.tid, kNoStream, kNoDevice};
}

struct Track {
  TrackKey key;
  std::vector<uint32_t> members;   // span indices sorted by (start, longer first, shallower first)
  std::vector<int32_t> enclosing;  // per position: position of the innermost member containing it, or -1
};

uint64_t id_key(uint64_t id, uint16_t process) { return id ^ (uint64_t{process} * 0x9E3779B97F4A7C15ull); }

constexpr uint8_t kRuntimeLevel = static_cast<uint8_t>(Level::kRuntimeApi);
constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);
constexpr uint8_t kLayerLevel = static_cast<uint8_t>(Level::kLayer);

}  // namespace

ReferenceTree reference_span_tree(const Trace& trace, const SpanTreeOptions& options) {
  const size_t n = trace.spans.size();
  const auto& spans = trace.spans;
  ReferenceTree tree;
  tree.parent.assign(n, kNoParent);
  tree.depth.assign(n, 0);
  tree.flags.assign(n, 0);
  ReferenceReport& rep = tree.report;
  std::vector<uint8_t> has_known(n, 0);
  auto link = [&](size_t child, uint32_t parent) {
    tree.parent[child] = static_cast<int32_t>(parent);
    has_known[child] = 1;
  };

  // 1. Explicit parent ids (ids are unique per process).
  std::unordered_map<uint64_t, uint32_t> by_id;
  by_id.reserve(n);
  for (size_t i = 0; i < n; ++i)
    by_id.emplace(id_key(spans[i].span_id, spans[i].process), static_cast<uint32_t>(i));
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = spans[i];
    if (s.parent_id == 0) continue;
    auto it = by_id.find(id_key(s.parent_id, s.process));
    if (it != by_id.end() && it->second != i) {
      link(i, it->second);
      ++rep.explicit_links;
    } else {
      // Not in this process: a parent in another process (context propagation) or lost. Counted;
      // containment may still find a local parent below.
      ++rep.missing_parents;
    }
  }

  // 2. Correlation ids: device work hangs under the runtime call with the same id (a launch when
  //    there are several candidates).
  std::unordered_map<uint64_t, uint32_t> call_by_corr;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = spans[i];
    const bool is_launch = s.kind == static_cast<uint8_t>(SpanKind::kLaunch);
    if (s.correlation_id == 0 || (!is_launch && s.level != kRuntimeLevel)) continue;
    auto [it, inserted] = call_by_corr.emplace(id_key(s.correlation_id, s.process), static_cast<uint32_t>(i));
    if (!inserted && is_launch && spans[it->second].kind != static_cast<uint8_t>(SpanKind::kLaunch))
      it->second = static_cast<uint32_t>(i);
  }
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = spans[i];
    const bool device_work = s.kind == static_cast<uint8_t>(SpanKind::kExecution) || s.level == kDeviceLevel;
    if (has_known[i] || s.correlation_id == 0 || !device_work) continue;
    auto it = call_by_corr.find(id_key(s.correlation_id, s.process));
    if (it == call_by_corr.end() || it->second == i) continue;
    link(i, it->second);
    ++rep.correlation_links;
  }

  // 3. External correlation: the owner of an id is the framework op (layer level or shallower, on the
  //    host) that carries it; runtime calls and unlinked device work with that id hang under it.
  const uint32_t ext_key = trace.strings.find(attr_keys::kExternalCorrelationId);
  if (ext_key != UINT32_MAX) {
    tree.external_owner.assign(n, kNoParent);
    std::vector<int64_t> ext(n, 0);
    std::vector<uint8_t> has_ext(n, 0);
    std::unordered_map<uint64_t, uint32_t> owner;
    for (size_t i = 0; i < n; ++i) {
      for (const AttrRecord& a : trace.attributes(i)) {
        if (a.key != ext_key) continue;
        if (a.type == static_cast<uint8_t>(AttrType::kInt)) {
          ext[i] = a.value.i;
          has_ext[i] = 1;
        }
        break;
      }
      const SpanRecord& s = spans[i];
      if (!has_ext[i] || s.level > kLayerLevel || track_of(s).on_device()) continue;
      auto [it, inserted] =
          owner.emplace(id_key(static_cast<uint64_t>(ext[i]), s.process), static_cast<uint32_t>(i));
      if (!inserted && spans[it->second].level < s.level)
        it->second = static_cast<uint32_t>(i);  // the op, not its annotation
    }
    for (size_t i = 0; i < n; ++i) {
      if (!has_ext[i]) continue;
      const SpanRecord& s = spans[i];
      auto it = owner.find(id_key(static_cast<uint64_t>(ext[i]), s.process));
      if (it == owner.end() || it->second == i) continue;
      // Only a plausible link counts: the op must have been running when the call was made (for
      // device work: when its launch was made). Old Kineto versions reuse ids, so a stale match
      // seconds away is rejected and counted rather than trusted.
      const SpanRecord& op = spans[it->second];
      const SpanRecord& anchor = tree.parent[i] != kNoParent && has_known[i] ? spans[tree.parent[i]] : s;
      const bool device_work =
          s.kind == static_cast<uint8_t>(SpanKind::kExecution) || s.level == kDeviceLevel;
      const bool plausible = device_work && &anchor == &s
                                 ? op.start_ns <= s.start_ns
                                 : op.start_ns <= anchor.start_ns && anchor.end_ns <= op.end_ns;
      if (!plausible) {
        ++rep.external_rejected;
        continue;
      }
      tree.external_owner[i] = static_cast<int32_t>(it->second);
      if (!has_known[i] && s.level > spans[it->second].level) {
        link(i, it->second);
        ++rep.external_links;
      }
    }
  }

  // 4. Tracks, each sorted by the spans' own timestamps (Zins Algorithm 1), then a stack sweep:
  //    the enclosing chain of every span, and level-aware containment parents.
  std::map<TrackKey, Track> tracks;
  std::vector<std::pair<Track*, int32_t>> position(n);
  for (size_t i = 0; i < n; ++i) {
    TrackKey key = track_of(spans[i]);
    Track& t = tracks[key];
    t.key = key;
    t.members.push_back(static_cast<uint32_t>(i));
  }
  std::vector<int32_t> stack;
  for (auto& [key, t] : tracks) {
    int64_t latest = INT64_MIN;
    for (uint32_t i : t.members) {
      if (spans[i].start_ns < latest) ++rep.late_records;
      latest = std::max(latest, spans[i].start_ns);
    }
    std::stable_sort(t.members.begin(), t.members.end(), [&](uint32_t a, uint32_t b) {
      const SpanRecord& x = spans[a];
      const SpanRecord& y = spans[b];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
      return x.level < y.level;
    });
    t.enclosing.assign(t.members.size(), -1);
    stack.clear();
    for (int32_t p = 0; p < static_cast<int32_t>(t.members.size()); ++p) {
      const uint32_t i = t.members[p];
      const SpanRecord& s = spans[i];
      position[i] = {&t, p};
      while (!stack.empty() && spans[t.members[stack.back()]].end_ns <= s.start_ns) stack.pop_back();
      int32_t best = -1;
      int best_level = -1;
      for (size_t k = stack.size(); k-- > 0;) {
        const SpanRecord& c = spans[t.members[stack[k]]];
        if (c.end_ns < s.end_ns) continue;  // overlaps but does not contain (damaged nesting)
        if (t.enclosing[p] < 0) t.enclosing[p] = stack[k];
        if (has_known[i] || !options.reconstruct) break;
        if (c.level > s.level || c.level <= best_level) continue;
        best = stack[k];
        best_level = c.level;
        if (best_level == s.level) break;  // nothing nearer than the same level
      }
      if (best >= 0) {
        tree.parent[i] = static_cast<int32_t>(t.members[best]);
        tree.flags[i] |= kSpanFlagParentReconstructed;
        ++rep.reconstructed;
      }
      stack.push_back(p);
    }
  }

  // 5. Across threads: spans still without a parent look at the other host threads of their process.
  if (options.reconstruct && options.cross_thread) {
    std::unordered_map<uint16_t, std::vector<const Track*>> host_tracks;
    for (const auto& [key, t] : tracks)
      if (!key.on_device()) host_tracks[key.process].push_back(&t);
    for (size_t i = 0; i < n; ++i) {
      if (tree.parent[i] != kNoParent || has_known[i]) continue;
      const SpanRecord& s = spans[i];
      auto ht = host_tracks.find(s.process);
      if (ht == host_tracks.end()) continue;
      const Track* own = position[i].first;
      int32_t best = -1;
      int best_level = -1;
      int tracks_at_best = 0;
      for (const Track* t : ht->second) {
        if (t == own) continue;
        // Last member starting at or before s, then up its enclosing chain to the first shallower
        // span that contains s.
        auto upper = std::upper_bound(t->members.begin(), t->members.end(), s.start_ns,
                                      [&](int64_t ts, uint32_t m) { return ts < spans[m].start_ns; });
        int32_t cur = static_cast<int32_t>(upper - t->members.begin()) - 1;
        for (int steps = 0; cur >= 0 && steps < 4096; ++steps, cur = t->enclosing[cur]) {
          const SpanRecord& c = spans[t->members[cur]];
          if (c.end_ns >= s.end_ns && c.start_ns <= s.start_ns && c.level < s.level) break;
        }
        if (cur < 0) continue;
        const uint32_t candidate = t->members[cur];
        const int level = spans[candidate].level;
        if (level > best_level) {
          best = static_cast<int32_t>(candidate);
          best_level = level;
          tracks_at_best = 1;
        } else if (level == best_level) {
          ++tracks_at_best;
          if (spans[candidate].start_ns > spans[best].start_ns) best = static_cast<int32_t>(candidate);
        }
      }
      if (best < 0) continue;
      tree.parent[i] = best;
      tree.flags[i] |= kSpanFlagParentReconstructed;
      ++rep.reconstructed;
      ++rep.cross_thread;
      if (tracks_at_best > 1) {
        tree.flags[i] |= kSpanFlagAmbiguousParent;
        ++rep.ambiguous;
      }
    }
  }

  // 6. Cycles (only corrupt explicit ids can make one): walk up from every span; a span met again on
  //    the current walk closes a cycle, and its parent link is dropped.
  {
    std::vector<uint8_t> state(n, 0);  // 0 unvisited, 1 on the current walk, 2 done
    std::vector<uint32_t> walk;
    for (size_t start = 0; start < n; ++start) {
      if (state[start]) continue;
      walk.clear();
      int32_t cur = static_cast<int32_t>(start);
      while (cur != kNoParent && state[cur] == 0) {
        state[cur] = 1;
        walk.push_back(static_cast<uint32_t>(cur));
        int32_t next = tree.parent[cur];
        if (next != kNoParent && state[next] == 1) {
          tree.parent[cur] = kNoParent;
          ++rep.cycles_broken;
          break;
        }
        cur = next;
      }
      for (uint32_t w : walk) state[w] = 2;
    }
  }

  // Children (CSR) and depth.
  tree.child_begin.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (tree.parent[i] != kNoParent) ++tree.child_begin[static_cast<size_t>(tree.parent[i]) + 1];
  std::partial_sum(tree.child_begin.begin(), tree.child_begin.end(), tree.child_begin.begin());
  tree.child_index.resize(tree.child_begin[n]);
  std::vector<uint32_t> fill(tree.child_begin.begin(), tree.child_begin.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (tree.parent[i] == kNoParent) {
      tree.roots.push_back(static_cast<uint32_t>(i));
      ++rep.roots;
    } else {
      tree.child_index[fill[static_cast<size_t>(tree.parent[i])]++] = static_cast<uint32_t>(i);
    }
  }
  std::vector<uint32_t> work(tree.roots.begin(), tree.roots.end());
  while (!work.empty()) {
    uint32_t i = work.back();
    work.pop_back();
    for (uint32_t k = tree.child_begin[i]; k < tree.child_begin[i + 1]; ++k) {
      const uint32_t c = tree.child_index[k];
      tree.depth[c] = tree.depth[i] + 1;
      work.push_back(c);
    }
  }
  return tree;
}

}  // namespace strata::trace::testing
