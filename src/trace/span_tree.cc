#include "trace/span_tree.h"

#include <algorithm>
#include <numeric>

#include "trace/span_tree_passes.h"

namespace strata::trace {

std::string_view link_kind_name(LinkKind kind) {
  switch (kind) {
    case LinkKind::kNone:
      return "";
    case LinkKind::kExplicit:
      return "explicit";
    case LinkKind::kCorrelation:
      return "correlation";
    case LinkKind::kExternal:
      return "external";
    case LinkKind::kContainment:
      return "containment";
    case LinkKind::kCrossThread:
      return "cross_thread";
    case LinkKind::kAmbiguous:
      return "ambiguous";
  }
  return "?";
}

SpanTree build_span_tree(const Trace& trace, const TrackTable& tracks, const SpanTreeOptions& options) {
  namespace p = tree_passes;
  p::TreeBuild b(trace, tracks, options);
  p::group_tracks(b);
  p::link_explicit_parents(b);
  p::link_correlation_ids(b);
  p::link_external_ids(b);
  p::reconstruct_by_containment(b);
  p::reconstruct_across_threads(b);
  // The per-track lists are done with: free them before the depths.
  b.members = {};
  b.enclosing = {};
  p::break_cycles(b);

  // Roots and depth (parents are not always before their children in span order: walk up to a
  // span whose depth is known, then assign on the way back).
  const size_t n = trace.spans.size();
  SpanTree tree;
  tree.parent_ = std::move(b.parent);
  tree.link_ = std::move(b.link);
  tree.external_owner_ = std::move(b.external_owner);
  constexpr uint32_t kUnknown = UINT32_MAX;
  tree.depth_.assign(n, kUnknown);
  std::vector<uint32_t> walk;
  for (size_t i = 0; i < n; ++i) {
    if (tree.parent_[i] == kNoParent) tree.roots_.push_back(static_cast<uint32_t>(i));
    if (tree.depth_[i] != kUnknown) continue;
    walk.clear();
    int32_t cur = static_cast<int32_t>(i);
    while (cur != kNoParent && tree.depth_[static_cast<size_t>(cur)] == kUnknown) {
      walk.push_back(static_cast<uint32_t>(cur));
      cur = tree.parent_[static_cast<size_t>(cur)];
    }
    uint32_t depth = cur == kNoParent ? 0 : tree.depth_[static_cast<size_t>(cur)] + 1;
    for (size_t k = walk.size(); k-- > 0; ++depth) tree.depth_[walk[k]] = depth;
  }
  b.stats.set(stats::Stat::kTreeRoots, tree.roots_.size());
  tree.stats_ = std::move(b.stats);
  return tree;
}

SpanTree build_span_tree(const Trace& trace, const SpanTreeOptions& options) {
  return build_span_tree(trace, TrackTable::build(trace), options);
}

void SpanTree::build_children() const {
  const size_t n = parent_.size();
  std::vector<uint32_t> begin(n + 1, 0);
  for (size_t i = 0; i < n; ++i)
    if (parent_[i] != kNoParent) ++begin[static_cast<size_t>(parent_[i]) + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());
  std::vector<uint32_t> index(begin[n]);
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  for (size_t i = 0; i < n; ++i)
    if (parent_[i] != kNoParent) index[fill[static_cast<size_t>(parent_[i])]++] = static_cast<uint32_t>(i);
  child_index_ = std::move(index);
  child_begin_ = std::move(begin);
}

std::shared_ptr<const TraceStructure> build_structure(const Trace& trace, const SpanTreeOptions& options) {
  auto structure = std::make_shared<TraceStructure>();
  structure->tracks = TrackTable::build(trace);
  structure->tree = build_span_tree(trace, structure->tracks, options);
  return structure;
}

int32_t SpanTree::ancestor_at_level(const Trace& trace, size_t i, uint8_t level) const {
  int32_t cur = static_cast<int32_t>(i);
  for (int guard = 0; cur != kNoParent && guard < 4096; ++guard) {
    if (trace.spans[static_cast<size_t>(cur)].level == level) return cur;
    cur = parent_[static_cast<size_t>(cur)];
  }
  return kNoParent;
}

}  // namespace strata::trace
