// Model processor: real exported ONNX models (tests/lowerbound/data, made by export_models.py),
// malformed input, unique layers.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/ir/onnx_loader.h"
#include "lowerbound/ir/unique_layers.h"

namespace strata::lowerbound {
namespace {

std::string data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" + name;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// Node count straight from the protobuf, independent of the layer IR.
int proto_node_count(const std::string& path) {
  onnx::ModelProto proto;
  std::string bytes = read_bytes(path);
  EXPECT_TRUE(proto.ParseFromString(bytes));
  return proto.graph().node_size();
}

TEST(ModelProcessor, LayerCountsMatchOnnxNodeCounts) {
  for (const char* name : {"chain_net.onnx", "branch_net.onnx", "resnet18.onnx"}) {
    LayerModel m;
    std::string error;
    ASSERT_TRUE(load_onnx_file(data(name), &m, &error)) << error;
    EXPECT_EQ(static_cast<int>(m.layers.size()), proto_node_count(data(name))) << name;
    EXPECT_EQ(m.opset, 13);
    EXPECT_EQ(m.unknown_shapes, 0u) << name;
  }
}

TEST(ModelProcessor, Resnet18ShapesComeFromShapeInference) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("resnet18.onnx"), &m, &error)) << error;
  EXPECT_EQ(m.name, "resnet18");
  const Layer* first_conv = nullptr;
  int convs = 0;
  for (const Layer& l : m.layers)
    if (l.op_type == "Conv") {
      if (!first_conv) first_conv = &l;
      ++convs;
    }
  EXPECT_EQ(convs, 20);  // 1 stem + 16 in the blocks + 3 downsample
  ASSERT_NE(first_conv, nullptr);
  EXPECT_EQ(first_conv->input_shapes.at(0), (Shape{1, 3, 224, 224}));
  EXPECT_EQ(first_conv->weight_shapes.at(0), (Shape{64, 3, 7, 7}));
  EXPECT_EQ(first_conv->output_shapes.at(0), (Shape{1, 64, 112, 112}));
  EXPECT_EQ(first_conv->attributes.at("strides"), "[2,2]");
  EXPECT_EQ(m.layers.back().op_type, "Gemm");
  EXPECT_EQ(m.layers.back().output_shapes.at(0), (Shape{1, 1000}));
}

TEST(ModelProcessor, BranchNetEdges) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("branch_net.onnx"), &m, &error)) << error;
  ASSERT_EQ(m.layers.size(), 6u);
  // stem -> relu -> {a1, b1 -> b2} -> concat
  EXPECT_TRUE(m.layers[0].preds.empty());
  EXPECT_EQ(m.layers[1].preds, (std::vector<uint32_t>{0}));
  EXPECT_EQ(m.layers[1].succs, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(m.layers[4].preds, (std::vector<uint32_t>{3}));
  EXPECT_EQ(m.layers[5].preds, (std::vector<uint32_t>{2, 4}));
}

TEST(ModelProcessor, MalformedInputGivesOneLineErrorNamingTheFile) {
  testing::TempDir dir;
  LayerModel m;
  std::string error;
  EXPECT_FALSE(load_onnx_file(dir.file("missing.onnx"), &m, &error));
  EXPECT_NE(error.find("missing.onnx: cannot open"), std::string::npos) << error;

  std::string bytes = read_bytes(data("resnet18.onnx"));
  for (size_t cut : {size_t{1}, size_t{100}, bytes.size() / 2, bytes.size() - 3}) {
    error.clear();
    LayerModel t;
    EXPECT_FALSE(load_onnx_bytes(std::string_view(bytes).substr(0, cut), "cut.onnx", &t, &error)) << cut;
    EXPECT_EQ(error.rfind("cut.onnx: ", 0), 0u) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << error;
  }
  error.clear();
  EXPECT_FALSE(load_onnx_bytes("this is not a protobuf at all", "text.onnx", &m, &error));
  EXPECT_EQ(error.rfind("text.onnx: ", 0), 0u) << error;
}

onnx::ModelProto tiny_model() {
  onnx::ModelProto proto;
  proto.set_ir_version(7);
  proto.add_opset_import()->set_version(13);
  onnx::GraphProto* g = proto.mutable_graph();
  auto* in = g->add_input();
  in->set_name("x");
  auto* tt = in->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int d : {1, 4}) tt->mutable_shape()->add_dim()->set_dim_value(d);
  auto* relu = g->add_node();
  relu->set_op_type("Relu");
  relu->add_input("x");
  relu->add_output("y");
  g->add_output()->set_name("y");
  return proto;
}

TEST(ModelProcessor, UnsupportedAndInconsistentGraphsAreRejected) {
  LayerModel m;
  std::string error;
  onnx::ModelProto ok = tiny_model();
  ASSERT_TRUE(load_onnx_bytes(ok.SerializeAsString(), "ok.onnx", &m, &error)) << error;
  EXPECT_EQ(m.layers.at(0).output_shapes.at(0), (Shape{1, 4}));

  onnx::ModelProto dangling = tiny_model();
  dangling.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  LayerModel m2;
  EXPECT_FALSE(load_onnx_bytes(dangling.SerializeAsString(), "dangling.onnx", &m2, &error));
  EXPECT_NE(error.find("'nowhere'"), std::string::npos) << error;

  onnx::ModelProto custom = tiny_model();
  custom.mutable_graph()->mutable_node(0)->set_domain("com.example");
  LayerModel m3;
  EXPECT_FALSE(load_onnx_bytes(custom.SerializeAsString(), "custom.onnx", &m3, &error));
  EXPECT_NE(error.find("com.example"), std::string::npos) << error;

  // Found by the fuzzer: libonnx's shape inference divides by a zero stride/kernel and crashes on
  // Scan with a malformed body; both are rejected before inference.
  onnx::ModelProto zero_kernel = tiny_model();
  auto* pool = zero_kernel.mutable_graph()->mutable_node(0);
  pool->set_op_type("MaxPool");
  auto* kernel = pool->add_attribute();
  kernel->set_name("kernel_shape");
  kernel->set_type(onnx::AttributeProto::INTS);
  kernel->add_ints(0);
  LayerModel m5;
  EXPECT_FALSE(load_onnx_bytes(zero_kernel.SerializeAsString(), "zero.onnx", &m5, &error));
  EXPECT_NE(error.find("'kernel_shape' must hold integers >= 1"), std::string::npos) << error;
  onnx::ModelProto scan = tiny_model();
  scan.mutable_graph()->mutable_node(0)->set_op_type("Scan");
  scan.mutable_graph()->mutable_node(0)->set_name("bad\nname");
  LayerModel m6;
  EXPECT_FALSE(load_onnx_bytes(scan.SerializeAsString(), "scan.onnx", &m6, &error));
  EXPECT_NE(error.find("control-flow operator Scan"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;  // the newline in the name is escaped

  onnx::ModelProto empty = tiny_model();
  empty.mutable_graph()->clear_node();
  LayerModel m4;
  EXPECT_FALSE(load_onnx_bytes(empty.SerializeAsString(), "empty.onnx", &m4, &error));
  EXPECT_NE(error.find("no graph nodes"), std::string::npos) << error;
}

TEST(UniqueLayers, WithinAndAcrossModels) {
  std::vector<LayerModel> models(3);
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("branch_net.onnx"), &models[0], &error)) << error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &models[1], &error)) << error;
  ASSERT_TRUE(load_onnx_file(data("branch_net.onnx"), &models[2], &error)) << error;
  UniqueLayerSet set;
  for (const LayerModel& m : models) set.add_model(m);
  const auto& stats = set.per_model();
  // branch_net: a1 and b1 are the same 1x1 conv (names differ, weights ignored).
  EXPECT_EQ(stats[0].layers, 6u);
  EXPECT_EQ(stats[0].unique, 5u);
  EXPECT_EQ(models[0].layers[2].signature(), models[0].layers[3].signature());
  EXPECT_NE(models[0].layers[3].signature(), models[0].layers[4].signature());
  // chain_net shares its 3->8 stem conv, the 8->8 3x3 conv and the 1x8x16x16 Relu with branch_net;
  // its two Relus are one unique layer.
  EXPECT_EQ(stats[1].unique, 6u);
  EXPECT_EQ(stats[1].new_unique, 3u);
  EXPECT_EQ(stats[1].shared, 3u);
  // The same model again adds nothing new.
  EXPECT_EQ(stats[2].new_unique, 0u);
  EXPECT_EQ(set.layers().size(), 8u);
  EXPECT_EQ(set.total_layers(), 19u);
}

TEST(BenchPlan, ConvExpandsToEveryAlgorithmAndMetadataOpsAreFree) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  LayerPlan conv = plan_layer(m.layers[0], "cpu", "f32", "nhwc");
  ASSERT_EQ(conv.cost, LayerCost::kBenchmarked);
  ASSERT_EQ(conv.cases.size(), 3u);
  EXPECT_EQ(conv.cases[1].algorithm, "winograd");
  EXPECT_EQ(conv.cases[0].pads_begin, (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(conv.cases[0].bias);
  EXPECT_EQ(conv.cases[0].layout, "nhwc");
  EXPECT_EQ(plan_layer(m.layers[0], "cuda", "f16", "nchw").cases.size(), 8u);
  bool saw_flatten = false;
  for (const Layer& l : m.layers)
    if (l.op_type == "Flatten") {
      saw_flatten = true;
      EXPECT_EQ(plan_layer(l, "cpu", "f32", "nchw").cost, LayerCost::kFree);
    }
  EXPECT_TRUE(saw_flatten);
  const Layer& fc = m.layers.back();
  ASSERT_EQ(fc.op_type, "Gemm");
  LayerPlan ip = plan_layer(fc, "cpu", "f32", "nchw");
  ASSERT_EQ(ip.cases.size(), 1u);
  EXPECT_EQ(ip.cases[0].weights, (std::vector<int64_t>{10, 8}));  // O x I
  std::optional<FusionChain> chain = fusion_chain(m, 0);
  ASSERT_TRUE(chain.has_value());
  EXPECT_EQ(chain->post_ops, "relu");
  EXPECT_EQ(chain->absorbed, (std::vector<uint32_t>{1}));
}

}  // namespace
}  // namespace strata::lowerbound
