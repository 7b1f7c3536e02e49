#include "trace/span_tree_passes.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace strata::trace::tree_passes {
namespace {

using stats::Stat;

// Ids (span, correlation, external) are unique per process.
uint64_t id_key(uint64_t id, uint16_t process) { return id ^ (uint64_t{process} * 0x9E3779B97F4A7C15ull); }

constexpr uint8_t kRuntimeLevel = static_cast<uint8_t>(Level::kRuntimeApi);
constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);
constexpr uint8_t kLayerLevel = static_cast<uint8_t>(Level::kLayer);

bool is_device_work(const SpanRecord& s) {
  return s.kind == static_cast<uint8_t>(SpanKind::kExecution) || s.level == kDeviceLevel;
}

// How far up its enclosing chain a span's explicit parent is looked for before the whole process is
// searched: a recorded parent is the innermost span open on the thread, so almost always the first.
constexpr int kExplicitChainSteps = 8;

}  // namespace

TreeBuild::TreeBuild(const Trace& t, const TrackTable& tt, const SpanTreeOptions& o)
    : trace(t), spans(t.spans), tracks(tt), options(o) {
  parent.assign(spans.size(), kNoParent);
  link.assign(spans.size(), LinkKind::kNone);
}

void group_tracks(TreeBuild& b) {
  const auto& spans = b.spans;
  b.tracks.group(b.trace, &b.track_begin, &b.members);
  b.enclosing.assign(b.members.size(), -1);
  std::vector<int32_t> stack;
  uint64_t late = 0;
  for (size_t t = 0; t + 1 < b.track_begin.size(); ++t) {
    auto first = b.members.begin() + b.track_begin[t];
    auto last = b.members.begin() + b.track_begin[t + 1];
    // Zins Algorithm 1: records stored after a later-starting one are reordered by their own time.
    int64_t latest = INT64_MIN;
    for (auto it = first; it != last; ++it) {
      if (spans[*it].start_ns < latest) ++late;
      latest = std::max(latest, spans[*it].start_ns);
    }
    auto order = [&](uint32_t a, uint32_t c) {
      const SpanRecord& x = spans[a];
      const SpanRecord& y = spans[c];
      if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
      if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
      return x.level < y.level;
    };
    if (!std::is_sorted(first, last, order)) std::stable_sort(first, last, order);
    // Enclosing chains: the innermost member still open that ends no earlier than this one.
    const int32_t base = static_cast<int32_t>(b.track_begin[t]);
    const int32_t count = static_cast<int32_t>(last - first);
    stack.clear();
    for (int32_t p = 0; p < count; ++p) {
      const SpanRecord& s = spans[b.members[base + p]];
      while (!stack.empty() && spans[b.members[base + stack.back()]].end_ns <= s.start_ns) stack.pop_back();
      for (size_t k = stack.size(); k-- > 0;) {
        if (spans[b.members[base + stack[k]]].end_ns < s.end_ns) continue;  // overlaps, does not contain
        b.enclosing[base + p] = base + stack[k];
        break;
      }
      stack.push_back(p);
    }
  }
  b.stats.set(Stat::kTreeLateRecords, late);
}

void link_explicit_parents(TreeBuild& b) {
  const auto& spans = b.spans;
  const size_t n = spans.size();
  std::vector<uint32_t> pending;  // parent not on the chain: search the whole process
  uint64_t links = 0;
  for (uint32_t p = 0; p < b.members.size(); ++p) {  // track by track, up each enclosing chain
    const uint32_t i = b.members[p];
    const SpanRecord& s = spans[i];
    if (s.parent_id == 0) continue;
    int32_t cur = b.enclosing[p];
    for (int steps = 0; cur >= 0 && steps < kExplicitChainSteps; ++steps, cur = b.enclosing[cur])
      if (spans[b.members[cur]].span_id == s.parent_id) break;
    if (cur >= 0 && spans[b.members[cur]].span_id == s.parent_id) {
      b.set_known(i, b.members[cur], LinkKind::kExplicit);
      ++links;
    } else {
      pending.push_back(i);
    }
  }
  uint64_t missing = 0;
  if (!pending.empty()) {
    // The first span (in trace order) with each wanted id, found in one scan.
    std::unordered_map<uint64_t, int32_t> wanted;
    wanted.reserve(pending.size());
    for (uint32_t i : pending) wanted.emplace(id_key(spans[i].parent_id, spans[i].process), kNoParent);
    for (size_t i = 0; i < n; ++i) {
      auto it = wanted.find(id_key(spans[i].span_id, spans[i].process));
      if (it != wanted.end() && it->second == kNoParent) it->second = static_cast<int32_t>(i);
    }
    for (uint32_t i : pending) {
      int32_t found = wanted[id_key(spans[i].parent_id, spans[i].process)];
      if (found != kNoParent && found != static_cast<int32_t>(i)) {
        b.set_known(i, static_cast<uint32_t>(found), LinkKind::kExplicit);
        ++links;
      } else {
        // Not in this process: a parent in another process (context propagation) or lost. Counted;
        // containment may still find a local parent.
        ++missing;
      }
    }
  }
  b.stats.set(Stat::kTreeExplicitLinks, links);
  b.stats.set(Stat::kTreeMissingParents, missing);
}

void link_correlation_ids(TreeBuild& b) {
  const auto& spans = b.spans;
  const size_t n = spans.size();
  // Runtime calls by correlation id; a launch wins over other calls with the same id (e.g. a sync),
  // the earliest in trace order among equals.
  struct Call {
    uint64_t key;
    uint32_t not_launch;
    uint32_t index;
    bool operator<(const Call& o) const {
      return key != o.key                 ? key < o.key
             : not_launch != o.not_launch ? not_launch < o.not_launch
                                          : index < o.index;
    }
  };
  std::vector<Call> calls;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = spans[i];
    const bool is_launch = s.kind == static_cast<uint8_t>(SpanKind::kLaunch);
    if (s.correlation_id == 0 || (!is_launch && s.level != kRuntimeLevel)) continue;
    calls.push_back({id_key(s.correlation_id, s.process), is_launch ? 0u : 1u, static_cast<uint32_t>(i)});
  }
  if (calls.empty()) return;
  std::sort(calls.begin(), calls.end());
  calls.erase(
      std::unique(calls.begin(), calls.end(), [](const Call& a, const Call& c) { return a.key == c.key; }),
      calls.end());
  uint64_t links = 0;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = spans[i];
    if (b.known(i) || s.correlation_id == 0 || !is_device_work(s)) continue;
    const uint64_t key = id_key(s.correlation_id, s.process);
    auto it = std::lower_bound(calls.begin(), calls.end(), key,
                               [](const Call& c, uint64_t k) { return c.key < k; });
    if (it == calls.end() || it->key != key || it->index == i) continue;
    b.set_known(i, it->index, LinkKind::kCorrelation);
    ++links;
  }
  b.stats.set(Stat::kTreeCorrelationLinks, links);
}

void link_external_ids(TreeBuild& b) {
  const auto& spans = b.spans;
  const size_t n = spans.size();
  const uint32_t ext_key = b.trace.strings.find(attr_keys::kExternalCorrelationId);
  if (ext_key == UINT32_MAX) return;
  b.external_owner.assign(n, kNoParent);
  // The spans carrying an (integer) external id, and the owner of each id: the framework op (layer
  // level or shallower, on the host) that carries it.
  std::vector<std::pair<uint32_t, int64_t>> carriers;
  std::unordered_map<uint64_t, uint32_t> owner;
  for (size_t i = 0; i < n; ++i) {
    for (const AttrRecord& a : b.trace.attributes(i)) {
      if (a.key != ext_key) continue;
      if (a.type == static_cast<uint8_t>(AttrType::kInt))
        carriers.emplace_back(static_cast<uint32_t>(i), a.value.i);
      break;
    }
    if (carriers.empty() || carriers.back().first != i) continue;
    const SpanRecord& s = spans[i];
    if (s.level > kLayerLevel || track_key(s).on_device()) continue;
    auto [it, inserted] = owner.emplace(id_key(static_cast<uint64_t>(carriers.back().second), s.process),
                                        static_cast<uint32_t>(i));
    if (!inserted && spans[it->second].level < s.level)
      it->second = static_cast<uint32_t>(i);  // the op, not its annotation
  }
  uint64_t links = 0, rejected = 0;
  for (const auto& [i, ext] : carriers) {
    const SpanRecord& s = spans[i];
    auto it = owner.find(id_key(static_cast<uint64_t>(ext), s.process));
    if (it == owner.end() || it->second == i) continue;
    // Only a plausible link counts: the op must have been running when the call was made (for
    // device work: when its launch was made). Old Kineto versions reuse ids, so a stale match
    // seconds away is rejected and counted rather than trusted.
    const SpanRecord& op = spans[it->second];
    const bool linked = b.parent[i] != kNoParent && b.known(i);
    const SpanRecord& anchor = linked ? spans[static_cast<size_t>(b.parent[i])] : s;
    const bool plausible = is_device_work(s) && !linked
                               ? op.start_ns <= s.start_ns
                               : op.start_ns <= anchor.start_ns && anchor.end_ns <= op.end_ns;
    if (!plausible) {
      ++rejected;
      continue;
    }
    b.external_owner[i] = static_cast<int32_t>(it->second);
    if (!b.known(i) && s.level > op.level) {
      b.set_known(i, it->second, LinkKind::kExternal);
      ++links;
    }
  }
  b.stats.set(Stat::kTreeExternalLinks, links);
  b.stats.set(Stat::kTreeExternalRejected, rejected);
}

void reconstruct_by_containment(TreeBuild& b) {
  if (!b.options.reconstruct) return;
  const auto& spans = b.spans;
  std::vector<int32_t> stack;
  uint64_t reconstructed = 0;
  for (size_t t = 0; t + 1 < b.track_begin.size(); ++t) {
    const uint32_t* m = b.members.data() + b.track_begin[t];
    const int32_t count = static_cast<int32_t>(b.track_begin[t + 1] - b.track_begin[t]);
    stack.clear();
    for (int32_t p = 0; p < count; ++p) {
      const uint32_t i = m[p];
      const SpanRecord& s = spans[i];
      while (!stack.empty() && spans[m[stack.back()]].end_ns <= s.start_ns) stack.pop_back();
      if (!b.known(i)) {
        // Among the open spans containing it, the one at the nearest shallower level (the same
        // level for nested regions), innermost on ties.
        int32_t best = -1;
        int best_level = -1;
        for (size_t k = stack.size(); k-- > 0;) {
          const SpanRecord& c = spans[m[stack[k]]];
          if (c.end_ns < s.end_ns) continue;  // overlaps but does not contain (damaged nesting)
          if (c.level > s.level || c.level <= best_level) continue;
          best = stack[k];
          best_level = c.level;
          if (best_level == s.level) break;  // nothing nearer than the same level
        }
        if (best >= 0) {
          b.parent[i] = static_cast<int32_t>(m[best]);
          b.link[i] = LinkKind::kContainment;
          ++reconstructed;
        }
      }
      stack.push_back(p);
    }
  }
  b.stats.set(Stat::kTreeReconstructed, reconstructed);
}

void reconstruct_across_threads(TreeBuild& b) {
  if (!b.options.reconstruct || !b.options.cross_thread) return;
  const auto& spans = b.spans;
  // Host tracks per process, in track (key) order.
  std::unordered_map<uint16_t, std::vector<uint32_t>> host_tracks;
  for (uint32_t t = 0; t < b.tracks.size(); ++t)
    if (!b.tracks[t].key.on_device()) host_tracks[b.tracks[t].key.process].push_back(t);
  uint64_t cross = 0, ambiguous = 0;
  for (size_t i = 0; i < spans.size(); ++i) {
    if (b.parent[i] != kNoParent || b.known(i)) continue;
    const SpanRecord& s = spans[i];
    auto ht = host_tracks.find(s.process);
    if (ht == host_tracks.end()) continue;
    const uint32_t own = b.tracks.track_of(s);
    int32_t best = -1;
    int best_level = -1;
    int tracks_at_best = 0;
    for (uint32_t t : ht->second) {
      if (t == own) continue;
      // Last member starting at or before s, then up its enclosing chain to the first shallower
      // span that contains s.
      const auto first = b.members.begin() + b.track_begin[t];
      const auto last = b.members.begin() + b.track_begin[t + 1];
      auto upper = std::upper_bound(first, last, s.start_ns,
                                    [&](int64_t ts, uint32_t m) { return ts < spans[m].start_ns; });
      int32_t cur = static_cast<int32_t>(upper - b.members.begin()) - 1;
      if (upper == first) cur = -1;
      for (int steps = 0; cur >= 0 && steps < 4096; ++steps, cur = b.enclosing[cur]) {
        const SpanRecord& c = spans[b.members[cur]];
        if (c.end_ns >= s.end_ns && c.start_ns <= s.start_ns && c.level < s.level) break;
      }
      if (cur < 0) continue;
      const uint32_t candidate = b.members[cur];
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
    b.parent[i] = best;
    ++cross;
    if (tracks_at_best > 1) {
      b.link[i] = LinkKind::kAmbiguous;
      ++ambiguous;
    } else {
      b.link[i] = LinkKind::kCrossThread;
    }
  }
  b.stats.add(Stat::kTreeReconstructed, cross);
  b.stats.set(Stat::kTreeCrossThread, cross);
  b.stats.set(Stat::kTreeAmbiguous, ambiguous);
}

void break_cycles(TreeBuild& b) {
  // Only corrupt explicit ids can make one: walk up from every span; a span met again on the
  // current walk closes a cycle, and its parent link is dropped.
  const size_t n = b.spans.size();
  std::vector<uint8_t> state(n, 0);  // 0 unvisited, 1 on the current walk, 2 done
  std::vector<uint32_t> walk;
  uint64_t broken = 0;
  for (size_t start = 0; start < n; ++start) {
    if (state[start]) continue;
    walk.clear();
    int32_t cur = static_cast<int32_t>(start);
    while (cur != kNoParent && state[cur] == 0) {
      state[cur] = 1;
      walk.push_back(static_cast<uint32_t>(cur));
      int32_t next = b.parent[cur];
      if (next != kNoParent && state[next] == 1) {
        b.parent[cur] = kNoParent;
        b.link[cur] = LinkKind::kNone;
        ++broken;
        break;
      }
      cur = next;
    }
    for (uint32_t w : walk) state[w] = 2;
  }
  b.stats.set(Stat::kTreeCyclesBroken, broken);
}

}  // namespace strata::trace::tree_passes
