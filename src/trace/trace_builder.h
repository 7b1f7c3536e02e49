// The one builder behind every way a trace comes into memory: the native reader, the importers of
// foreign formats, and merging several inputs into one trace all feed it (in Perfetto's terms:
// importers -> sorter -> trackers -> tables). Readers append processes, spans, attributes, stats and
// warnings in any order; finish() then, once for everything fed in:
//   1. sorts the spans by start (longer first, shallower first), in place (attributes stay put);
//   2. numbers the spans of processes whose reader gave no ids (importers), in that order;
//   3. builds the tracks table and the span tree and keeps them with the trace (Trace::tree()),
//      with the tree's stats in the trace's stats.
#pragma once

#include <string>
#include <vector>

#include "core/stats.h"
#include "trace/span_tree.h"
#include "trace/trace.h"

namespace strata::trace {

class TraceBuilder {
 public:
  // Appends to *trace (which may already hold spans: merging).
  explicit TraceBuilder(Trace* trace) : trace_(trace) {}

  // The trace being built, for readers that append columns in bulk (the native reader copies span
  // records straight from chunk payloads).
  Trace& trace() { return *trace_; }

  // Spans of this process come without ids: finish() numbers them 1, 2, ... in time order.
  void number_spans_of(uint16_t process) { numbered_.push_back(process); }
  const std::vector<uint16_t>& numbered() const { return numbered_; }
  // A trace-wide counter (loader stats); process counters go to Process::stats.
  void count(stats::Stat stat, uint64_t n = 1) { trace_->stats.add(stat, n); }
  // One line naming the file and offset; at most kMaxWarnings are kept (the stats count everything).
  void warn(std::string line);
  static constexpr size_t kMaxWarnings = 64;

  struct FinishOptions {
    bool structure = true;  // false: the tracks table and tree are built on first use instead
    SpanTreeOptions tree;
  };
  void finish(const FinishOptions& options);
  void finish() { finish(FinishOptions{}); }

 private:
  Trace* trace_;
  std::vector<uint16_t> numbered_;
};

// The order finish() gives spans: by start, then the longer first (an enclosing span before what it
// encloses), then the shallower level first.
inline bool span_before(const SpanRecord& x, const SpanRecord& y) {
  if (x.start_ns != y.start_ns) return x.start_ns < y.start_ns;
  if (x.end_ns != y.end_ns) return x.end_ns > y.end_ns;
  return x.level < y.level;
}

// Sorts the trace's spans in that order, stable, in place: the span column and the attribute
// offsets are permuted (4 bytes a span of scratch), the attributes never move.
void sort_spans(Trace* trace);

}  // namespace strata::trace
