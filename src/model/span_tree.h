// Parent/child structure over a trace's spans: the correlation engine (XSP III-A, Zins III-F).
//
// Known links win, in this order: an explicit parent id; a correlation id (device work -> the
// runtime call with the same id in the same process: the launch for kernels and copies, the sync
// call for sync records); an external correlation id (attribute attr_keys::kExternalCorrelationId,
// Kineto's "External id" after import: a runtime call, or device work without a launch, hangs under
// the framework op that carries the same id).
//
// Spans without a known link get a parent reconstructed by containment, level-aware: among the spans
// on the same track (process+thread; device work: device+stream) that contain it, the one at the
// nearest shallower level (the same level for nested regions), innermost on ties. Spans still without
// a parent are then matched against the other threads of their process (e.g. device work whose launch
// is missing, oneDNN primitives on worker threads, backward ops on autograd threads): when candidates
// at that nearest level come from several threads the parent is ambiguous (parallel work) - the latest
// starting candidate is taken, the span flagged and counted. Every track is sorted by the spans' own
// timestamps first (Zins Algorithm 1), so records that arrived late do not disturb reconstruction.
//
// Complexity: O(n log n) for the sorts plus O(n * d) for the sweeps (d: nesting depth on a track);
// the cross-thread pass is O(r * T * (log n + d)) for r spans left without parent and T threads in
// their process, each thread answering "innermost span containing [start, end]" by binary search on
// its start-sorted spans and a walk up their enclosing chain.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/attr_keys.h"
#include "model/trace.h"

namespace strata::model {

inline constexpr int32_t kNoParent = -1;

struct CorrelationReport {
  uint64_t explicit_links = 0;     // parent id present and found
  uint64_t missing_parents = 0;    // parent id present but no such span (counted, left without parent)
  uint64_t correlation_links = 0;  // device work linked to its runtime call by correlation id
  uint64_t external_links = 0;     // linked to the framework op with the same external correlation id
  uint64_t external_rejected = 0;  // external id matched an op that was not running at the time (ignored)
  uint64_t reconstructed = 0;      // parent found by containment (same track or across threads)
  uint64_t cross_thread = 0;       // ... of which on another thread of the process
  uint64_t ambiguous = 0;          // several overlapping candidates (parallel work); latest taken
  uint64_t late_records = 0;       // spans stored after a later-starting span of their track (reordered)
  uint64_t cycles_broken = 0;      // explicit parent ids forming a cycle (corrupt input); link dropped
  uint64_t roots = 0;              // no parent at all
};

struct SpanTreeOptions {
  bool reconstruct = true;   // false: known links only
  bool cross_thread = true;  // also look for parents on other threads of the process
};

class SpanTree {
 public:
  // Indices into trace.spans. parent(i) == kNoParent for roots.
  int32_t parent(size_t i) const { return parent_[i]; }
  uint32_t depth(size_t i) const { return depth_[i]; }
  std::span<const uint32_t> children(size_t i) const {
    return {child_index_.data() + child_begin_[i], child_index_.data() + child_begin_[i + 1]};
  }
  std::span<const uint32_t> roots() const { return roots_; }
  bool reconstructed(size_t i) const { return flags_[i] & kSpanFlagParentReconstructed; }
  bool ambiguous(size_t i) const { return flags_[i] & kSpanFlagAmbiguousParent; }
  size_t size() const { return parent_.size(); }
  const CorrelationReport& report() const { return report_; }
  // The framework op (layer level or shallower) carrying the same external correlation id as span i,
  // e.g. the cpu_op that a kernel ultimately belongs to; kNoParent if none (or if i is that op).
  int32_t external_owner(size_t i) const { return external_owner_.empty() ? kNoParent : external_owner_[i]; }

  // The nearest ancestor (or the span itself) at `level`; kNoParent if none.
  int32_t ancestor_at_level(const Trace& trace, size_t i, uint8_t level) const;
  // Time covered by the span's children (union of their intervals), for self time.
  int64_t children_time_ns(const Trace& trace, size_t i) const;

 private:
  friend SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options);
  std::vector<int32_t> parent_;
  std::vector<uint32_t> depth_;
  std::vector<uint8_t> flags_;
  std::vector<uint32_t> child_begin_;
  std::vector<uint32_t> child_index_;
  std::vector<uint32_t> roots_;
  std::vector<int32_t> external_owner_;
  CorrelationReport report_;
};

SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options = {});

}  // namespace strata::model
