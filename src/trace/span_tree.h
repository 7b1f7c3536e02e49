// Parent/child structure over a trace's spans: the correlation engine (XSP III-A, Zins III-F). Built
// once when a trace is opened and kept with it (Trace::tree()); every span's parent comes with how it
// was established (LinkKind), which exports carry.
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
// The build is a sequence of named passes over the trace's tracks (span_tree_passes.h): explicit
// links, correlation ids, external ids, containment, across threads, then cycles are broken.
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
#include "core/stats.h"
#include "trace/trace.h"
#include "trace/tracks.h"

namespace strata::trace {

inline constexpr int32_t kNoParent = -1;

// How a span's parent was established. Stable names (exports write them).
enum class LinkKind : uint8_t {
  kNone = 0,     // a root
  kExplicit,     // the span's own parent id
  kCorrelation,  // device work -> the runtime call with its correlation id
  kExternal,     // -> the framework op with the same external correlation id
  kContainment,  // reconstructed: the nearest shallower span containing it on its own track
  kCrossThread,  // reconstructed: the one containing span on another thread of the process
  kAmbiguous,    // reconstructed across threads among several overlapping candidates (latest taken)
};
std::string_view link_kind_name(LinkKind kind);  // "", "explicit", "correlation", ...

struct SpanTreeOptions {
  bool reconstruct = true;   // false: known links only
  bool cross_thread = true;  // also look for parents on other threads of the process
};

class SpanTree {
 public:
  // Indices into trace.spans. parent(i) == kNoParent for roots.
  int32_t parent(size_t i) const { return parent_[i]; }
  uint32_t depth(size_t i) const { return depth_[i]; }
  LinkKind link(size_t i) const { return link_[i]; }
  // The children of span i. The lists are built on first use (8 bytes a span; not thread-safe
  // before that): the tree itself keeps only parent, depth and link (9 bytes a span).
  std::span<const uint32_t> children(size_t i) const {
    if (child_begin_.empty()) build_children();
    return {child_index_.data() + child_begin_[i], child_index_.data() + child_begin_[i + 1]};
  }
  std::span<const uint32_t> roots() const { return roots_; }
  bool reconstructed(size_t i) const {
    return link_[i] == LinkKind::kContainment || link_[i] == LinkKind::kCrossThread ||
           link_[i] == LinkKind::kAmbiguous;
  }
  bool ambiguous(size_t i) const { return link_[i] == LinkKind::kAmbiguous; }
  size_t size() const { return parent_.size(); }
  // How the tree was linked: the tree.* counters of the stats registry.
  const stats::StatSet& stats() const { return stats_; }
  // The framework op (layer level or shallower) carrying the same external correlation id as span i,
  // e.g. the cpu_op that a kernel ultimately belongs to; kNoParent if none (or if i is that op).
  int32_t external_owner(size_t i) const { return external_owner_.empty() ? kNoParent : external_owner_[i]; }

  // The nearest ancestor (or the span itself) at `level`; kNoParent if none.
  int32_t ancestor_at_level(const Trace& trace, size_t i, uint8_t level) const;

 private:
  friend SpanTree build_span_tree(const Trace&, const TrackTable&, const SpanTreeOptions&);
  void build_children() const;
  std::vector<int32_t> parent_;
  std::vector<uint32_t> depth_;
  std::vector<LinkKind> link_;
  std::vector<uint32_t> roots_;
  mutable std::vector<uint32_t> child_begin_;
  mutable std::vector<uint32_t> child_index_;
  std::vector<int32_t> external_owner_;
  stats::StatSet stats_;
};

// Builds the tree over `tracks` (the trace's own table, or one built for it).
SpanTree build_span_tree(const Trace& trace, const TrackTable& tracks, const SpanTreeOptions& options = {});
// Same, building the tracks table first (tests, traces assembled by hand).
SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options = {});

// What Trace::tracks() and Trace::tree() return: built together, once.
struct TraceStructure {
  TrackTable tracks;
  SpanTree tree;
};
std::shared_ptr<const TraceStructure> build_structure(const Trace& trace,
                                                      const SpanTreeOptions& options = {});

}  // namespace strata::trace
