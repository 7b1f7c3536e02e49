// The analyzer's what-if tables with known answers: low precision (bounds per data type vs f32) and
// the fused post-ops the oneDNN tracer records, in the bound's notation.
#include "lowerbound/bounds/estimate.h"

#include <gtest/gtest.h>

#include "core/level.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/analyses/framework_inefficiency.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {
namespace {

LayerModel chain_net() {
  LayerModel m;
  std::string error;
  EXPECT_TRUE(
      load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/chain_net.onnx", &m, &error))
      << error;
  return m;
}

size_t column(const table::Table& t, const std::string& name) {
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == name) return c;
  ADD_FAILURE() << name;
  return 0;
}

// chain_net: conv, relu, conv, relu, pool, (flatten: free), gemm. f32 rows cost 100 ns per layer;
// bf16 rows half; f16 has no conv rows (missing) and the precision is then not comparable.
TEST(Analyzer, PrecisionTableBoundsPerDataType) {
  LayerModel m = chain_net();
  LatencyIndex index;
  size_t costed = 0;
  for (const Layer& l : m.layers) {
    if (plan_layer(l, "cpu", "f32", "nchw").cost == LayerCost::kFree) continue;
    ++costed;
    index.add(BenchRecord{"s", "cpu", "f32", "nchw", l.signature(), "direct", "", "", 100, 0, 1, 1, ""});
    index.add(BenchRecord{"s", "cpu", "bf16", "nchw", l.signature(), "direct", "", "", 50, 0, 1, 1, ""});
    if (l.op_type != "Conv")
      index.add(BenchRecord{"s", "cpu", "f16", "nchw", l.signature(), "direct", "", "", 40, 0, 1, 1, ""});
  }
  ASSERT_EQ(costed, 6u);
  table::Table t = precision_table(m, index, "nchw", {"f32", "bf16", "f16"});
  EXPECT_EQ(t.name, "precision");
  ASSERT_EQ(t.rows.size(), 3u);
  auto real = [&](size_t row, const char* name) {
    return std::get<double>(t.rows[row][column(t, name)].value);
  };
  auto integer = [&](size_t row, const char* name) {
    return std::get<int64_t>(t.rows[row][column(t, name)].value);
  };
  EXPECT_EQ(std::get<std::string>(t.rows[0][0].value), "f32");
  EXPECT_DOUBLE_EQ(real(0, "sequential_ms"), 600e-6);  // 6 layers x 100 ns
  EXPECT_DOUBLE_EQ(real(0, "parallel_ms"), 600e-6);    // a chain
  EXPECT_DOUBLE_EQ(real(0, "speedup_vs_f32"), 1.0);
  EXPECT_EQ(integer(1, "measured_layers"), 6);
  EXPECT_DOUBLE_EQ(real(1, "sequential_ms"), 300e-6);
  EXPECT_DOUBLE_EQ(real(1, "speedup_vs_f32"), 2.0);
  EXPECT_EQ(integer(2, "missing_or_unsupported"), 2);  // the two convs
  EXPECT_DOUBLE_EQ(real(2, "sequential_ms"), 160e-6);
  EXPECT_TRUE(std::holds_alternative<std::monostate>(t.rows[2][column(t, "speedup_vs_f32")].value))
      << "a data type with missing layers has no comparable speedup";
}

// What the oneDNN tracer records for fused convolutions (oneDNN's verbose post-ops), in the notation
// of FusionChain::post_ops, so `--fusion` compares like with like.
TEST(Analyzer, OneDnnPostOpsInTheBoundsNotation) {
  trace::Trace trace;
  trace.add_process(trace::Process{});
  auto conv = [&](const std::string& attrs) {
    SpanRecord r;
    r.span_id = trace.spans.size() + 1;
    r.start_ns = 0;
    r.end_ns = 10;
    r.level = static_cast<uint8_t>(Level::kLibrary);
    r.name = trace.strings.intern("onednn::convolution");
    std::vector<AttrRecord> a = {trace.string_attr("attrs", attrs)};
    r.attr_count = 1;
    return parse_call(trace, trace.add_span(r, a)).post_ops;
  };
  EXPECT_EQ(conv("attr-scratchpad:user attr-post-ops:eltwise_relu "), "relu");
  EXPECT_EQ(conv("attr-post-ops:sum+eltwise_relu "), "sum+relu");
  EXPECT_EQ(conv("attr-post-ops:eltwise_clip:0:6 "), "clip");
  EXPECT_EQ(conv("attr-post-ops:eltwise_clip_v2:0:6 "), "clip");
  EXPECT_EQ(conv("attr-post-ops:eltwise_relu:0.01 "), "leaky_relu");
  EXPECT_EQ(conv("attr-post-ops:sum:0.5+eltwise_logistic "), "sum+logistic");
  EXPECT_EQ(conv("attr-post-ops:'sum;eltwise_relu;' "), "sum+relu");  // oneDNN 1.x notation
  EXPECT_EQ(conv("attr-scratchpad:user "), "none");
}

}  // namespace
}  // namespace strata::lowerbound
