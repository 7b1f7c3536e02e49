// Iteration mining on a real GPU trace: tests/data/kineto/v100_train_rank0.json.gz (Kineto JSON from
// HolisticTraceAnalysis's test data, MIT License, Copyright (c) Meta Platforms, Inc. and affiliates).
// The trace carries ProfilerStep#N annotations; the miner never reads them, the test compares.
#include <gtest/gtest.h>

#include <string>

#include "analysis/iterations/iterations_analysis.h"
#include "import/importer.h"

namespace strata::iterations {
namespace {

TEST(IterationsKineto, V100TrainingStepsFoundWithoutMarkers) {
  model::Trace trace;
  std::string error;
  ASSERT_TRUE(import::import_trace(std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/v100_train_rank0.json.gz",
                                   &trace, &error))
      << error;
  int64_t steps = 0;
  for (const SpanRecord& s : trace.spans)
    if (trace.name(s).rfind("ProfilerStep#", 0) == 0 && s.stream == kNoStream) ++steps;
  ASSERT_GT(steps, 0);
  IterationsReport report;
  ASSERT_TRUE(run_iterations(trace, {}, &report, &error)) << error;
  ASSERT_TRUE(report.classes.device_trace);
  EXPECT_EQ(report.classes.tracks[report.classes.main_track].role, TrackRole::kMain);
  EXPECT_EQ(static_cast<int64_t>(report.metrics.iterations.size()), steps) << report.mining.confidence_note;
  EXPECT_FALSE(report.diagnoses.empty());
}

}  // namespace
}  // namespace strata::iterations
