// Iteration mining on real GPU traces in tests/data/kineto (Kineto JSON from HolisticTraceAnalysis's
// test data, MIT License, Copyright (c) Meta Platforms, Inc. and affiliates). The traces carry step
// annotations; the miner never reads them (device-side annotations are not ops), the tests compare.
//
// What the data holds (read from the JSON):
//  * v100_train_rank0: 5 training steps, ProfilerStep#101..#105 on the CPU, each with a
//    DistributedDataParallel.forward annotation on the GPU stream around the step's forward kernels.
//  * a100_alexnet_train: an AlexNet benchmark: weights copied to the device, then two forward passes
//    (warmup, measure), each an outer "[param|...|forward]" annotation (an inner one nests in it);
//    the same 5 convolutions (aten::conv2d) run in each.
//  * mi250_train: one training step with GPU work (ProfilerStep#1); ProfilerStep#2 only starts
//    (49 us, no kernel) before the profiler stops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "analysis/iterations/iterations_analysis.h"
#include "core/level.h"
#include "import/importer.h"

namespace strata::analysis::iterations {
namespace {

trace::Trace load(const std::string& file) {
  trace::Trace trace;
  std::string error;
  EXPECT_TRUE(
      import::import_trace(std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/" + file, &trace, &error))
      << error;
  return trace;
}

using Window = std::pair<int64_t, int64_t>;

// Spans named `name` (or starting with it when `prefix`) at `level`, outermost only, by start.
std::vector<Window> windows(const trace::Trace& trace, std::string_view name, Level level,
                            bool prefix = false) {
  std::vector<Window> out;
  for (const SpanRecord& s : trace.spans) {
    const std::string_view n = trace.name(s);
    if (s.level != static_cast<uint8_t>(level) || !(prefix ? n.substr(0, name.size()) == name : n == name))
      continue;
    out.emplace_back(s.start_ns, s.end_ns);
  }
  std::sort(out.begin(), out.end());
  std::vector<Window> outer;
  for (const Window& w : out)
    if (outer.empty() || w.first >= outer.back().second) outer.push_back(w);
  return outer;
}

// Each mined iteration starts inside the window of the same rank.
void expect_one_per_window(const IterationsReport& r, const std::vector<Window>& w, const std::string& what) {
  ASSERT_EQ(r.metrics.iterations.size(), w.size()) << what << ": " << r.mining.confidence_note;
  for (size_t k = 0; k < w.size(); ++k) {
    EXPECT_GE(r.metrics.iterations[k].start_ns, w[k].first) << what << " iteration " << k;
    EXPECT_LT(r.metrics.iterations[k].start_ns, w[k].second) << what << " iteration " << k;
  }
}

TEST(IterationsKineto, V100TrainingStepsFoundWithoutMarkers) {
  const trace::Trace trace = load("v100_train_rank0.json.gz");
  const auto steps = windows(trace, "ProfilerStep#", Level::kModel, true);
  ASSERT_EQ(steps.size(), 5u);
  IterationsReport report;
  std::string error;
  ASSERT_TRUE(run_iterations(trace, {}, &report, &error)) << error;
  ASSERT_TRUE(report.classes.device_trace);
  EXPECT_EQ(report.classes.tracks[report.classes.main_track].role, TrackRole::kMain);
  EXPECT_TRUE(report.mining.detected);
  EXPECT_GE(report.mining.confidence, 0.9) << report.mining.confidence_note;
  // One iteration per step. On the GPU, iteration k starts with step k's forward pass: at its first
  // kernel, where the GPU-side forward annotation begins (Kineto's microsecond timestamps: within
  // 1 us), and holds the whole forward.
  expect_one_per_window(report, steps, "ProfilerStep");
  const auto forwards = windows(trace, "DistributedDataParallel.forward", Level::kDevice);
  ASSERT_EQ(forwards.size(), 5u);
  for (size_t k = 0; k < forwards.size(); ++k) {
    EXPECT_LT(std::llabs(report.metrics.iterations[k].start_ns - forwards[k].first), 1000) << k;
    EXPECT_GE(report.metrics.iterations[k].end_ns, forwards[k].second) << k;
  }
  // The annotations are not ops: the forward's kernels are in the sequence mined.
  for (uint32_t i : report.metrics.sequence_spans)
    EXPECT_EQ(trace.spans[i].kind, static_cast<uint8_t>(SpanKind::kExecution)) << trace.name(trace.spans[i]);
  EXPECT_FALSE(report.diagnoses.empty());
}

TEST(IterationsKineto, A100TwoForwardPassesNeedTheirCount) {
  const trace::Trace trace = load("a100_alexnet_train.json.gz");
  const auto passes = windows(trace, "[param|pytorch.model.alex_net|0|0|0|", Level::kModel, true);
  ASSERT_EQ(passes.size(), 2u);  // warmup, measure
  int64_t convs = 0;
  for (const SpanRecord& s : trace.spans) convs += trace.name(s) == "aten::conv2d";
  ASSERT_EQ(convs, 10);  // 5 convolutions per pass
  // Detection needs a loop repeated at least 3 times: two passes are not one, and what repeats
  // inside a pass (convolution blocks) is not reported with confidence.
  IterationsReport detected;
  std::string error;
  ASSERT_TRUE(run_iterations(trace, {}, &detected, &error)) << error;
  EXPECT_LT(detected.mining.confidence, 0.6) << detected.mining.confidence_note;
  // Given the count (the paper's mode), the two passes are found, each inside its annotation.
  IterationsOptions two;
  two.miner.iterations = 2;
  IterationsReport given;
  ASSERT_TRUE(run_iterations(trace, two, &given, &error)) << error;
  expect_one_per_window(given, passes, "forward pass");
  EXPECT_EQ(given.mining.ops_between, 0);
  // The 16 host-to-device copies are the weights and biases (8 layers), moved before the first pass:
  // set-up, not input feeding it (its window reaches back one median interval only).
  ASSERT_EQ(given.metrics.copies.size(), 16u);
  for (const CopyEvent& c : given.metrics.copies) {
    EXPECT_GT(c.bytes, 0);
    EXPECT_LT(c.end_ns, given.metrics.iterations[0].start_ns - *given.metrics.iterations[1].interval_ns);
  }
  EXPECT_EQ(given.metrics.iterations[0].copies, 0);
  EXPECT_EQ(given.metrics.iterations[0].copy_bytes, 0);
  EXPECT_EQ(given.metrics.loops[0].avg_copy_bytes, 0);
}

TEST(IterationsKineto, Mi250SingleStepIsNotALoop) {
  const trace::Trace trace = load("mi250_train.json.gz");
  const auto steps = windows(trace, "ProfilerStep#", Level::kModel, true);
  ASSERT_EQ(steps.size(), 2u);
  IterationsReport report;
  std::string error;
  EXPECT_FALSE(run_iterations(trace, {}, &report, &error));
  EXPECT_NE(error.find("does not look iterative"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::analysis::iterations
