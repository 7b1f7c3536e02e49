#include "runs/span_matching.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <string_view>
#include <unordered_map>

namespace strata::runs {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  // splitmix64 finalizer over a running combination: keys differ if any component differs.
  uint64_t x = h ^ (v + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2));
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return x == kNoKey ? 1 : x;
}

}  // namespace

std::vector<uint64_t> match_keys(const trace::Trace& trace, int view_level) {
  const size_t n = trace.spans.size();
  std::vector<uint64_t> keys(n, kNoKey);

  std::unordered_map<uint64_t, size_t> by_id;
  by_id.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (trace.spans[i].span_id != 0) by_id.emplace(trace.spans[i].span_id, i);
  auto parent_of = [&](size_t i) -> long {
    auto it = by_id.find(trace.spans[i].parent_id);
    return it == by_id.end() || it->second == i ? -1 : static_cast<long>(it->second);
  };

  // Nearest ancestor at a level <= view_level, and depth in that restricted tree (parents first).
  std::vector<long> anchor(n, -1);
  std::vector<uint32_t> depth(n, 0);
  for (size_t i = 0; i < n; ++i) {
    long a = parent_of(i);
    for (size_t guard = 0; a >= 0 && trace.spans[a].level > view_level && guard < n; ++guard)
      a = parent_of(a);
    anchor[i] = a;
  }
  for (size_t i = 0; i < n; ++i) {
    uint32_t d = 0;
    for (long a = anchor[i]; a >= 0 && d <= n; a = anchor[a]) ++d;
    depth[i] = d;
  }

  // Process and thread ordinals.
  std::vector<size_t> process_rank(trace.processes.size());
  {
    std::vector<size_t> order(trace.processes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return trace.processes[a].start_monotonic_ns < trace.processes[b].start_monotonic_ns;
    });
    for (size_t r = 0; r < order.size(); ++r) process_rank[order[r]] = r;
  }
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    const SpanRecord& x = trace.spans[a];
    const SpanRecord& y = trace.spans[b];
    if (x.process != y.process) return x.process < y.process;
    if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
    return depth[a] < depth[b];
  });
  std::unordered_map<uint64_t, uint64_t> thread_rank;  // (process << 32 | tid) -> rank
  std::unordered_map<uint64_t, uint64_t> occurrences;  // group key -> spans seen
  std::hash<std::string_view> hash_name;
  for (size_t i : order) {
    const SpanRecord& s = trace.spans[i];
    if (s.level > view_level) continue;
    uint64_t parent_key;
    if (anchor[i] >= 0 && keys[anchor[i]] != kNoKey) {
      parent_key = keys[anchor[i]];
    } else {
      uint64_t thread = (uint64_t{s.process} << 32) | s.tid;
      auto [it, inserted] = thread_rank.try_emplace(thread, 0);
      if (inserted) {
        uint64_t rank = 0;
        for (const auto& [t, r] : thread_rank)
          if ((t >> 32) == s.process && t != thread) ++rank;
        it->second = rank;
      }
      uint64_t p = s.process < process_rank.size() ? process_rank[s.process] : s.process;
      parent_key = mix(mix(0x5354524154410000ull, p), it->second);
    }
    uint64_t group = mix(mix(parent_key, s.level), hash_name(trace.name(s)));
    keys[i] = mix(group, occurrences[group]++);
  }
  return keys;
}

}  // namespace strata::runs
