#include "runs/span_matching.h"

#include <gtest/gtest.h>

#include "core/level.h"
#include "runs/run_set.h"

namespace strata::runs {
namespace {

// Builds a trace from (id, parent, level, name, start, end, tid) rows in one process.
struct Row {
  uint64_t id, parent;
  Level level;
  const char* name;
  int64_t start, end;
  uint32_t tid = 1;
};

trace::Trace make_trace(std::initializer_list<Row> rows, int64_t process_start = 0) {
  trace::Trace t;
  trace::Process p;
  p.pid = 100;
  p.start_monotonic_ns = process_start;
  t.add_process(p);
  for (const Row& r : rows) {
    SpanRecord s;
    s.span_id = r.id;
    s.parent_id = r.parent;
    s.level = static_cast<uint8_t>(r.level);
    s.name = t.strings.intern(r.name);
    s.start_ns = r.start;
    s.end_ns = r.end;
    s.tid = r.tid;
    t.add_span(s);
  }
  return t;
}

TEST(SpanMatching, SameStructureGivesSameKeysWhateverIdsAndTimes) {
  trace::Trace a = make_trace({{1, 0, Level::kModel, "predict", 0, 100},
                               {2, 1, Level::kLayer, "conv", 10, 20},
                               {3, 1, Level::kLayer, "conv", 30, 40},
                               {4, 0, Level::kModel, "predict", 200, 300}});
  trace::Trace b = make_trace({{71, 0, Level::kModel, "predict", 1000, 1500},
                               {72, 71, Level::kLayer, "conv", 1010, 1100},
                               {73, 71, Level::kLayer, "conv", 1200, 1300},
                               {74, 0, Level::kModel, "predict", 2000, 2100}});
  auto ka = match_keys(a, static_cast<int>(Level::kLayer));
  auto kb = match_keys(b, static_cast<int>(Level::kLayer));
  EXPECT_EQ(ka, kb);
  // Occurrence index separates same-named siblings and same-named roots.
  EXPECT_NE(ka[1], ka[2]);
  EXPECT_NE(ka[0], ka[3]);
}

TEST(SpanMatching, DeeperAncestorsAreSkippedAtAShallowerView) {
  // In the deep run a layer op sits under a library span (a callback); the layer-only run has no
  // library span, so at view level "layer" the op's anchor is the predict span in both.
  trace::Trace deep = make_trace({{1, 0, Level::kModel, "predict", 0, 100},
                                  {2, 1, Level::kLibrary, "onednn::conv", 10, 50},
                                  {3, 2, Level::kLayer, "aten::add", 20, 30}});
  trace::Trace shallow =
      make_trace({{9, 0, Level::kModel, "predict", 0, 80}, {8, 9, Level::kLayer, "aten::add", 15, 25}});
  auto kd = match_keys(deep, static_cast<int>(Level::kLayer));
  auto ks = match_keys(shallow, static_cast<int>(Level::kLayer));
  EXPECT_EQ(kd[0], ks[0]);
  EXPECT_EQ(kd[2], ks[1]);
  EXPECT_EQ(kd[1], kNoKey);  // deeper than the view
}

TEST(SpanMatching, ThreadsAreRankedByFirstSpanNotById) {
  trace::Trace a =
      make_trace({{1, 0, Level::kModel, "work", 0, 10, 500}, {2, 0, Level::kModel, "work", 5, 15, 600}});
  trace::Trace b =
      make_trace({{1, 0, Level::kModel, "work", 0, 10, 42}, {2, 0, Level::kModel, "work", 5, 15, 7}});
  EXPECT_EQ(match_keys(a, 20), match_keys(b, 20));
  EXPECT_NE(match_keys(a, 20)[0], match_keys(a, 20)[1]);
}

TEST(RunSet, AppendTagsProcessesAndReinternsStrings) {
  trace::Trace a = make_trace({{1, 0, Level::kModel, "predict", 0, 100}});
  trace::Trace dst;
  dst.strings.intern("something else first");
  append_trace(dst, a, {{"run", "3"}});
  ASSERT_EQ(dst.processes.size(), 1u);
  EXPECT_EQ(dst.processes[0].properties.get("run"), "3");
  ASSERT_EQ(dst.spans.size(), 1u);
  EXPECT_EQ(dst.name(dst.spans[0]), "predict");
  EXPECT_EQ(median_ns({5, 1, 3}), 3);
  EXPECT_EQ(median_ns({4, 1, 3, 2}), 2);  // (2 + 3) / 2 in integer ns
}

}  // namespace
}  // namespace strata::runs
