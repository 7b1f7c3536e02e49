// The analysis registry: each analysis registers itself next to its factory with an order key
// (analysis.h, STRATA_REGISTER_ANALYSIS). The order is part of the output (`strata analyze --list`,
// the report, the help text), so it is recorded here: a registration that moves, goes missing (its
// object file dropped by the linker) or collides with another fails this test.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/analysis.h"

namespace strata {
namespace {

// The order of the registry before analyses registered themselves (analysis/registry.cc at the
// time listed them in this order); a new analysis is added here where its order key puts it.
std::vector<std::string> recorded_order() {
  std::vector<std::string> names = {
      "model_table",
      "runs",
      "layer_table",
      "layer_sequence",
      "layer_type_distribution",
      "layer_type_aggregate",
      "stages",
      "conv_share",
      "op_stats",
      "kernel_table",
      "kernels_by_name",
      "kernels_by_layer",
      "kernels_by_model",
      "layer_device_split",
      "metrics_by_layer",
      "kernel_roofline",
      "layer_roofline",
      "iterations",
      "rank_breakdown",
      "collective_wait",
      "idle_time",
      "comm_overlap",
      "step_time",
      "kernel_distribution",
      "launch_stats",
      "queue_length",
      "gpu_kernel_summary",
      "cuda_api_summary",
      "memcpy_summary",
      "range_summary",
      "gpu_stalls",
  };
#ifdef STRATA_REGISTRY_TEST_LOWERBOUND  // src/lowerbound is in this build
  for (const char* name : {"framework_vs_bound", "framework_inefficiency", "tensor_cores"})
    names.push_back(name);
#endif
  return names;
}

TEST(AnalysisRegistry, HoldsEveryAnalysisInTheRecordedOrder) {
  std::vector<std::string> names;
  for (const auto& a : analysis::all_analyses()) names.emplace_back(a->name());
  EXPECT_EQ(names, recorded_order());
}

TEST(AnalysisRegistry, NoNameOrOrderKeyIsUsedTwice) {
  std::vector<analysis::RegisteredAnalysis> registered = analysis::registered_analyses();
  ASSERT_EQ(registered.size(), analysis::all_analyses().size());
  EXPECT_TRUE(analysis::registry_problems(registered).empty());
  for (size_t i = 0; i < registered.size(); ++i) {
    EXPECT_EQ(registered[i].name, analysis::all_analyses()[i]->name());
    EXPECT_FALSE(registered[i].file.empty()) << registered[i].name;
    if (i > 0) {
      EXPECT_LT(registered[i - 1].order, registered[i].order) << registered[i].name;
    }
    EXPECT_EQ(analysis::find_analysis(registered[i].name), analysis::all_analyses()[i].get());
  }
}

// The check itself, on made-up registrations: a repeated name and a repeated order key are each
// reported with both files (so the test above can fail).
TEST(AnalysisRegistry, ReportsCollidingNamesAndOrderKeys) {
  std::vector<analysis::RegisteredAnalysis> clean = {{100, "a", "a.cc"}, {200, "b", "b.cc"}};
  EXPECT_TRUE(analysis::registry_problems(clean).empty());

  std::vector<analysis::RegisteredAnalysis> same_name = {{100, "a", "a.cc"}, {200, "a", "other.cc"}};
  std::vector<std::string> problems = analysis::registry_problems(same_name);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("two analyses are named a"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("other.cc"), std::string::npos) << problems[0];

  std::vector<analysis::RegisteredAnalysis> same_key = {{100, "a", "a.cc"}, {100, "b", "b.cc"}};
  problems = analysis::registry_problems(same_key);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("order key 100"), std::string::npos) << problems[0];
  EXPECT_NE(problems[0].find("b.cc"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace strata
