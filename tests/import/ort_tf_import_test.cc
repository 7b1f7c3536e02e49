#include <gtest/gtest.h>

#include "import/importer.h"
#include "import_test_util.h"
#include "trace/span_tree.h"

namespace strata::import {
namespace {

using strata::testing::source_path;

int find_span(const trace::Trace& t, std::string_view name, uint8_t level) {
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == name && t.spans[i].level == level) return static_cast<int>(i);
  return -1;
}
constexpr uint8_t kLayer = static_cast<uint8_t>(Level::kLayer);
constexpr uint8_t kModel = static_cast<uint8_t>(Level::kModel);
constexpr uint8_t kDevice = static_cast<uint8_t>(Level::kDevice);

TEST(OnnxRuntimeImport, NodesBecomeLayersUnderTheRun) {
  trace::Trace t;
  std::string error;
  ImportStats stats;
  ASSERT_TRUE(
      import_trace_with_stats(source_path("tests/import/data/ort_profile.json"), &t, &error, {}, &stats))
      << error;
  EXPECT_EQ(strata::testing::imported_format(t), "onnxruntime");
  EXPECT_EQ(stats.get(stats::Stat::kImportEventsRead), 13u);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_EQ(t.processes[0].pid, 4242);
  EXPECT_EQ(strata::testing::drops_of(t.processes[0]).at("import.fence_marker"),
            6u);  // 3 nodes x before/after
  int conv = find_span(t, "Conv_0", kLayer), gemm = find_span(t, "Gemm_2", kLayer);
  int run = find_span(t, "model_run", kModel), exec = find_span(t, "SequentialExecutor::Execute", kModel);
  ASSERT_GE(conv, 0);
  ASSERT_GE(gemm, 0);
  ASSERT_GE(run, 0);
  ASSERT_GE(exec, 0);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(conv, "op_name")), "Conv");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(conv, "provider")), "CPUExecutionProvider");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(conv, "output_type_shape")), "[{\"float\":[1,64,112,112]}]");
  EXPECT_EQ(t.spans[conv].start_ns, 9002000);
  EXPECT_EQ(t.spans[conv].duration_ns(), 420000);
  trace::SpanTree tree = trace::build_span_tree(t);
  EXPECT_EQ(tree.parent(conv), exec);
  EXPECT_EQ(tree.parent(exec), run);
}

TEST(TensorFlowImport, TimelineOpsStreamsAndSkippedTracks) {
  trace::Trace t;
  std::string error;
  ImportStats stats;
  ASSERT_TRUE(
      import_trace_with_stats(source_path("tests/import/data/tf_timeline.json"), &t, &error, {}, &stats))
      << error;
  EXPECT_EQ(strata::testing::imported_format(t), "tensorflow");
  ASSERT_EQ(t.processes.size(), 1u);
  const auto drops = strata::testing::drops_of(t.processes[0]);
  EXPECT_EQ(drops.at("import.stream_all_duplicate"), 2u);
  EXPECT_EQ(drops.at("import.tensor_object_event"), 3u);
  EXPECT_EQ(drops.at("import.dataflow_event"), 2u);
  EXPECT_EQ(drops.count("import.counter_event"), 0u);  // allocator counters are imported now
  EXPECT_EQ(stats.get(stats::Stat::kImportCounterEvents), 1u);
  EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));
  int bfc = find_span(t, "GPU_0_bfc", static_cast<uint8_t>(Level::kApplication));
  ASSERT_GE(bfc, 0);
  EXPECT_EQ(t.spans[bfc].kind, static_cast<uint8_t>(SpanKind::kCounter));
  EXPECT_EQ(t.spans[bfc].start_ns, 1550000000000150000);
  EXPECT_DOUBLE_EQ(t.find_attr(bfc, "value")->value.d, 1024);
  int host_matmul = find_span(t, "dense/MatMul", kLayer), gpu_bias = find_span(t, "dense/BiasAdd", kDevice);
  ASSERT_GE(host_matmul, 0);
  ASSERT_GE(gpu_bias, 0);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(host_matmul, "op_type")), "MatMul");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(host_matmul, "tf.device")), "0");
  EXPECT_EQ(t.spans[gpu_bias].stream, 14u);
  EXPECT_EQ(t.spans[gpu_bias].device, 0);
  EXPECT_EQ(t.spans[gpu_bias].kind, static_cast<uint8_t>(SpanKind::kExecution));
  EXPECT_EQ(t.spans[gpu_bias].start_ns, 1550000000000195500);
  EXPECT_EQ(t.spans[gpu_bias].duration_ns(), 4250);
  size_t layers = 0;
  for (const SpanRecord& s : t.spans) layers += s.level == kLayer;
  EXPECT_EQ(layers, 3u);  // _SOURCE, MatMul, BiasAdd: once each, not per duplicate track
}

TEST(TensorFlowImport, ProfilerTraceKernelsFindTheirOpAcrossThreads) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import_trace(source_path("tests/import/data/tf2_trace.json"), &t, &error)) << error;
  int matmul = find_span(t, "sequential/dense/MatMul:MatMul", kLayer);
  int sgemm = find_span(t, "volta_sgemm_32x32_sliced1x4_nn", kDevice);
  ASSERT_GE(matmul, 0);
  ASSERT_GE(sgemm, 0);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(matmul, "op_type")), "MatMul");
  EXPECT_EQ(t.spans[sgemm].stream, 7u);
  EXPECT_EQ(t.spans[sgemm].start_ns, 1100125);
  trace::SpanTree tree = trace::build_span_tree(t);
  EXPECT_EQ(tree.parent(sgemm), matmul);  // no correlation ids in TF traces: containment across threads
  EXPECT_TRUE(tree.reconstructed(sgemm));
  EXPECT_FALSE(tree.ambiguous(sgemm));
}

}  // namespace
}  // namespace strata::import
