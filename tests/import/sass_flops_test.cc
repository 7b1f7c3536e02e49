// Kineto traces with CUPTI SASS counters (torch.profiler's cuda_profiler_range events): the importer
// turns the FP instruction counters into "flops" on each range (one per profiled kernel).
#include "import/sass_flops.h"

#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/span_tree.h"

namespace strata::import {
namespace {

TEST(SassFlops, AddsMultipliesAndTwiceTheFusedMultiplyAdds) {
  SassFlopCounter c;
  EXPECT_FALSE(c.flops().has_value());
  EXPECT_TRUE(c.add("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 10));
  EXPECT_TRUE(c.add("smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 20));
  EXPECT_TRUE(c.add("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 30));
  EXPECT_TRUE(c.add("smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 1));
  EXPECT_TRUE(c.add("smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 5));
  EXPECT_FALSE(c.add("smsp__sass_thread_inst_executed_op_fsqrt_pred_on.sum", 1000));  // not a FLOP counter
  EXPECT_FALSE(c.add("dram__bytes_read.sum", 1000));
  EXPECT_FALSE(c.add("smsp__sass_thread_inst_executed_op_ffma_pred_on.max", 1000));
  EXPECT_DOUBLE_EQ(*c.flops(), 10 + 20 + 2 * 30 + 2 * 1 + 5);
}

// Public trace: facebookresearch/HolisticTraceAnalysis tests/data (MIT), see tests/data/kineto/README.md.
TEST(SassFlops, RealA100CounterTraceGetsFlopsOnEveryProfilerRange) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(testing::source_path("tests/data/kineto/a100_cupti_counters.json.gz"), &t, &error)) << error;
  const uint32_t flops_key = t.strings.find("flops");
  ASSERT_NE(flops_key, UINT32_MAX);
  // Recomputed from the raw counters kept on each span, with the nine names spelled out.
  const std::pair<const char*, double> weights[] = {
      {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum", 1}, {"smsp__sass_thread_inst_executed_op_dmul_pred_on.sum", 1},
      {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum", 2}, {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum", 1},
      {"smsp__sass_thread_inst_executed_op_fmul_pred_on.sum", 1}, {"smsp__sass_thread_inst_executed_op_ffma_pred_on.sum", 2},
      {"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum", 1}, {"smsp__sass_thread_inst_executed_op_hmul_pred_on.sum", 1},
      {"smsp__sass_thread_inst_executed_op_hfma_pred_on.sum", 2}};
  size_t counted = 0;
  double total = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    std::optional<double> expected, recorded;
    for (const AttrRecord& a : t.attributes(i)) {
      if (a.key == flops_key) recorded = a.value.d;
      for (const auto& [name, weight] : weights)
        if (t.strings.get(a.key) == name) expected = expected.value_or(0) + weight * a.value.d;
    }
    EXPECT_EQ(expected.has_value(), recorded.has_value()) << t.name(t.spans[i]);
    if (!expected) continue;
    ++counted;
    EXPECT_DOUBLE_EQ(*recorded, *expected) << t.name(t.spans[i]);
    total += *recorded;
  }
  EXPECT_EQ(counted, 77u);  // the file's cuda_profiler_range events
  EXPECT_GT(total, 0);

  // Profiler ranges, not kernels (their times are made up): the kernel analyses find no kernel.
  trace::SpanTree tree = trace::build_span_tree(t);
  analysis::Params params;
  params.set("top", "0");
  auto by_name = analysis::find_analysis("kernels_by_name")->run({t, tree, params});
  ASSERT_TRUE(by_name.missing_input.has_value());
}

}  // namespace
}  // namespace strata::import
