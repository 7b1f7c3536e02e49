#include "runs/leveled.h"

#include <gtest/gtest.h>

#include "core/level.h"

namespace strata::runs {
namespace {

model::Trace two_level_trace(int64_t origin, int64_t step_ns, int64_t op_ns, bool with_ops) {
  model::Trace t;
  model::Process p;
  p.pid = 1;
  t.add_process(p);
  SpanRecord step;
  step.span_id = 1;
  step.level = static_cast<uint8_t>(Level::kModel);
  step.name = t.strings.intern("step");
  step.start_ns = origin;
  step.end_ns = origin + step_ns;
  step.tid = 1;
  t.add_span(step);
  if (with_ops) {
    SpanRecord op = step;
    op.span_id = 2;
    op.parent_id = 1;
    op.level = static_cast<uint8_t>(Level::kLayer);
    op.name = t.strings.intern("op");
    op.start_ns = origin + 5;
    op.end_ns = origin + 5 + op_ns;
    t.add_span(op);
  }
  return t;
}

TEST(Leveled, SpansTakeTimingFromTheRunOfTheirLevel) {
  model::Trace model_run = two_level_trace(1000, 20, 0, false);
  model::Trace layer_run = two_level_trace(5000, 120, 110, true);
  const std::vector<int> levels = {static_cast<int>(Level::kModel), static_cast<int>(Level::kLayer)};
  LeveledResult r = combine_leveled(levels, {{{&model_run, 900}}, {{&layer_run, 1100}}});
  ASSERT_EQ(r.trace.spans.size(), 2u);
  const SpanRecord& step = r.trace.spans[0];
  const SpanRecord& op = r.trace.spans[1];
  EXPECT_EQ(step.duration_ns(), 20);  // from the model run
  EXPECT_EQ(step.start_ns, 5000);     // shifted onto the deepest run's clock
  EXPECT_EQ(op.duration_ns(), 110);   // the deepest run's own timing
  EXPECT_EQ(op.parent_id, step.span_id);
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_EQ(r.levels[0].matched, 1u);
  EXPECT_EQ(r.levels[0].unmatched, 0u);
  EXPECT_EQ(r.levels[1].overhead_ns, 100);  // 120 - 20 on the model-level spans
  EXPECT_DOUBLE_EQ(r.levels[1].overhead_pct, 500.0);
  EXPECT_EQ(r.trace.processes[0].properties.get("run"), "0");
  format::Properties record;
  describe_leveled(r, &record);
  EXPECT_EQ(record.get("leveled.layer.overhead_ns"), "100");
  EXPECT_EQ(record.get("leveled.levels"), "model,layer");
}

TEST(Leveled, UnmatchedSpansKeepTheirOwnTimingAndAreCounted) {
  model::Trace model_run = two_level_trace(0, 20, 0, false);
  model_run.spans[0].name = model_run.strings.intern("other");  // no counterpart for "step"
  model::Trace layer_run = two_level_trace(0, 120, 110, true);
  const std::vector<int> levels = {static_cast<int>(Level::kModel), static_cast<int>(Level::kLayer)};
  LeveledResult r = combine_leveled(levels, {{{&model_run, 1}}, {{&layer_run, 1}}});
  EXPECT_EQ(r.trace.spans[0].duration_ns(), 120);
  EXPECT_EQ(r.levels[0].matched, 0u);
  EXPECT_EQ(r.levels[0].unmatched, 1u);
  EXPECT_EQ(r.levels[0].unmatched_source, 1u);
}

}  // namespace
}  // namespace strata::runs
