// The correlation engine on small synthetic traces: each test builds the situation it names.
#include "trace/span_tree.h"

#include <gtest/gtest.h>

namespace strata::trace {
namespace {

class Builder {
 public:
  Builder() { trace.add_process(Process{}); }
  size_t span(const char* name, Level level, int64_t start, int64_t end, uint32_t tid = 1,
              SpanKind kind = SpanKind::kSpan, std::vector<AttrRecord> attrs = {}) {
    SpanRecord s;
    s.span_id = ++next_id_;
    s.name = trace.strings.intern(name);
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(kind);
    s.start_ns = start;
    s.end_ns = end;
    s.tid = tid;
    return trace.add_span(s, attrs);
  }
  size_t device(const char* name, int64_t start, int64_t end, uint64_t correlation = 0, uint32_t stream = 7) {
    size_t i = span(name, Level::kDevice, start, end, 0, SpanKind::kExecution);
    trace.spans[i].device = 0;
    trace.spans[i].stream = stream;
    trace.spans[i].correlation_id = correlation;
    return i;
  }
  Trace trace;

 private:
  uint64_t next_id_ = 0;
};

TEST(SpanTree, LevelAwareContainmentOnOneThread) {
  Builder b;
  size_t step = b.span("step", Level::kModel, 0, 100);
  size_t conv = b.span("conv", Level::kLayer, 10, 50);
  size_t inner = b.span("conv_impl", Level::kLayer, 20, 40);
  size_t prim = b.span("brgconv", Level::kLibrary, 22, 25);
  size_t relu = b.span("relu", Level::kLayer, 60, 70);
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.parent(step), kNoParent);
  EXPECT_EQ(t.parent(conv), static_cast<int32_t>(step));
  EXPECT_EQ(t.parent(inner), static_cast<int32_t>(conv));  // nested region at the same level
  EXPECT_EQ(t.parent(prim), static_cast<int32_t>(inner));
  EXPECT_EQ(t.parent(relu), static_cast<int32_t>(step));
  EXPECT_EQ(t.depth(prim), 3u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeReconstructed), 4u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeAmbiguous), 0u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeRoots), 1u);
}

TEST(SpanTree, NearestShallowerLevelBeatsInnermostDeeperOne) {
  // A library span inside a runtime call (deeper level) inside a layer: the layer is its parent.
  Builder b;
  size_t layer = b.span("layer", Level::kLayer, 0, 100);
  size_t call = b.span("cudaMalloc", Level::kRuntimeApi, 10, 90);
  size_t lib = b.span("cudnnConv", Level::kLibrary, 20, 30);
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.parent(lib), static_cast<int32_t>(layer));
  EXPECT_EQ(t.parent(call), static_cast<int32_t>(layer));
}

TEST(SpanTree, CorrelationBeatsContainment) {
  Builder b;
  size_t op = b.span("op", Level::kLayer, 0, 100);
  size_t launch = b.span("cudaLaunchKernel", Level::kRuntimeApi, 10, 20, 1, SpanKind::kLaunch);
  b.trace.spans[launch].correlation_id = 5;
  size_t annotation = b.span("gpu_annotation", Level::kDevice, 0, 1000, 0);
  b.trace.spans[annotation].device = 0;
  b.trace.spans[annotation].stream = 7;
  size_t kernel = b.device("kernel", 200, 300, 5);
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.parent(kernel), static_cast<int32_t>(launch));
  EXPECT_FALSE(t.reconstructed(kernel));
  EXPECT_EQ(t.parent(launch), static_cast<int32_t>(op));
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeCorrelationLinks), 1u);
}

TEST(SpanTree, ExplicitParentBeatsEverything) {
  Builder b;
  size_t a = b.span("a", Level::kModel, 0, 100);
  size_t c = b.span("c", Level::kModel, 200, 300);
  size_t child = b.span("child", Level::kLayer, 10, 20);
  b.trace.spans[child].parent_id = b.trace.spans[c].span_id;  // says c, though a contains it
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.parent(child), static_cast<int32_t>(c));
  EXPECT_EQ(t.parent(a), kNoParent);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeExplicitLinks), 1u);
}

TEST(SpanTree, ExternalIdLinksRuntimeCallsAndRejectsStaleIds) {
  Builder b;
  auto ext = [&](int64_t id) {
    return std::vector<AttrRecord>{b.trace.int_attr(attr_keys::kExternalCorrelationId, id)};
  };
  size_t old_op = b.span("aten::empty", Level::kLayer, 0, 5, 1, SpanKind::kSpan, ext(9));
  size_t op = b.span("aten::mm", Level::kLayer, 100, 200, 1, SpanKind::kSpan, ext(3));
  // A call made by op on another thread (no containment on its own track), and one whose id names
  // an op that had finished long before (stale id reuse).
  size_t call = b.span("cudaLaunchKernel", Level::kRuntimeApi, 110, 120, 2, SpanKind::kLaunch, ext(3));
  size_t stale = b.span("cudaMalloc", Level::kRuntimeApi, 150, 160, 1, SpanKind::kSpan, ext(9));
  b.trace.spans[call].correlation_id = 44;
  size_t kernel = b.device("gemm", 300, 400, 44);
  b.trace.attrs.push_back(b.trace.int_attr(attr_keys::kExternalCorrelationId, 3));
  b.trace.attr_begin.back() += 1;
  b.trace.spans[kernel].attr_count = 1;
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.parent(call), static_cast<int32_t>(op));
  EXPECT_FALSE(t.reconstructed(call));
  EXPECT_EQ(t.parent(kernel), static_cast<int32_t>(call));
  EXPECT_EQ(t.external_owner(kernel), static_cast<int32_t>(op));
  EXPECT_EQ(t.external_owner(stale), kNoParent);
  EXPECT_EQ(t.parent(stale), static_cast<int32_t>(op));  // by containment instead
  EXPECT_EQ(t.external_owner(old_op), kNoParent);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeExternalLinks), 1u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeExternalRejected), 1u);
}

TEST(SpanTree, ParallelCandidatesOnTwoThreadsAreAmbiguous) {
  Builder b;
  size_t step = b.span("step", Level::kModel, 0, 1000, 1);
  size_t op1 = b.span("op_thread2", Level::kLayer, 100, 500, 2);
  size_t op2 = b.span("op_thread3", Level::kLayer, 150, 600, 3);
  size_t kernel = b.device("kernel_without_launch", 200, 300);  // no correlation id
  size_t lonely = b.device("kernel_one_candidate", 700, 800);
  SpanTree t = build_span_tree(b.trace);
  EXPECT_TRUE(t.ambiguous(kernel));
  EXPECT_TRUE(t.reconstructed(kernel));
  EXPECT_EQ(t.parent(kernel), static_cast<int32_t>(op2));   // the later-starting candidate
  EXPECT_EQ(t.parent(lonely), static_cast<int32_t>(step));  // only the step covers it
  EXPECT_FALSE(t.ambiguous(lonely));
  EXPECT_EQ(t.parent(op1), static_cast<int32_t>(step));  // worker-thread ops under the step
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeAmbiguous), 1u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeCrossThread), 4u);
}

TEST(SpanTree, LateRecordsAreReorderedByTheirOwnTimestamps) {
  // Zins Algorithm 1: device records flushed after the host spans, in reverse order.
  Builder sorted, late;
  for (Builder* b : {&sorted, &late}) {
    b->span("step", Level::kModel, 0, 1000, 1);
    b->span("op", Level::kLayer, 100, 400, 1);
  }
  sorted.span("lib", Level::kLibrary, 150, 200, 1);
  sorted.span("lib", Level::kLibrary, 250, 300, 1);
  late.span("lib", Level::kLibrary, 250, 300, 1);
  late.span("lib", Level::kLibrary, 150, 200, 1);
  SpanTree a = build_span_tree(sorted.trace), c = build_span_tree(late.trace);
  EXPECT_EQ(a.stats().get(stats::Stat::kTreeLateRecords), 0u);
  EXPECT_EQ(c.stats().get(stats::Stat::kTreeLateRecords), 1u);
  for (size_t i = 2; i < 4; ++i) EXPECT_EQ(c.parent(i), 1);
  EXPECT_EQ(a.stats().get(stats::Stat::kTreeReconstructed), c.stats().get(stats::Stat::kTreeReconstructed));
}

TEST(SpanTree, ExplicitIdCycleIsBrokenNotFollowed) {
  Builder b;
  size_t x = b.span("x", Level::kLayer, 0, 10);
  size_t y = b.span("y", Level::kLayer, 20, 30);
  b.trace.spans[x].parent_id = b.trace.spans[y].span_id;
  b.trace.spans[y].parent_id = b.trace.spans[x].span_id;
  SpanTree t = build_span_tree(b.trace);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeCyclesBroken), 1u);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeRoots), 1u);
  EXPECT_EQ(t.ancestor_at_level(b.trace, x, 99), kNoParent);
}

TEST(SpanTree, KnownLinksOnlyWhenReconstructionIsOff) {
  Builder b;
  b.span("step", Level::kModel, 0, 100);
  size_t op = b.span("op", Level::kLayer, 10, 20);
  SpanTreeOptions options;
  options.reconstruct = false;
  SpanTree t = build_span_tree(b.trace, options);
  EXPECT_EQ(t.parent(op), kNoParent);
  EXPECT_EQ(t.stats().get(stats::Stat::kTreeRoots), 2u);
}

}  // namespace
}  // namespace strata::trace
