// The CUDA benchmark backend where the CUDA toolkit is installed; a GPU is optional. cuda_ops.h's
// geometry (what each cuDNN/cuBLAS call is given) is checked on its own; prepare, the plugin, the CLI
// and the generated standalone benchmarks run for real: without a GPU every one must fail with a
// clear reason, with a GPU the cases must run and time.
#include "lowerbound/harness/cuda_ops.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <string>
#include <vector>

#include "../test_util.h"
#include "lowerbound/harness/backend.h"
#include "lowerbound/harness/codegen.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {
namespace {

using cuda::BinaryGeometry;
using cuda::CopyRegion;
using cuda::GemmGeometry;

bool have_gpu() {
  int devices = 0;
  return cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0;
}

using strata::testing::run_command;

BenchCase make(const std::string& op, const std::string& algorithm, std::vector<std::vector<int64_t>> src,
               std::vector<int64_t> dst) {
  BenchCase c;
  c.op = op;
  c.algorithm = algorithm;
  c.dtype = "f32";
  c.layout = "nchw";
  c.src = std::move(src);
  c.dst = std::move(dst);
  return c;
}

BenchCase conv_case() {
  BenchCase c = make("conv", "implicit_gemm", {{1, 8, 8, 8}}, {1, 16, 8, 8});
  c.weights = {16, 8, 3, 3};
  c.strides = {1, 1};
  c.dilations = {1, 1};
  c.pads_begin = c.pads_end = {1, 1};
  c.bias = true;
  return c;
}

BenchCase pool_case(std::vector<int64_t> pads_begin, std::vector<int64_t> pads_end, int64_t out) {
  BenchCase c = make("pool", "max", {{1, 8, 7, 7}}, {1, 8, out, out});
  c.kernel = {2, 2};
  c.strides = {2, 2};
  c.pads_begin = std::move(pads_begin);
  c.pads_end = std::move(pads_end);
  return c;
}

// One case per op the CUDA backend runs.
std::vector<BenchCase> every_op() {
  BenchCase fused = conv_case();
  fused.post_op = "relu";
  BenchCase residual_relu = conv_case();  // resnet's conv + add + relu: z is the residual
  residual_relu.post_op = "sum+relu";
  BenchCase residual = conv_case();  // mobilenet_v2's conv + add: identity activation
  residual.post_op = "sum";
  residual.algorithm = "implicit_precomp_gemm";
  BenchCase gemm = make("inner_product", "gemm_ex", {{4, 32}}, {4, 16});
  gemm.weights = {16, 32};
  gemm.bias = true;
  BenchCase lt = gemm;
  lt.algorithm = "lt_heuristic_0";
  BenchCase matmul = make("matmul", "lt_heuristic_0", {{2, 4, 8}, {2, 8, 16}}, {2, 4, 16});
  BenchCase batched = matmul;
  batched.algorithm = "gemm_ex";
  BenchCase leaky = make("eltwise", "leaky_relu", {{2, 8, 6, 6}}, {2, 8, 6, 6});
  leaky.alpha = 0.01;
  BenchCase clip = make("eltwise", "clip", {{2, 8, 6, 6}}, {2, 8, 6, 6});
  clip.beta = 6;
  BenchCase softmax = make("softmax", "default", {{2, 10}}, {2, 10});
  softmax.axis = 1;
  BenchCase concat = make("concat", "default", {{1, 4, 5, 5}, {1, 6, 5, 5}}, {1, 10, 5, 5});
  concat.axis = 1;
  BenchCase lrn = make("lrn", "default", {{1, 8, 6, 6}}, {1, 8, 6, 6});
  lrn.kernel = {5};
  lrn.alpha = 1e-4;
  lrn.beta = 0.75;
  BenchCase sub = make("binary", "sub", {{1, 8, 1, 1}, {2, 8, 6, 6}}, {2, 8, 6, 6});
  BenchCase half = make("eltwise", "tanh", {{2, 8, 6, 6}}, {2, 8, 6, 6});
  half.dtype = "f16";
  half.layout = "nhwc";
  return {conv_case(),
          fused,
          residual_relu,
          residual,
          gemm,
          lt,
          matmul,
          batched,
          pool_case({0, 0}, {1, 1}, 4),
          make("eltwise", "relu", {{2, 8, 6, 6}}, {2, 8, 6, 6}),
          leaky,
          clip,
          half,
          make("batch_norm", "default", {{2, 8, 6, 6}}, {2, 8, 6, 6}),
          make("batch_norm", "default", {{2, 8}}, {2, 8}),
          softmax,
          make("binary", "add", {{2, 8, 6, 6}, {2, 8, 6, 6}}, {2, 8, 6, 6}),
          make("binary", "mul", {{2, 8, 6, 6}, {1, 8, 1, 1}}, {2, 8, 6, 6}),
          sub,
          concat,
          lrn};
}

TEST(CudaGeometry, TensorDimsPadToFourAndStopAtFive) {
  EXPECT_EQ(cuda::cudnn_dims({2, 8}), (std::vector<int>{2, 8, 1, 1}));
  EXPECT_EQ(cuda::cudnn_dims({2, 8, 5}), (std::vector<int>{2, 8, 5, 1}));
  EXPECT_EQ(cuda::cudnn_dims({1, 2, 3, 4, 5}), (std::vector<int>{1, 2, 3, 4, 5}));
  EXPECT_TRUE(cuda::cudnn_dims({1, 2, 3, 4, 5, 6}).empty());
  EXPECT_TRUE(cuda::cudnn_dims({}).empty());
  EXPECT_TRUE(cuda::cudnn_dims({int64_t{1} << 31}).empty());
  EXPECT_EQ(cuda::lt_heuristic_index("lt_heuristic_0"), 0);
  EXPECT_EQ(cuda::lt_heuristic_index("lt_heuristic_12"), 12);
  EXPECT_EQ(cuda::lt_heuristic_index("lt_heuristic_"), -1);
  EXPECT_EQ(cuda::lt_heuristic_index("lt_heuristic_1x"), -1);
  EXPECT_EQ(cuda::lt_heuristic_index("gemm_ex"), -1);
}

TEST(CudaGeometry, GemmIsTheColumnMajorTransposedProduct) {
  std::string why;
  GemmGeometry g;
  BenchCase linear = every_op()[4];  // X[4,32] * W[16,32]^T + b
  ASSERT_EQ(linear.op, "inner_product");
  ASSERT_TRUE(cuda::gemm_geometry(linear, &g, &why)) << why;
  EXPECT_EQ(g.m, 4);
  EXPECT_EQ(g.n, 16);
  EXPECT_EQ(g.k, 32);
  EXPECT_TRUE(g.transpose_w);  // weights O x I: op(A) = T, A stored K x N
  EXPECT_EQ(g.lda, 32);
  EXPECT_EQ(g.ldb, 32);
  EXPECT_EQ(g.ldd, 16);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.y_elements, 64);

  GemmGeometry b;
  BenchCase batched = make("matmul", "gemm_ex", {{3, 2, 4, 8}, {3, 2, 8, 16}}, {3, 2, 4, 16});
  ASSERT_TRUE(cuda::gemm_geometry(batched, &b, &why)) << why;
  EXPECT_FALSE(b.transpose_w);
  EXPECT_EQ(b.lda, 16);
  EXPECT_EQ(b.batch, 6);
  EXPECT_EQ(b.stride_x, 32);
  EXPECT_EQ(b.stride_w, 128);
  EXPECT_EQ(b.stride_y, 64);
  EXPECT_EQ(b.x_elements, 6 * 32);

  // A weight shared by every batch entry: stride 0, one copy allocated.
  GemmGeometry shared;
  batched.src[1] = {1, 1, 8, 16};
  ASSERT_TRUE(cuda::gemm_geometry(batched, &shared, &why)) << why;
  EXPECT_EQ(shared.stride_w, 0);
  EXPECT_EQ(shared.w_elements, 128);

  GemmGeometry bad;
  batched.src[1] = {3, 1, 8, 16};  // broadcast over one batch dimension only
  EXPECT_FALSE(cuda::gemm_geometry(batched, &bad, &why));
  EXPECT_NE(why.find("strided-batched"), std::string::npos) << why;
  batched.src[1] = {3, 2, 9, 16};
  EXPECT_FALSE(cuda::gemm_geometry(batched, &bad, &why));
  EXPECT_NE(why.find("do not chain"), std::string::npos) << why;
}

TEST(CudaGeometry, PoolPaddingMapsCeilModeToSymmetricPadding) {
  std::vector<int> pad;
  std::string why;
  // 7 -> 4 with window 2, stride 2 (ceil_mode): cuDNN pad 1 on both sides gives the same windows.
  ASSERT_TRUE(cuda::pool_padding(pool_case({0, 0}, {1, 1}, 4), &pad, &why)) << why;
  EXPECT_EQ(pad, (std::vector<int>{1, 1}));
  // Floor mode: no padding.
  ASSERT_TRUE(cuda::pool_padding(pool_case({0, 0}, {0, 0}, 3), &pad, &why)) << why;
  EXPECT_EQ(pad, (std::vector<int>{0, 0}));
  // No symmetric padding gives 5 outputs.
  EXPECT_FALSE(cuda::pool_padding(pool_case({0, 0}, {3, 3}, 5), &pad, &why));
  EXPECT_NE(why.find("no symmetric cuDNN equivalent"), std::string::npos) << why;
  BenchCase pool3d = make("pool", "max", {{1, 8, 4, 4, 4}}, {1, 8, 2, 2, 2});
  pool3d.kernel = pool3d.strides = {2, 2, 2};
  pool3d.pads_begin = pool3d.pads_end = {0, 0, 0};
  EXPECT_FALSE(cuda::pool_padding(pool3d, &pad, &why));
  EXPECT_NE(why.find("2-D pooling only"), std::string::npos) << why;
}

TEST(CudaGeometry, BinaryPutsTheFullOperandFirst) {
  std::string why;
  BinaryGeometry g;
  ASSERT_TRUE(
      cuda::binary_geometry(make("binary", "mul", {{2, 8, 6, 6}, {1, 8, 1, 1}}, {2, 8, 6, 6}), &g, &why));
  EXPECT_EQ(g.a, 0);
  EXPECT_EQ(g.op, CUDNN_OP_TENSOR_MUL);
  // src0 - src1 with src0 broadcast: C = -1 * src1 + 1 * src0.
  ASSERT_TRUE(
      cuda::binary_geometry(make("binary", "sub", {{1, 8, 1, 1}, {2, 8, 6, 6}}, {2, 8, 6, 6}), &g, &why));
  EXPECT_EQ(g.a, 1);
  EXPECT_EQ(g.b, 0);
  EXPECT_EQ(g.op, CUDNN_OP_TENSOR_ADD);
  EXPECT_EQ(g.alpha1, -1.f);
  EXPECT_EQ(g.alpha2, 1.f);
  BinaryGeometry plain;
  ASSERT_TRUE(
      cuda::binary_geometry(make("binary", "sub", {{2, 8, 6, 6}, {2, 8, 6, 6}}, {2, 8, 6, 6}), &plain, &why));
  EXPECT_EQ(plain.alpha1, 1.f);
  EXPECT_EQ(plain.alpha2, -1.f);
  EXPECT_FALSE(cuda::binary_geometry(make("binary", "div", {{2, 8}, {2, 8}}, {2, 8}), &g, &why));
  EXPECT_NE(why.find("no division"), std::string::npos) << why;
  EXPECT_FALSE(cuda::binary_geometry(make("binary", "add", {{2, 1}, {1, 8}}, {2, 8}), &g, &why));
  EXPECT_NE(why.find("both are broadcast"), std::string::npos) << why;
}

TEST(CudaGeometry, SoftmaxOverOneAxisIsChannelMode) {
  std::vector<int> dims;
  std::string why;
  BenchCase c = make("softmax", "default", {{2, 3, 4, 5}}, {2, 3, 4, 5});
  c.axis = 2;
  ASSERT_TRUE(cuda::softmax_dims(c, &dims, &why)) << why;
  EXPECT_EQ(dims, (std::vector<int>{6, 4, 5, 1}));
  c.axis = 3;
  ASSERT_TRUE(cuda::softmax_dims(c, &dims, &why)) << why;
  EXPECT_EQ(dims, (std::vector<int>{24, 5, 1, 1}));
  c.axis = 4;
  EXPECT_FALSE(cuda::softmax_dims(c, &dims, &why));
}

TEST(CudaGeometry, ConcatCopiesFollowTheMemoryLayout) {
  std::vector<CopyRegion> copies;
  std::string why;
  BenchCase c = make("concat", "default", {{2, 4, 5, 5}, {2, 6, 5, 5}}, {2, 10, 5, 5});
  c.axis = 1;
  // NCHW, channels: per image, 4*25 then 6*25 contiguous floats.
  ASSERT_TRUE(cuda::concat_copies(c, 4, &copies, &why)) << why;
  ASSERT_EQ(copies.size(), 2u);
  EXPECT_EQ(copies[0].height, 2u);
  EXPECT_EQ(copies[0].width, 400u);
  EXPECT_EQ(copies[0].dst_pitch, 1000u);
  EXPECT_EQ(copies[1].dst_offset, 400u);
  EXPECT_EQ(copies[1].width, 600u);
  EXPECT_EQ(copies[1].src_pitch, 600u);
  // NHWC, channels: per pixel, 4 then 6 halves.
  c.layout = "nhwc";
  ASSERT_TRUE(cuda::concat_copies(c, 2, &copies, &why)) << why;
  EXPECT_EQ(copies[0].height, 50u);
  EXPECT_EQ(copies[0].width, 8u);
  EXPECT_EQ(copies[0].dst_pitch, 20u);
  EXPECT_EQ(copies[1].dst_offset, 8u);
  // Batch axis: one block each.
  BenchCase n = make("concat", "default", {{1, 3, 2, 2}, {2, 3, 2, 2}}, {3, 3, 2, 2});
  n.axis = 0;
  ASSERT_TRUE(cuda::concat_copies(n, 4, &copies, &why)) << why;
  EXPECT_EQ(copies[0].height, 1u);
  EXPECT_EQ(copies[1].dst_offset, 48u);
  n.dst = {4, 3, 2, 2};
  EXPECT_FALSE(cuda::concat_copies(n, 4, &copies, &why));
  EXPECT_NE(why.find("add up"), std::string::npos) << why;
}

TEST(CudaOps, SupportedNamesWhatTheLibraryCannotDo) {
  for (const BenchCase& c : every_op()) {
    std::string why;
    EXPECT_TRUE(cuda::supported(c, &why)) << c.op << "/" << c.algorithm << ": " << why;
  }
  BenchCase asymmetric = conv_case();
  asymmetric.pads_end = {2, 2};
  BenchCase bf16 = conv_case();
  bf16.dtype = "bf16";
  BenchCase steep = every_op()[10];
  ASSERT_EQ(steep.algorithm, "leaky_relu");
  steep.alpha = 2;
  BenchCase clip = every_op()[11];
  ASSERT_EQ(clip.algorithm, "clip");
  clip.alpha = -1;
  BenchCase fused_clip = conv_case();  // mobilenet_v2's conv + ReLU6: not in cuDNN's fused call
  fused_clip.post_op = "clip";
  BenchCase identity_other_algorithm = conv_case();
  identity_other_algorithm.post_op = "sum";
  identity_other_algorithm.algorithm = "gemm";
  BenchCase lrn = every_op().back();
  lrn.kernel = {17};
  const std::vector<std::pair<BenchCase, std::string>> unsupported = {
      {asymmetric, "asymmetric"},
      {bf16, "bf16 is not benchmarked on the CUDA backend"},
      {steep, "slope outside [0, 1]"},
      {clip, "minimum is not 0"},
      {fused_clip, "fuses a residual (z) and ReLU only, not post-ops 'clip'"},
      {identity_other_algorithm, "only with IMPLICIT_PRECOMP_GEMM"},
      {lrn, "LRN size 17"},
      {make("binary", "div", {{2, 8}, {2, 8}}, {2, 8}), "no division"},
      {make("eltwise", "relu", {{1, 2, 3, 4, 5, 6}}, {1, 2, 3, 4, 5, 6}), "1 to 5 dimensions"},
      {make("gelu", "default", {{2, 8}}, {2, 8}), "no CUDA benchmark"},
  };
  for (const auto& [c, expected] : unsupported) {
    std::string why;
    EXPECT_FALSE(cuda::supported(c, &why)) << expected;
    EXPECT_NE(why.find(expected), std::string::npos) << why;
    // prepare gives the same reason first, GPU or not.
    cuda::Prepared p;
    std::string prepare_why;
    EXPECT_FALSE(cuda::prepare(c, &p, &prepare_why));
    EXPECT_EQ(prepare_why, why);
  }
}

TEST(CudaOps, EveryOpRunsOnAGpuOrFailsCleanlyWithout) {
  const bool gpu = have_gpu();
  for (const BenchCase& c : every_op()) {
    SCOPED_TRACE(c.op + "/" + c.algorithm + "/" + c.dtype);
    cuda::Prepared p;
    std::string why;
    bool ok = cuda::prepare(c, &p, &why);
    if (!gpu) {
      EXPECT_FALSE(ok);
      EXPECT_NE(why.find("no CUDA device?"), std::string::npos) << why;
      continue;
    }
    ASSERT_TRUE(ok) << why;
    EXPECT_FALSE(p.implementation.empty());
    std::vector<double> per_call;
    ASSERT_TRUE(cuda::time_launches(&p, 3, 5, &per_call, &why)) << why;
    ASSERT_EQ(per_call.size(), 3u);
    EXPECT_GT(per_call[0], 0);
  }
}

TEST(CudaPlugin, ReportsNoDeviceOrMeasures) {
  // The plugin is found next to the test binary's lib/ directory, as `strata` finds it.
  ASSERT_TRUE(cuda_backend_compiled());
  std::string why;
  std::string key = cuda_system_key(&why);
  Measurement m;
  std::string implementation;
  BenchCase relu = every_op()[9];
  ASSERT_EQ(relu.algorithm, "relu");
  bool measured = cuda_measure_case(relu, MeasureOptions{3, 100'000, 50}, &m, &implementation, &why);
  if (!have_gpu()) {
    EXPECT_TRUE(key.empty());
    EXPECT_NE(why.find("no CUDA device on this machine (cudaGetDeviceCount: "), std::string::npos) << why;
    EXPECT_FALSE(measured);
    EXPECT_NE(why.find("no CUDA device on this machine"), std::string::npos) << why;
    return;
  }
  EXPECT_EQ(key.rfind("gpu=", 0), 0u) << key;
  ASSERT_TRUE(measured) << why;
  EXPECT_GT(m.median_ns, 0);
  EXPECT_EQ(implementation, "cudnnActivationForward(relu)");
}

TEST(CudaPlugin, CommandLinePrintsOneClearErrorLine) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present: `bench run --backend cuda` would benchmark";
  testing::TempDir dir;
  const std::string strata = std::string(STRATA_BINARY_DIR) + "/bin/strata";
  const std::string args = " bench run " + std::string(STRATA_SOURCE_DIR) +
                           "/tests/lowerbound/data/chain_net.onnx --backend cuda --db " +
                           dir.file("perf.sqlite");
  std::string out;
  EXPECT_EQ(run_command(strata + args, &out), 1) << out;
  EXPECT_EQ(out.rfind("strata bench: no CUDA device on this machine", 0), 0u) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  EXPECT_EQ(run_command("STRATA_LOWERBOUND_CUDA_PLUGIN=/nonexistent/plugin.so " + strata + args, &out), 1)
      << out;
  EXPECT_NE(out.find("cannot load the CUDA backend /nonexistent/plugin.so"), std::string::npos) << out;
}

// The generated standalone sources build with the generated CMakeLists (warnings as errors, cuDNN's
// deprecation warnings on) and run: without a GPU each benchmark reports why it cannot run.
TEST(CudaCodegen, GeneratedSourcesBuildAndRun) {
  std::vector<LayerModel> models(2);
  std::string error;
  for (size_t i = 0; i < 2; ++i)
    ASSERT_TRUE(load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" +
                                   (i ? "branch_net.onnx" : "chain_net.onnx"),
                               &models[i], &error))
        << error;
  testing::TempDir dir;
  BenchOptions options;
  options.backend = "cuda";
  options.dtypes = {"f32", "f16"};
  options.layouts = {"nchw", "nhwc"};
  options.fusion = true;
  GenerateStats stats;
  ASSERT_TRUE(generate_benchmarks(models, options, dir.path(), &stats, &error)) << error;
  ASSERT_GT(stats.benchmarks, 0u);
  std::string out;
  const std::string configure = "cmake -S " + dir.path() + " -B " + dir.file("build") +
                                " -G Ninja -DCMAKE_CXX_COMPILER=" STRATA_CXX_COMPILER
                                " -DCUDAToolkit_ROOT=" STRATA_CUDA_TOOLKIT_ROOT
                                " '-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror -DCUDNN_WARN_DEPRECATED'";
  ASSERT_EQ(run_command(configure, &out), 0) << out;
  ASSERT_EQ(run_command("ninja -C " + dir.file("build"), &out), 0) << out;
  // One benchmark is enough to see the runtime path (all share cuda_ops.h).
  ASSERT_EQ(
      run_command(dir.file("build/layer_benchmarks") + " --benchmark_filter=/eltwise/relu/f32/nchw", &out), 0)
      << out;
  if (!have_gpu()) {
    EXPECT_NE(out.find("no CUDA device?"), std::string::npos) << out;
  }
}

}  // namespace
}  // namespace strata::lowerbound
