// Evaluations chosen by step marks: model spans carrying the "step" attribute (Kineto's
// ProfilerStep#N, as imported) are the evaluations; model spans inside a step are its parts and
// those outside every step are not evaluations. Expected values are worked out from the fixtures.
#include <gtest/gtest.h>

#include <vector>

#include "analysis_test_util.h"

#ifdef STRATA_STEPS_KINETO
#include "import/importer.h"
#endif

namespace strata::testing {
namespace {

constexpr int64_t kMs = 1'000'000;

SpanRecord span(uint64_t id, uint64_t parent, int64_t start_ms, int64_t end_ms, uint32_t name, Level level,
                uint32_t tid = 1) {
  SpanRecord s;
  s.span_id = id;
  s.parent_id = parent;
  s.start_ns = start_ms * kMs;
  s.end_ns = end_ms * kMs;
  s.name = name;
  s.level = static_cast<uint8_t>(level);
  s.kind = static_cast<uint8_t>(SpanKind::kSpan);
  s.tid = tid;
  return s;
}

// An "epoch" model span (0..100 ms) around two training steps: step k lasts 10 k ms (k = 1, 2)
// and holds a "forward" model span with layers fc (1 x k ms) and relu (1 x k ms), then a
// "backward" model span with layer fc_backward (2 x k ms). A "comm" model span on thread 2 with
// one layer runs outside every step. With marks, the steps are the evaluations.
trace::Trace training_trace(bool marked) {
  trace::Trace t;
  trace::Process p;
  p.pid = 7;
  t.add_process(p);
  const uint32_t epoch = t.strings.intern("epoch"), forward = t.strings.intern("forward"),
                 backward = t.strings.intern("backward"), comm = t.strings.intern("comm"),
                 fc = t.strings.intern("fc"), relu = t.strings.intern("relu"),
                 fc_backward = t.strings.intern("fc_backward"), all_reduce = t.strings.intern("all_reduce");
  uint64_t id = 1;
  t.add_span(span(id++, 0, 0, 100, epoch, Level::kModel));
  int64_t at = 5;
  for (int64_t k = 1; k <= 2; ++k) {
    const uint64_t step_id = id++;
    std::vector<AttrRecord> attrs;
    if (marked) attrs.push_back(t.int_attr("step", k));
    t.add_span(span(step_id, 1, at, at + 10 * k, t.strings.intern("ProfilerStep#" + std::to_string(k)),
                    Level::kModel),
               attrs);
    const uint64_t fwd = id++;
    t.add_span(span(fwd, step_id, at + k, at + 4 * k, forward, Level::kModel));
    t.add_span(span(id++, fwd, at + k, at + 2 * k, fc, Level::kLayer));
    t.add_span(span(id++, fwd, at + 2 * k, at + 3 * k, relu, Level::kLayer));
    const uint64_t bwd = id++;
    t.add_span(span(bwd, step_id, at + 4 * k, at + 8 * k, backward, Level::kModel));
    t.add_span(span(id++, bwd, at + 4 * k, at + 6 * k, fc_backward, Level::kLayer));
    at += 10 * k + 5;
  }
  const uint64_t c = id++;
  t.add_span(span(c, 0, 6, 9, comm, Level::kModel, 2));
  t.add_span(span(id++, c, 6, 8, all_reduce, Level::kLayer, 2));
  return t;
}

TEST(Steps, MarkedStepsAreTheEvaluations) {
  trace::Trace t = training_trace(/*marked=*/true);
  auto model = run_analysis(t, "model_table", {{"trim", "0"}});
  const auto& mt = model.table();
  ASSERT_EQ(mt.rows.size(), 1u);
  EXPECT_EQ(num(mt, 0, "evaluations"), 2);
  EXPECT_DOUBLE_EQ(num(mt, 0, "latency_ms"), 15);  // (10 + 20) / 2
  EXPECT_DOUBLE_EQ(num(mt, 0, "min_ms"), 10);
  EXPECT_DOUBLE_EQ(num(mt, 0, "max_ms"), 20);
  EXPECT_TRUE(has_note(mt,
                       "evaluations: the model spans marked as steps; 4 model spans inside them are "
                       "their parts; 1 model spans outside every step are not evaluations"));
  EXPECT_TRUE(has_note(mt, "1 model spans that contain other model spans are groups"));

  // Every layer of a step (forward and backward alike) is one of its layers, in execution order.
  auto layers = run_analysis(t, "layer_table", {{"trim", "0"}});
  const auto& lt = layers.table();
  ASSERT_EQ(lt.rows.size(), 3u);
  const char* names[] = {"fc", "relu", "fc_backward"};
  const double mean_ms[] = {1.5, 1.5, 3};  // (1 + 2) / 2, (1 + 2) / 2, (2 + 4) / 2
  for (size_t r = 0; r < 3; ++r) {
    EXPECT_EQ(text(lt, r, "name"), names[r]);
    EXPECT_DOUBLE_EQ(num(lt, r, "latency_ms"), mean_ms[r]);
  }
  EXPECT_TRUE(has_note(lt, "1 top-level layers outside any model span not included"));  // all_reduce
}

TEST(Steps, WithoutMarksTheInnermostModelSpansAreTheEvaluations) {
  // The same spans unmarked: forward (3 k ms) and backward (4 k ms) spans are the evaluations, and
  // the steps and the epoch only group them.
  trace::Trace t = training_trace(/*marked=*/false);
  auto model = run_analysis(t, "model_table", {{"trim", "0"}});
  const auto& mt = model.table();
  ASSERT_EQ(mt.rows.size(), 1u);
  EXPECT_EQ(num(mt, 0, "evaluations"), 5);  // forward x2, backward x2, comm
  EXPECT_DOUBLE_EQ(num(mt, 0, "min_ms"), 3);
  EXPECT_DOUBLE_EQ(num(mt, 0, "max_ms"), 8);
  EXPECT_TRUE(has_note(mt, "3 model spans that contain other model spans are groups"));
  EXPECT_FALSE(has_note(mt, "marked as steps"));
}

#ifdef STRATA_STEPS_KINETO
// The real V100 DDP training trace: its five ProfilerStep#101..105 spans are the evaluations, with
// the durations the JSON gives them (35115.869, 72077.474, 95697.341, 95551.087, 95699.037 us);
// the forward/backward/optimizer annotations and NCCL calls inside them are their parts, the NCCL
// annotations of the communication thread are outside every step.
TEST(Steps, KinetoProfilerStepsOfARealTrainingRun) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(
      std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/v100_train_rank0.json.gz", &t, &error))
      << error;
  size_t marked = 0;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (auto step = t.find_attr(i, "step")) {
      ++marked;
      EXPECT_EQ(t.name(t.spans[i]), "ProfilerStep#" + std::to_string(step->value.i));
    }
  EXPECT_EQ(marked, 5u);
  auto model = run_analysis(t, "model_table", {{"trim", "0"}});
  const auto& mt = model.table();
  ASSERT_EQ(mt.rows.size(), 1u);
  EXPECT_EQ(num(mt, 0, "evaluations"), 5);
  EXPECT_NEAR(num(mt, 0, "min_ms"), 35.115869, 1e-9);
  EXPECT_NEAR(num(mt, 0, "max_ms"), 95.699037, 1e-9);
  EXPECT_NEAR(num(mt, 0, "median_ms"), 95.551087, 1e-9);
  EXPECT_NEAR(num(mt, 0, "latency_ms"), (35115.869 + 72077.474 + 95697.341 + 95551.087 + 95699.037) / 5e3,
              1e-9);
  EXPECT_TRUE(has_note(mt, "evaluations: the model spans marked as steps"));
}
#endif

}  // namespace
}  // namespace strata::testing
