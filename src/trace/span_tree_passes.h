// The span tree's build, pass by pass (internal to the model; span_tree.h states the rules). Each
// pass reads and extends one TreeBuild; build_span_tree() runs them in this order:
//
//   group_tracks                 spans per track in their own time order; enclosing chains
//   link_explicit_parents        the span's own parent id (found up its enclosing chain, else anywhere
//                                in the process)
//   link_correlation_ids         device work -> its runtime call
//   link_external_ids            runtime calls and unlinked device work -> their framework op
//   reconstruct_by_containment   the nearest shallower span containing it on its track
//   reconstruct_across_threads   a containing span on another thread of the process
//   break_cycles                 corrupt explicit ids only
//
// Known links (the first three) are never overridden by reconstruction.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/span_tree.h"

namespace strata::trace::tree_passes {

struct TreeBuild {
  TreeBuild(const Trace& trace, const TrackTable& tracks, const SpanTreeOptions& options);

  const Trace& trace;
  const std::vector<SpanRecord>& spans;
  const TrackTable& tracks;
  const SpanTreeOptions& options;

  // The result, and all the build keeps per span besides the per-track lists below (memory: a
  // trace is opened within 1.5x its file size, tree included).
  std::vector<int32_t> parent;          // kNoParent for roots
  std::vector<LinkKind> link;           // how each parent was established
  std::vector<int32_t> external_owner;  // empty unless the trace carries external ids
  stats::StatSet stats;                 // tree.* counters

  // Spans of track t: members[track_begin[t] .. track_begin[t+1]), ordered by (start, longer first,
  // shallower first); enclosing[p]: position (in members) of the innermost member containing the
  // member at position p, -1 if none.
  std::vector<uint32_t> track_begin;
  std::vector<uint32_t> members;
  std::vector<int32_t> enclosing;

  // A parent from a known link (explicit, correlation, external): never overridden.
  bool known(size_t i) const {
    return link[i] == LinkKind::kExplicit || link[i] == LinkKind::kCorrelation ||
           link[i] == LinkKind::kExternal;
  }
  void set_known(size_t child, uint32_t to, LinkKind kind) {
    parent[child] = static_cast<int32_t>(to);
    link[child] = kind;
  }
};

void group_tracks(TreeBuild& b);
void link_explicit_parents(TreeBuild& b);
void link_correlation_ids(TreeBuild& b);
void link_external_ids(TreeBuild& b);
void reconstruct_by_containment(TreeBuild& b);
void reconstruct_across_threads(TreeBuild& b);
void break_cycles(TreeBuild& b);

}  // namespace strata::trace::tree_passes
