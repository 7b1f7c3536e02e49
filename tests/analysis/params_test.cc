// --param keys: each analysis reads only the keys it declares (analysis_param_keys), a key that no
// chosen analysis reads is refused with one line, and every analysis that declares top honors it.
#include <gtest/gtest.h>

#include <set>

#include "analysis/pipeline.h"
#include "analysis_test_util.h"
#include "fixture_traces.h"

namespace strata::testing {
namespace {

// Every key some analysis declares, with a value that makes the code paths reading it run.
analysis::Params every_key() {
  analysis::Params p;
  for (const auto& [k, v] : std::initializer_list<std::pair<const char*, const char*>>{
           {"trim", "0.2"},   {"stat", "median"},       {"model", "predict"},  {"batch", "4"},
           {"threshold", "0.1"}, {"latency_target_ms", "100"}, {"sort", "latency"}, {"top", "2"},
           {"stages", "4"},   {"level", "layer"},       {"device", "a100"},    {"peak_gflops", "100"},
           {"peak_gbps", "10"}, {"iterations", "5"},    {"epsilon", "0"},      {"max_extra_ops", "2"},
           {"min_repeats", "2"}, {"max_loops", "4"},    {"stream", "main"}})
    p.set(k, v);
  return p;
}

TEST(Params, EveryAnalysisReadsOnlyTheKeysItDeclares) {
  for (const trace::Trace& trace : {cpu_model_trace(), gpu_model_trace()}) {
    trace::SpanTree tree = trace::build_span_tree(trace);
    for (const analysis::Params& params : {analysis::Params(), every_key()}) {
      for (const auto& a : analysis::all_analyses()) {
        params.clear_keys_read();
        a->run({trace, tree, params});
        auto declared = analysis::analysis_param_keys(a->name());
        std::set<std::string_view> allowed(declared.begin(), declared.end());
        for (const std::string& key : params.keys_read())
          EXPECT_TRUE(allowed.count(key)) << a->name() << " reads --param " << key
                                          << " without declaring it (registry.cc, param_key_table)";
      }
    }
  }
}

std::vector<const analysis::Analysis*> chosen(std::initializer_list<const char*> names) {
  std::vector<const analysis::Analysis*> out;
  for (const char* n : names) out.push_back(analysis::find_analysis(n));
  return out;
}

TEST(Params, AKeyNoChosenAnalysisReadsIsRefusedWithOneLine) {
  analysis::Params typo;
  typo.set("tpo", "5");
  auto check = analysis::check_param_keys(typo, chosen({"model_table", "op_stats"}));
  ASSERT_TRUE(check.error.has_value());
  EXPECT_NE(check.error->find("--param tpo is not a parameter of the chosen analyses (model_table, op_stats)"),
            std::string::npos)
      << *check.error;
  EXPECT_NE(check.error->find("top"), std::string::npos) << *check.error;  // the keys they do read
  EXPECT_EQ(check.error->find('\n'), std::string::npos);

  analysis::Params stages;
  stages.set("stages", "4");
  check = analysis::check_param_keys(stages, chosen({"model_table"}));
  ASSERT_TRUE(check.error.has_value());
  EXPECT_NE(check.error->find("read only by stages"), std::string::npos) << *check.error;
  EXPECT_NE(check.error->find("add --analysis stages"), std::string::npos) << *check.error;

  analysis::Params top;
  top.set("top", "3");
  check = analysis::check_param_keys(top, chosen({"model_table", "op_stats", "stages"}));
  EXPECT_FALSE(check.error.has_value());
  ASSERT_EQ(check.notes.size(), 1u);
  EXPECT_EQ(check.notes[0], "--param top does not apply to model_table, stages");
}

TEST(Params, EveryAnalysisDeclaringTopHonorsIt) {
  for (const trace::Trace& trace : {cpu_model_trace(), gpu_model_trace()}) {
    for (const auto& a : analysis::all_analyses()) {
      auto keys = analysis::analysis_param_keys(a->name());
      if (std::find(keys.begin(), keys.end(), "top") == keys.end()) continue;
      auto all = run_analysis(trace, a->name(), {{"top", "0"}, {"peak_gflops", "100"}, {"peak_gbps", "10"}});
      if (all.result.missing_input) continue;
      auto one = run_analysis(trace, a->name(), {{"top", "1"}, {"peak_gflops", "100"}, {"peak_gbps", "10"}});
      ASSERT_FALSE(one.result.missing_input.has_value()) << a->name();
      for (size_t i = 0; i < one.result.tables.size(); ++i) {
        EXPECT_EQ(one.table(i).rows.size(), std::min<size_t>(1, all.table(i).rows.size())) << a->name();
        if (all.table(i).rows.size() > 1) {
          EXPECT_NE(one.table(i).notes.size(), all.table(i).notes.size()) << a->name() << ": says rows were cut";
        }
      }
    }
  }
}

TEST(Params, TopKeepsTheLargestRowsInExecutionOrder) {
  // Batch 4, trim 0.2: conv1 3 s, relu1 s, conv2 3 s, add s, fc 2 s (s = 1 ms).
  trace::Trace trace = cpu_model_trace();
  auto run = run_analysis(trace, "layer_sequence", {{"trim", "0.2"}, {"top", "3"}});
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_DOUBLE_EQ(num(t, 0, "index"), 0);  // conv1
  EXPECT_DOUBLE_EQ(num(t, 1, "index"), 2);  // conv2
  EXPECT_DOUBLE_EQ(num(t, 2, "index"), 4);  // fc
}

}  // namespace
}  // namespace strata::testing
