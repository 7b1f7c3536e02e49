#include "trace/trace_builder.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace strata::trace {

void TraceBuilder::warn(std::string line) {
  if (trace_->warnings.size() < kMaxWarnings) trace_->warnings.push_back(std::move(line));
}

namespace {

// What span_before compares, and the index: a total order, so every correct sort of these keys gives
// the same permutation (the stable one).
struct SortKey {
  int64_t start, end;
  uint32_t level, index;
};

inline bool key_before(const SortKey& a, const SortKey& b) {
  if (a.start != b.start) return a.start < b.start;
  if (a.end != b.end) return a.end > b.end;
  if (a.level != b.level) return a.level < b.level;
  return a.index < b.index;  // stable: equal spans keep their order
}

// Importers hand spans over in the order of their input: a few interleaved sequences that are each
// in time order already (one per thread or GPU stream of a Kineto trace: 3 on the synthetic traces,
// 14 on the V100 trace), which a full sort treats as random. The keys are dealt, in order, onto
// ascending runs (each onto the run whose last key is the largest one before it: patience dealing,
// which needs the fewest runs any dealing can), then the runs are merged pairwise: about
// n log2(runs) comparisons of sequential data instead of n log2(n). False when more than kMaxRuns
// runs would be needed (an input in no particular order): the caller sorts instead.
constexpr size_t kMaxRuns = 64;

bool sort_by_merging_runs(std::vector<SortKey>* keys) {
  const size_t n = keys->size();
  SortKey tails[kMaxRuns];  // the last key of each run, ascending
  uint8_t tail_run[kMaxRuns];
  size_t runs = 0;
  std::vector<uint8_t> run_of(n);
  for (size_t i = 0; i < n; ++i) {
    const SortKey& key = (*keys)[i];
    // How many tails are before this key (all keys differ: the index is in the order).
    const size_t below = static_cast<size_t>(
        std::partition_point(tails, tails + runs, [&](const SortKey& t) { return key_before(t, key); }) -
        tails);
    if (below == 0) {  // before every run's last key: a new run, whose tail is the smallest
      if (runs == kMaxRuns) return false;
      std::copy_backward(tails, tails + runs, tails + runs + 1);
      std::copy_backward(tail_run, tail_run + runs, tail_run + runs + 1);
      tails[0] = key;
      tail_run[0] = static_cast<uint8_t>(runs);
      run_of[i] = static_cast<uint8_t>(runs++);
    } else {  // replacing the largest tail below it keeps the tails ascending
      tails[below - 1] = key;
      run_of[i] = tail_run[below - 1];
    }
  }
  if (runs == 1) return true;
  // Each run contiguous (in order), then adjacent runs merged until one is left.
  std::vector<size_t> bounds(runs + 1, 0);
  for (uint8_t r : run_of) ++bounds[r + 1];
  for (size_t r = 0; r < runs; ++r) bounds[r + 1] += bounds[r];
  std::vector<SortKey> from(n), to(n);
  {
    std::vector<size_t> next(bounds.begin(), bounds.end() - 1);
    for (size_t i = 0; i < n; ++i) from[next[run_of[i]]++] = (*keys)[i];
  }
  std::vector<uint8_t>().swap(run_of);
  while (bounds.size() > 2) {
    std::vector<size_t> merged{0};
    for (size_t r = 0; r + 1 < bounds.size(); r += 2) {
      const size_t lo = bounds[r], mid = bounds[r + 1];
      const size_t hi = r + 2 < bounds.size() ? bounds[r + 2] : mid;
      std::merge(from.begin() + static_cast<ptrdiff_t>(lo), from.begin() + static_cast<ptrdiff_t>(mid),
                 from.begin() + static_cast<ptrdiff_t>(mid), from.begin() + static_cast<ptrdiff_t>(hi),
                 to.begin() + static_cast<ptrdiff_t>(lo), key_before);
      merged.push_back(hi);
    }
    from.swap(to);
    bounds.swap(merged);
  }
  keys->swap(from);
  return true;
}

}  // namespace

void sort_spans(Trace* trace) {
  auto& spans = trace->spans;
  const size_t n = spans.size();
  bool sorted = true;
  for (size_t i = 1; i < n && sorted; ++i) sorted = !span_before(spans[i], spans[i - 1]);
  if (sorted) return;
  // The order is found on compact keys (what span_before compares, and the index), one contiguous
  // array, instead of comparing 64-byte records reached through an index at random.
  std::vector<SortKey> keys(n);
  for (size_t i = 0; i < n; ++i)
    keys[i] = {spans[i].start_ns, spans[i].end_ns, spans[i].level, static_cast<uint32_t>(i)};
  if (!sort_by_merging_runs(&keys)) std::sort(keys.begin(), keys.end(), key_before);
  std::vector<uint32_t> order(n);
  for (size_t k = 0; k < n; ++k) order[k] = keys[k].index;
  std::vector<SortKey>().swap(keys);
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
