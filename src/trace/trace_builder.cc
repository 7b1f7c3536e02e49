#include "trace/trace_builder.h"

#include <algorithm>
#include <unordered_map>

namespace strata::trace {

void TraceBuilder::warn(std::string line) {
  if (trace_->warnings.size() < kMaxWarnings) trace_->warnings.push_back(std::move(line));
}

void sort_spans(Trace* trace) {
  auto& spans = trace->spans;
  const size_t n = spans.size();
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = !span_before(spans[i], spans[i - 1]);
  if (sorted) return;
  // The order is found on compact keys (what span_before compares, and the index), one contiguous
  // array, instead of comparing 64-byte records reached through an index at random.
  struct Key {
    int64_t start, end;
    uint32_t level, index;
  };
  std::vector<Key> keys(n);
  for (size_t i = 0; i < n; ++i)
    keys[i] = {spans[i].start_ns, spans[i].end_ns, spans[i].level, static_cast<uint32_t>(i)};
  std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
    if (a.start != b.start) return a.start < b.start;
    if (a.end != b.end) return a.end > b.end;
    if (a.level != b.level) return a.level < b.level;
    return a.index < b.index;  // stable: equal spans keep their order
  });
  std::vector<uint32_t> order(n);
  for (size_t k = 0; k < n; ++k) order[k] = keys[k].index;
  std::vector<Key>().swap(keys);
  // Position k receives the span now at order[k]: follow each cycle of the permutation once,
  // marking finished positions with order[k] = k.
  auto& begin = trace->attr_begin;
  for (size_t k = 0; k < n; ++k) {
    if (order[k] == k) continue;
    const SpanRecord held_span = spans[k];
    const uint32_t held_attrs = begin[k];
    size_t dst = k;
    for (;;) {
      const size_t src = order[dst];
      order[dst] = static_cast<uint32_t>(dst);
      if (src == k) {
        spans[dst] = held_span;
        begin[dst] = held_attrs;
        break;
      }
      spans[dst] = spans[src];
      begin[dst] = begin[src];
      dst = src;
    }
  }
  trace->invalidate_structure();
}

void TraceBuilder::finish(const FinishOptions& options) {
  Trace& t = *trace_;
  sort_spans(&t);
  if (!numbered_.empty()) {
    std::unordered_map<uint16_t, uint64_t> next;
    for (uint16_t p : numbered_) next.emplace(p, 0);
    for (SpanRecord& s : t.spans) {
      auto it = next.find(s.process);
      if (it != next.end() && s.span_id == 0) s.span_id = ++it->second;
    }
    numbered_.clear();
  }
  if (!options.structure) return;
  t.set_structure(build_structure(t, options.tree));
  // The tree's counters become the trace's (replacing those of an earlier build of the same trace).
  const stats::StatSet& tree_stats = t.tree().stats();
  for (const stats::StatInfo& s : stats::all_stats())
    if (s.source == stats::Source::kCorrelation) t.stats.set(s.id, tree_stats.get(s.id));
}

}  // namespace strata::trace
