#include "model/span_tree.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <tuple>
#include <unordered_map>

namespace strata::model {
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
};

TrackKey track_of(const SpanRecord& s) {
  if (s.stream != kNoStream || s.device != kNoDevice) return {s.process, 0, s.stream, s.device};
  return {s.process, s.tid, kNoStream, kNoDevice};
}

}  // namespace

SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options) {
  const size_t n = trace.spans.size();
  SpanTree tree;
  tree.parent_.assign(n, kNoParent);
  tree.depth_.assign(n, 0);
  tree.flags_.assign(n, 0);
  CorrelationReport& rep = tree.report_;

  // 1. Known links: explicit parent ids (ids are unique per process).
  std::unordered_map<uint64_t, uint32_t> by_id;
  by_id.reserve(n);
  auto id_key = [](uint64_t id, uint16_t process) { return id ^ (uint64_t{process} * 0x9E3779B97F4A7C15ull); };
  for (size_t i = 0; i < n; ++i) by_id.emplace(id_key(trace.spans[i].span_id, trace.spans[i].process), static_cast<uint32_t>(i));
  std::vector<uint8_t> has_known(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.parent_id == 0) continue;
    auto it = by_id.find(id_key(s.parent_id, s.process));
    if (it != by_id.end() && it->second != i) {
      tree.parent_[i] = static_cast<int32_t>(it->second);
      has_known[i] = 1;
      ++rep.explicit_links;
    } else {
      // Not in this process: a parent in another process (context propagation) or lost. Counted;
      // containment may still find a local parent below.
      ++rep.missing_parents;
    }
  }
  // 2. Correlation ids: an execution (device work) hangs under the launch with the same id.
  std::unordered_map<uint64_t, uint32_t> launch_by_corr;
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.correlation_id != 0 && s.kind == static_cast<uint8_t>(SpanKind::kLaunch))
      launch_by_corr.emplace(id_key(s.correlation_id, s.process), static_cast<uint32_t>(i));
  }
  for (size_t i = 0; i < n; ++i) {
    const SpanRecord& s = trace.spans[i];
    if (has_known[i] || s.correlation_id == 0 || s.kind != static_cast<uint8_t>(SpanKind::kExecution)) continue;
    auto it = launch_by_corr.find(id_key(s.correlation_id, s.process));
    if (it == launch_by_corr.end()) continue;
    tree.parent_[i] = static_cast<int32_t>(it->second);
    has_known[i] = 1;
    ++rep.correlation_links;
  }
  // 3. Containment per track: sweep spans in start order with a stack of open spans; the parent is
  //    the innermost open span at a shallower level that contains the span.
  if (options.reconstruct) {
    std::map<TrackKey, std::vector<uint32_t>> tracks;
    for (size_t i = 0; i < n; ++i) tracks[track_of(trace.spans[i])].push_back(static_cast<uint32_t>(i));
    std::vector<uint32_t> stack;
    for (auto& [key, members] : tracks) {
      std::stable_sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
        const SpanRecord& x = trace.spans[a];
        const SpanRecord& y = trace.spans[b];
        if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
        if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
        return x.level < y.level;
      });
      stack.clear();
      for (uint32_t i : members) {
        const SpanRecord& s = trace.spans[i];
        while (!stack.empty() && trace.spans[stack.back()].end_ns <= s.start_ns) stack.pop_back();
        if (!has_known[i]) {
          // Innermost containing span at a shallower (or same, for nested regions) level.
          int found = -1;
          for (size_t k = stack.size(); k-- > 0;) {
            const SpanRecord& c = trace.spans[stack[k]];
            if (c.level > s.level || c.end_ns < s.end_ns) continue;
            found = static_cast<int>(stack[k]);
            break;
          }
          if (found >= 0) {
            tree.parent_[i] = found;
            tree.flags_[i] |= kSpanFlagParentReconstructed;
            ++rep.reconstructed;
          }
        }
        stack.push_back(i);
      }
    }
  }
  // Children (CSR) and depth.
  tree.child_begin_.assign(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (tree.parent_[i] != kNoParent) ++tree.child_begin_[static_cast<size_t>(tree.parent_[i]) + 1];
  std::partial_sum(tree.child_begin_.begin(), tree.child_begin_.end(), tree.child_begin_.begin());
  tree.child_index_.resize(tree.child_begin_[n]);
  std::vector<uint32_t> fill(tree.child_begin_.begin(), tree.child_begin_.end() - 1);
  for (size_t i = 0; i < n; ++i) {
    if (tree.parent_[i] == kNoParent) {
      tree.roots_.push_back(static_cast<uint32_t>(i));
      ++rep.roots;
    } else {
      tree.child_index_[fill[static_cast<size_t>(tree.parent_[i])]++] = static_cast<uint32_t>(i);
    }
  }
  // Depth by walking from the roots (iteratively; a cycle from corrupt ids is broken by the visit mark).
  std::vector<uint8_t> visited(n, 0);
  std::vector<uint32_t> work(tree.roots_.begin(), tree.roots_.end());
  for (uint32_t r : tree.roots_) visited[r] = 1;
  while (!work.empty()) {
    uint32_t i = work.back();
    work.pop_back();
    for (uint32_t c : tree.children(i)) {
      if (visited[c]) continue;
      visited[c] = 1;
      tree.depth_[c] = tree.depth_[i] + 1;
      work.push_back(c);
    }
  }
  return tree;
}

int32_t SpanTree::ancestor_at_level(const Trace& trace, size_t i, uint8_t level) const {
  int32_t cur = static_cast<int32_t>(i);
  for (int guard = 0; cur != kNoParent && guard < 4096; ++guard) {
    if (trace.spans[static_cast<size_t>(cur)].level == level) return cur;
    cur = parent_[static_cast<size_t>(cur)];
  }
  return kNoParent;
}

int64_t SpanTree::children_time_ns(const Trace& trace, size_t i) const {
  std::vector<std::pair<int64_t, int64_t>> iv;
  for (uint32_t c : children(i)) iv.emplace_back(trace.spans[c].start_ns, trace.spans[c].end_ns);
  std::sort(iv.begin(), iv.end());
  int64_t total = 0, cur_s = 0, cur_e = INT64_MIN;
  for (auto [s, e] : iv) {
    if (s > cur_e) {
      if (cur_e != INT64_MIN) total += cur_e - cur_s;
      cur_s = s;
      cur_e = e;
    } else {
      cur_e = std::max(cur_e, e);
    }
  }
  if (cur_e != INT64_MIN) total += cur_e - cur_s;
  return total;
}

}  // namespace strata::model
