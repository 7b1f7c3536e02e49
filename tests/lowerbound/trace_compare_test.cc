// Framework run vs lower bound on a trace built in the test: layer spans as the PyTorch tracer
// writes them (aten ops, nested ops, a module attribute), library spans with the oneDNN "impl".
#include "lowerbound/analyses/trace_compare.h"

#include <gtest/gtest.h>

#include "core/level.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {
namespace {

std::string data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" + name;
}

struct TraceBuilder {
  trace::Trace trace;
  uint64_t next_id = 1;
  TraceBuilder() { trace.add_process(trace::Process{}); }
  size_t span(const std::string& name, Level level, int64_t start, int64_t end,
              std::vector<std::pair<std::string, std::string>> attrs = {}) {
    SpanRecord r;
    r.span_id = next_id++;
    r.start_ns = start;
    r.end_ns = end;
    r.level = static_cast<uint8_t>(level);
    r.tid = 7;
    r.name = trace.strings.intern(name);
    std::vector<AttrRecord> a;
    for (auto& [k, v] : attrs) a.push_back(trace.string_attr(k, v));
    r.attr_count = static_cast<uint16_t>(a.size());
    return trace.add_span(r, a);
  }
  // chain_net as PyTorch runs it, starting at t; BatchNorm is an extra op the ONNX graph lacks.
  void iteration(int64_t t, bool with_model_span) {
    if (with_model_span) span("predict", Level::kModel, t, t + 1000);
    span("aten::conv2d", Level::kLayer, t + 10, t + 110, {{"module", "conv1"}});
    span("aten::_convolution", Level::kLayer, t + 20, t + 100);  // nested: same layer
    span("onednn::convolution", Level::kLibrary, t + 30, t + 90, {{"impl", "gemm:jit"}});
    span("aten::relu_", Level::kLayer, t + 120, t + 140);
    span("aten::batch_norm", Level::kLayer, t + 150, t + 200);
    span("aten::conv2d", Level::kLayer, t + 210, t + 410, {{"module", "conv2"}});
    span("aten::relu_", Level::kLayer, t + 420, t + 440);
    span("aten::adaptive_avg_pool2d", Level::kLayer, t + 450, t + 500);
    span("aten::flatten", Level::kLayer, t + 510, t + 515);
    span("aten::linear", Level::kLayer, t + 520, t + 600);
  }
};

// `index` must outlive the estimate: ModelEstimate::best points into it.
ModelEstimate estimate_with(const LayerModel& m, double conv_ns, LatencyIndex& index) {
  for (const Layer& l : m.layers) {
    if (l.op_type == "Flatten") continue;
    index.add(BenchRecord{"s", "cpu", "f32", "nchw", l.signature(), "direct", "", "brgconv",
                          l.op_type == "Conv" ? conv_ns : 10.0, 0, 3, 1, ""});
  }
  return estimate_model(m, index, "f32", "nchw", false);
}

TEST(TraceCompare, FrameworkOpNames) {
  EXPECT_EQ(onnx_op_for_framework_op("aten::conv2d"), "Conv");
  EXPECT_EQ(onnx_op_for_framework_op("aten::relu_"), "Relu");
  EXPECT_EQ(onnx_op_for_framework_op("aten::hardtanh_"), "Clip");
  EXPECT_EQ(onnx_op_for_framework_op("aten::linear"), "Gemm");
  EXPECT_EQ(onnx_op_for_framework_op("aten::frobnicate"), "");
}

TEST(TraceCompare, MatchesLayersInTheLastModelSpan) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  TraceBuilder b;
  b.iteration(0, true);
  b.iteration(5000, true);  // steady state: the one analysed
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  EXPECT_DOUBLE_EQ(cmp.end_to_end_ns, 1000);
  EXPECT_EQ(cmp.iterations_seen, 2u);
  // conv, relu, conv, relu, pool, gemm matched; flatten is free in the model; batch_norm is extra.
  EXPECT_EQ(cmp.matches.size(), 6u);
  EXPECT_EQ(cmp.unmatched_layers, 0u);
  EXPECT_EQ(cmp.extra_ops, 1u);  // batch_norm (folded into the conv by the ONNX export); flatten is a view
  ASSERT_EQ(cmp.extra_by_name.size(), 1u);
  EXPECT_EQ(cmp.extra_by_name[0].first, "aten::batch_norm");
  ASSERT_FALSE(cmp.matches.empty());
  EXPECT_EQ(b.trace.spans[cmp.matches[0].span].start_ns, 5010);
  EXPECT_DOUBLE_EQ(cmp.matches[0].measured_ns, 100);
  EXPECT_DOUBLE_EQ(cmp.matches[0].library_ns, 60);
  EXPECT_EQ(cmp.matches[0].library_impl, "gemm:jit");
  EXPECT_EQ(cmp.matches[0].module, "conv1");

  LatencyIndex index;
  ModelEstimate e = estimate_with(m, 50, index);
  auto tables = comparison_tables(m, e, cmp, 3);
  ASSERT_EQ(tables.size(), 7u);  // + parameter_deviations, extra_calls, framework_inefficiency
  EXPECT_EQ(tables[0].name, "framework_vs_bound");
  // Largest gap: conv2 (200 measured - 50 bound).
  ASSERT_FALSE(tables[1].rows.empty());
  EXPECT_EQ(std::get<std::string>(tables[1].rows[0][2].value), "Conv");
  EXPECT_DOUBLE_EQ(std::get<double>(tables[1].rows[0][6].value), 0.15);  // us
  // Algorithm selection: conv1's library time 60 ns vs best 50 ns.
  ASSERT_GE(tables[2].rows.size(), 1u);
  EXPECT_EQ(std::get<std::string>(tables[2].rows[0][1].value), "gemm:jit");
}

// A framework that reorders the weights at every call (PyTorch 1.13 with oneDNN) spends time around the
// convolution that no algorithm choice removes: the algorithm-selection table keeps it apart.
TEST(TraceCompare, AlgorithmSelectionSeparatesReordersFromThePrimitive) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  TraceBuilder b;
  b.span("predict", Level::kModel, 0, 1000);
  b.span("aten::conv2d", Level::kLayer, 10, 300);
  b.span("onednn::reorder", Level::kLibrary, 20, 140, {{"impl", "jit:uni"}});  // 120 ns, longer than the conv
  b.span("onednn::convolution", Level::kLibrary, 150, 250, {{"impl", "brgconv:avx512_core"}});  // 100 ns
  b.span("aten::relu_", Level::kLayer, 310, 320);
  b.span("aten::conv2d", Level::kLayer, 330, 500);
  b.span("onednn::convolution", Level::kLibrary, 340, 490, {{"impl", "jit:avx512_core"}});  // 150 ns
  b.span("aten::relu_", Level::kLayer, 510, 520);
  b.span("aten::adaptive_avg_pool2d", Level::kLayer, 530, 540);
  b.span("aten::linear", Level::kLayer, 550, 600);
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  ASSERT_GE(cmp.matches.size(), 3u);
  EXPECT_DOUBLE_EQ(cmp.matches[0].library_ns, 220);               // every library span, reorder included
  EXPECT_EQ(cmp.matches[0].library_impl, "brgconv:avx512_core");  // the convolution's, not the reorder's

  LatencyIndex index;
  ModelEstimate e = estimate_with(m, 50, index);  // each conv's best: 50 ns
  std::vector<table::Table> tables = comparison_tables(m, e, cmp, 5);
  const table::Table& algo = tables[2];
  ASSERT_EQ(algo.name, "algorithm_selection");
  ASSERT_EQ(algo.rows.size(), 3u);  // two convs + TOTAL
  auto col = [&](const std::string& name) {
    for (size_t c = 0; c < algo.columns.size(); ++c)
      if (algo.columns[c] == name) return c;
    ADD_FAILURE() << name;
    return size_t{0};
  };
  auto real = [&](size_t row, const std::string& name) {
    return std::get<double>(algo.rows[row][col(name)].value);
  };
  EXPECT_EQ(std::get<std::string>(algo.rows[0][col("framework_impl")].value), "brgconv:avx512_core");
  EXPECT_DOUBLE_EQ(real(0, "framework_primitive_us"), 0.1);
  EXPECT_DOUBLE_EQ(real(0, "conversions_us"), 0.12);
  EXPECT_DOUBLE_EQ(real(0, "potential_speedup"), 2.0);         // 100 / 50: the algorithm alone
  EXPECT_DOUBLE_EQ(real(0, "speedup_with_conversions"), 4.4);  // (100 + 120) / 50
  EXPECT_DOUBLE_EQ(real(1, "conversions_us"), 0);
  EXPECT_DOUBLE_EQ(real(1, "potential_speedup"), 3.0);  // 150 / 50
  EXPECT_EQ(std::get<std::string>(algo.rows[2][0].value), "TOTAL");
  EXPECT_DOUBLE_EQ(real(2, "framework_primitive_us"), 0.25);
  EXPECT_DOUBLE_EQ(real(2, "conversions_us"), 0.12);
  EXPECT_DOUBLE_EQ(real(2, "best_us"), 0.1);
  EXPECT_DOUBLE_EQ(real(2, "potential_speedup"), 2.5);         // 250 / 100
  EXPECT_DOUBLE_EQ(real(2, "speedup_with_conversions"), 3.7);  // 370 / 100
  ASSERT_FALSE(algo.notes.empty());
  EXPECT_NE(algo.notes[0].find("the 2 listed Conv/Gemm/MatMul layers only"), std::string::npos)
      << algo.notes[0];
}

// Without model-level spans the workload view has one evaluation per process: the whole run is
// compared, and the comparison says so (no third guess at "which spans form one iteration").
TEST(TraceCompare, WithoutModelSpansTheWholeRunIsOneIterationAndSaysSo) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  TraceBuilder b;
  b.iteration(0, false);
  b.iteration(5000, false);
  b.iteration(9000, false);
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  EXPECT_EQ(cmp.iterations_seen, 1u);
  EXPECT_EQ(cmp.matches.size(), 6u);
  EXPECT_EQ(b.trace.spans[cmp.matches[0].span].start_ns, 10);
  EXPECT_DOUBLE_EQ(cmp.end_to_end_ns, 9600 - 10);
  bool said = false;
  for (const std::string& w : cmp.warnings)
    said = said || w.find("no model-level spans") != std::string::npos;
  EXPECT_TRUE(said);
}

// Steps marked by an importer (Kineto's ProfilerStep#N: model spans with a "step" attribute) are the
// evaluations; a model span around them only groups them.
TEST(TraceCompare, ComparesTheLastMarkedStep) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  TraceBuilder b;
  b.span("benchmark", Level::kModel, -10, 20000);
  for (int64_t t : {0, 5000, 10000}) {
    b.span("ProfilerStep#" + std::to_string(t / 5000), Level::kModel, t, t + 1000, {{"step", "1"}});
    b.iteration(t, false);
  }
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  EXPECT_EQ(cmp.iterations_seen, 3u);
  EXPECT_DOUBLE_EQ(cmp.end_to_end_ns, 1000);
  ASSERT_EQ(cmp.matches.size(), 6u);
  EXPECT_EQ(b.trace.spans[cmp.matches[0].span].start_ns, 10010);
}

TEST(TraceCompare, TraceWithoutLayerSpansIsAClearError) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  TraceBuilder b;
  b.span("predict", Level::kModel, 0, 100);
  TraceComparison cmp;
  EXPECT_FALSE(compare_with_trace(m, b.trace, &cmp, &error));
  EXPECT_NE(error.find("--level layer"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::lowerbound
