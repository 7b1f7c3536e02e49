// The CUDA backend's bench plan and generated sources, without CUDA: every layer kind the CPU backend
// benchmarks maps to cuDNN/cuBLAS cases with the right parameters, and `bench generate --backend cuda`
// writes them. (tests/lowerbound/cuda_ops_test.cc covers the calls themselves where CUDA is installed.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "../test_util.h"
#include "lowerbound/harness/bench_runner.h"
#include "lowerbound/harness/codegen.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {
namespace {

std::string data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" + name;
}

Layer layer(const std::string& op, std::vector<Shape> inputs, Shape output, std::vector<Shape> weights = {},
            std::map<std::string, std::string> attributes = {}) {
  Layer l;
  l.name = op + "_0";
  l.op_type = op;
  for (size_t i = 0; i < inputs.size(); ++i) l.inputs.push_back("x" + std::to_string(i));
  l.input_shapes = std::move(inputs);
  l.outputs = {"y"};
  l.output_shapes = {std::move(output)};
  l.weight_shapes = std::move(weights);
  l.attributes = std::move(attributes);
  return l;
}

// One layer of every kind the CPU backend benchmarks (bench_plan.cc), with the CUDA call expected.
struct Kind {
  Layer layer;
  std::string op;            // BenchCase::op
  std::string library_call;  // LayerPlan::library_call on cuda
  size_t cases;              // on cuda
};

std::vector<Kind> every_kind() {
  const Shape act = {2, 8, 6, 6};
  return {
      {layer("Conv", {{1, 3, 8, 8}}, {1, 4, 8, 8}, {{4, 3, 3, 3}, {4}}, {{"pads", "[1,1,1,1]"}}), "conv",
       "cudnnConvolutionForward+cudnnAddTensor", 8},
      {layer("Conv", {{1, 3, 8, 8}}, {1, 4, 6, 6}, {{4, 3, 3, 3}}), "conv", "cudnnConvolutionForward", 8},
      {layer("Gemm", {{2, 16}}, {2, 10}, {{10, 16}, {10}}, {{"transB", "1"}}), "inner_product",
       "cublasGemmEx / cublasLtMatmul", 9},
      {layer("MatMul", {{3, 4, 5}, {3, 5, 6}}, {3, 4, 6}), "matmul", "cublasGemmEx / cublasLtMatmul", 9},
      {layer("MaxPool", {act}, {2, 8, 3, 3}, {}, {{"kernel_shape", "[2,2]"}, {"strides", "[2,2]"}}), "pool",
       "cudnnPoolingForward", 1},
      {layer("AveragePool", {act}, {2, 8, 3, 3}, {}, {{"kernel_shape", "[2,2]"}, {"strides", "[2,2]"}}),
       "pool", "cudnnPoolingForward", 1},
      {layer("GlobalAveragePool", {act}, {2, 8, 1, 1}), "pool", "cudnnPoolingForward", 1},
      {layer("GlobalMaxPool", {act}, {2, 8, 1, 1}), "pool", "cudnnPoolingForward", 1},
      {layer("Relu", {act}, act), "eltwise", "cudnnActivationForward", 1},
      {layer("Sigmoid", {act}, act), "eltwise", "cudnnActivationForward", 1},
      {layer("Tanh", {act}, act), "eltwise", "cudnnActivationForward", 1},
      {layer("Clip", {act}, act), "eltwise", "cudnnActivationForward", 1},
      {layer("Elu", {act}, act), "eltwise", "cudnnActivationForward", 1},
      {layer("LeakyRelu", {act}, act), "eltwise", "cudnnOpTensor", 1},
      {layer("BatchNormalization", {act}, act, {{8}, {8}, {8}, {8}}), "batch_norm",
       "cudnnBatchNormalizationForwardInference", 1},
      {layer("Softmax", {{2, 10}}, {2, 10}), "softmax", "cudnnSoftmaxForward", 1},
      {layer("Add", {act, act}, act), "binary", "cudnnOpTensor", 1},
      {layer("Mul", {act, {8, 1, 1}}, act), "binary", "cudnnOpTensor", 1},
      {layer("Sub", {act, act}, act), "binary", "cudnnOpTensor", 1},
      {layer("Div", {act, act}, act), "binary", "cudnnOpTensor", 1},
      {layer("Concat", {act, {2, 4, 6, 6}}, {2, 12, 6, 6}, {}, {{"axis", "1"}}), "concat",
       "cudaMemcpy2DAsync (concat)", 1},
      {layer("LRN", {act}, act, {}, {{"size", "5"}}), "lrn", "cudnnLRNCrossChannelForward", 1},
  };
}

TEST(CudaBenchPlan, EveryCpuLayerKindHasCudaCases) {
  std::set<std::string> cpu_ops;
  for (const Kind& k : every_kind()) {
    SCOPED_TRACE(k.layer.op_type);
    LayerPlan cpu = plan_layer(k.layer, "cpu", "f32", "nchw");
    ASSERT_EQ(cpu.cost, LayerCost::kBenchmarked) << cpu.why;
    cpu_ops.insert(cpu.cases[0].op);
    for (const char* dtype : {"f32", "f16"})
      for (const char* layout : {"nchw", "nhwc"}) {
        LayerPlan cuda = plan_layer(k.layer, "cuda", dtype, layout);
        ASSERT_EQ(cuda.cost, LayerCost::kBenchmarked) << cuda.why;
        EXPECT_EQ(cuda.library_call, k.library_call);
        ASSERT_EQ(cuda.cases.size(), k.cases);
        for (const BenchCase& c : cuda.cases) {
          EXPECT_EQ(c.op, k.op);
          EXPECT_EQ(c.dtype, dtype);
          EXPECT_EQ(c.signature, k.layer.signature());
        }
        // Parameters other than the algorithm are the CPU case's: both backends time the same layer.
        const BenchCase& cpu_case = cpu.cases[0];
        const BenchCase& cuda_case = cuda.cases[0];
        EXPECT_EQ(cpu_case.src, cuda_case.src);
        EXPECT_EQ(cpu_case.dst, cuda_case.dst);
        EXPECT_EQ(cpu_case.weights, cuda_case.weights);
        EXPECT_EQ(cpu_case.pads_end, cuda_case.pads_end);
        EXPECT_EQ(cpu_case.axis, cuda_case.axis);
      }
  }
  // The list above covers every op the CPU backend has (onednn_ops.h).
  EXPECT_EQ(cpu_ops, (std::set<std::string>{"conv", "inner_product", "matmul", "pool", "eltwise",
                                            "batch_norm", "softmax", "binary", "concat", "lrn"}));
}

TEST(CudaBenchPlan, CaseParameters) {
  std::vector<Kind> kinds = every_kind();
  auto plan = [&](size_t i, const char* layout = "nchw") {
    return plan_layer(kinds[i].layer, "cuda", "f16", layout);
  };
  // Conv: the 8 cudnnConvolutionFwdAlgo_t values, symmetric pads, bias flag.
  LayerPlan conv = plan(0);
  EXPECT_EQ(conv.cases[0].algorithm, "implicit_gemm");
  EXPECT_EQ(conv.cases[7].algorithm, "winograd_nonfused");
  EXPECT_EQ(conv.cases[0].pads_begin, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(conv.cases[0].pads_end, (std::vector<int64_t>{1, 1}));
  EXPECT_TRUE(conv.cases[0].bias);
  EXPECT_FALSE(plan(1).cases[0].bias);
  LayerPlan fused = plan_layer(kinds[0].layer, "cuda", "f32", "nhwc", "relu");
  EXPECT_EQ(fused.library_call, "cudnnConvolutionBiasActivationForward");
  EXPECT_EQ(fused.cases[3].post_op, "relu");
  EXPECT_EQ(fused.cases[3].signature, fused_signature(kinds[0].layer, "relu"));
  // GEMM: cublasGemmEx, then the first 8 cuBLASLt heuristic results; weights O x I; always nchw.
  LayerPlan gemm = plan(2, "nhwc");
  EXPECT_EQ(gemm.cases[0].algorithm, "gemm_ex");
  for (size_t i = 1; i < gemm.cases.size(); ++i)
    EXPECT_EQ(gemm.cases[i].algorithm, "lt_heuristic_" + std::to_string(i - 1));
  EXPECT_EQ(gemm.cases[0].weights, (std::vector<int64_t>{10, 16}));
  EXPECT_TRUE(gemm.cases[0].bias);
  EXPECT_EQ(gemm.cases[0].layout, "nchw");
  Layer gemm_nt = kinds[2].layer;  // B stored K x N (transB = 0): the same O x I case
  gemm_nt.attributes["transB"] = "0";
  gemm_nt.weight_shapes[0] = {16, 10};
  EXPECT_EQ(plan_layer(gemm_nt, "cuda", "f32", "nchw").cases[5].weights, (std::vector<int64_t>{10, 16}));
  LayerPlan matmul = plan(3);
  EXPECT_EQ(matmul.cases[8].algorithm, "lt_heuristic_7");
  EXPECT_EQ(matmul.cases[0].src, (std::vector<Shape>{{3, 4, 5}, {3, 5, 6}}));
  // Pooling: algorithm from the operator; global pooling's window is the whole plane.
  EXPECT_EQ(plan(4).cases[0].algorithm, "max");
  EXPECT_EQ(plan(5).cases[0].algorithm, "avg_exclude");
  EXPECT_EQ(plan(6).cases[0].kernel, (std::vector<int64_t>{6, 6}));
  // ceil_mode: the extra end padding the plan adds is what cuda::pool_padding maps to cuDNN.
  Layer ceil = layer("MaxPool", {{1, 8, 7, 7}}, {1, 8, 4, 4}, {},
                     {{"kernel_shape", "[2,2]"}, {"strides", "[2,2]"}, {"ceil_mode", "1"}});
  LayerPlan ceil_plan = plan_layer(ceil, "cuda", "f32", "nchw");
  EXPECT_EQ(ceil_plan.cases[0].pads_begin, (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(ceil_plan.cases[0].pads_end, (std::vector<int64_t>{1, 1}));
  // Activations and their parameters.
  EXPECT_EQ(plan(9).cases[0].algorithm, "logistic");
  EXPECT_EQ(plan(11).cases[0].beta, 6);
  EXPECT_EQ(plan(12).cases[0].alpha, 1);
  EXPECT_EQ(plan(13).cases[0].algorithm, "leaky_relu");
  EXPECT_DOUBLE_EQ(plan(13).cases[0].alpha, 0.01);
  // Batch norm: the activation only (statistics are per channel, set up by the call).
  EXPECT_EQ(plan(14).cases[0].src.size(), 1u);
  // Softmax: a negative axis is normalized.
  EXPECT_EQ(plan(15).cases[0].axis, 1);
  EXPECT_EQ(plan(15).cases[0].layout, "nchw");
  // Binary: algorithm per operator; a lower-rank operand is left-padded to the output's rank.
  EXPECT_EQ(plan(16).cases[0].algorithm, "add");
  EXPECT_EQ(plan(17).cases[0].src[1], (Shape{1, 8, 1, 1}));
  EXPECT_EQ(plan(18).cases[0].algorithm, "sub");
  EXPECT_EQ(plan(19).cases[0].algorithm, "div");  // planned; cuda::supported says why it cannot run
  // Concat and LRN.
  EXPECT_EQ(plan(20, "nhwc").cases[0].axis, 1);
  EXPECT_EQ(plan(20, "nhwc").cases[0].src.size(), 2u);
  EXPECT_EQ(plan(21).cases[0].kernel, (std::vector<int64_t>{5}));
}

// The CUDA plan never refuses a layer the CPU plan accepts (the analyzer plans with the CPU mapping:
// a layer refused only on CUDA would look missing instead of unsupported), nor accepts one it refuses.
TEST(CudaBenchPlan, MirrorsTheCpuPlanOnRealModels) {
  for (const char* name : {"chain_net.onnx", "branch_net.onnx", "resnet18.onnx"}) {
    LayerModel m;
    std::string error;
    ASSERT_TRUE(load_onnx_file(data(name), &m, &error)) << error;
    for (const Layer& l : m.layers) {
      LayerPlan cpu = plan_layer(l, "cpu", "f32", "nchw");
      LayerPlan cuda = plan_layer(l, "cuda", "f16", "nhwc");
      EXPECT_EQ(cuda.cost, cpu.cost) << name << " " << l.name << ": " << cuda.why;
      if (cuda.cost == LayerCost::kBenchmarked) {
        EXPECT_FALSE(cuda.cases.empty());
        EXPECT_EQ(cuda.cases[0].op, cpu.cases[0].op) << l.name;
      }
    }
  }
}

TEST(CudaCodegen, GeneratesEveryCaseWithTheCudaHeaders) {
  std::vector<LayerModel> models(1);
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("resnet18.onnx"), &models[0], &error)) << error;
  testing::TempDir dir;
  BenchOptions options;
  options.backend = "cuda";
  options.dtypes = {"f32", "f16"};
  options.layouts = {"nchw", "nhwc"};
  options.fusion = true;
  GenerateStats stats;
  ASSERT_TRUE(generate_benchmarks(models, options, dir.path(), &stats, &error)) << error;
  EXPECT_EQ(stats.unmapped, 0u);
  size_t expected = 0;
  std::map<std::string, size_t> per_op;
  for (const WorkItem& item : enumerate_work(models, options)) {
    LayerPlan plan = plan_layer(*item.layer, "cuda", item.dtype, item.layout, item.post_ops);
    expected += plan.cases.size();
    for (const BenchCase& c : plan.cases) ++per_op[c.op];
  }
  EXPECT_EQ(stats.benchmarks, expected);
  // resnet18: convolutions, Relu, MaxPool, Add (residuals), GlobalAveragePool, Gemm.
  for (const char* op : {"conv", "eltwise", "pool", "binary", "inner_product"})
    EXPECT_GT(per_op[op], 0u) << op;
  std::string source = testing::read_file(dir.file("benchmarks.cc"));
  EXPECT_EQ(stats.files.size(), 8u);  // bench_case.h, five cuda_*.h, benchmarks.cc, CMakeLists.txt
  EXPECT_NE(source.find("#include \"cuda_ops.h\""), std::string::npos);
  for (const auto& [op, n] : per_op) {
    size_t found = 0;
    for (size_t p = source.find(".op = \"" + op + "\""); p != std::string::npos;
         p = source.find(".op = \"" + op + "\"", p + 1))
      ++found;
    EXPECT_EQ(found, n) << op;
  }
  EXPECT_NE(source.find(".algorithm = \"lt_heuristic_7\""), std::string::npos);
  EXPECT_NE(source.find("->UseManualTime()"), std::string::npos);
  EXPECT_NE(source.find("prepared.launch()"), std::string::npos);
  // The headers are copies of the ones `strata bench run --backend cuda` is built from.
  for (const char* header :
       {"bench_case.h", "cuda_geometry.h", "cuda_prepared.h", "cuda_gemm.h", "cuda_cudnn.h", "cuda_ops.h"})
    EXPECT_EQ(testing::read_file(dir.file(header)),
              testing::read_file(std::string(STRATA_SOURCE_DIR) + "/src/lowerbound/harness/" + header))
        << header;
  std::string cmake = testing::read_file(dir.file("CMakeLists.txt"));
  EXPECT_NE(cmake.find("CUDA::cublasLt"), std::string::npos);
  EXPECT_NE(cmake.find("find_library(CUDNN_LIBRARY cudnn"), std::string::npos);
}

}  // namespace
}  // namespace strata::lowerbound
