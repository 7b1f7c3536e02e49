// Parent/child structure over a trace's spans (Perfetto's "slices with depth and parent").
//
// Known links win: an explicit parent id, then correlation ids (an execution's parent is the
// launch with the same correlation id). Spans without a known parent get one reconstructed by
// containment: the innermost span at a shallower level on the same process and thread (device work:
// the same device and stream) that contains it. Reconstructed and ambiguous parents are flagged and
// counted, never silently guessed.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/trace.h"

namespace strata::model {

inline constexpr int32_t kNoParent = -1;

struct CorrelationReport {
  uint64_t explicit_links = 0;       // parent id present and found
  uint64_t missing_parents = 0;      // parent id present but no such span (counted, left without parent)
  uint64_t correlation_links = 0;    // execution linked to its launch by correlation id
  uint64_t reconstructed = 0;        // parent found by containment
  uint64_t ambiguous = 0;            // several overlapping candidates (parallel work); innermost taken
  uint64_t roots = 0;                // no parent at all
};

struct SpanTreeOptions {
  bool reconstruct = true;  // false: known links only
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
  CorrelationReport report_;
};

SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options = {});

}  // namespace strata::model
