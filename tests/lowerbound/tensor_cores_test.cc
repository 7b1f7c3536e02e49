// Tensor-core kernels recognised by name: hand-made names of each family (and SIMT look-alikes), the
// kernel names of the real Kineto traces in the repository, and per-layer attribution on the real
// A100 trace of torchvision's alexnet (tests/data/kineto/a100_alexnet_train.json.gz).
#include "lowerbound/analyses/tensor_cores.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>

#include "core/level.h"
#include "import/importer.h"
#include "lowerbound/ir/onnx_loader.h"
#include "lowerbound/analyses/trace_compare.h"

namespace strata::lowerbound {
namespace {

std::string source(const std::string& path) { return std::string(STRATA_SOURCE_DIR) + "/" + path; }

TEST(TensorCores, RecognisesTensorCoreKernelFamiliesByName) {
  const std::map<std::string, std::string> tensor_core = {
      // cuBLAS / cuDNN MMA tiles (Volta h884/s884, Turing h1688/s1688/i8816, Ampere h16816/s16816).
      {"volta_h884gemm_64x64_ldg8_nn", "h884"},
      {"volta_fp16_s884gemm_fp16_128x128_ldg8_f2f_nn", "s884"},
      {"volta_s884cudnn_fp16_256x128_ldg8_relu_exp_small_nhwc_tn_v1", "s884"},
      {"turing_h1688gemm_128x128_ldg8_tn", "h1688"},
      {"turing_fp16_s1688gemm_fp16_256x128_ldg8_f2f_tn", "s1688"},
      {"turing_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1", "i8816"},
      {"ampere_h16816gemm_256x128_ldg8_stages_32x3_nn", "h16816"},
      {"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", "s16816"},
      {"cudnn_ampere_h1688cudnn_256x128_ldg8_relu_exp_interior_nhwc_tn_v1", "h1688"},
      // MMA instruction names, CUTLASS tensorop, XMMA with tensor-core types or an MMA shape.
      {"volta_fp16_hmma_gemm", "hmma"},
      {"sm75_xmma_fprop_implicit_gemm_int8_imma", "imma"},
      {"void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x5_tn_align4>(Params)", "tensorop"},
      {"cutlass_tensorop_f16_s16816gemm_f16_256x128_32x3_nn_align8", "tensorop"},
      {"cutlass3x_sm90_tensorop_gemm_f16_f16_f32_void_f16_128x256x64_2x1x1_0_tnn_align8", "tensorop"},
      {"sm80_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1", "xmma f16"},
      {"sm80_xmma_fprop_implicit_gemm_indexed_tf32f32_tf32f32_f32_nhwckrsc_nchw_tilesize128x128x16_stage4_"
       "warpsize2x2x1_g1_tensor16x8x8",
       "tensor16x8x8"},
      {"sm80_xmma_wgrad_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize64x64x32", "xmma bf16"},
      // Hopper: warpgroup MMA, cuBLAS's nvjet kernels.
      {"sm90_xmma_gemm_f16f16_f16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_execute_segment_k_off_"
       "kernel__5x_cublas_gmma",
       "gmma"},
      {"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3_64x64x64_4x1x1", "wgmma"},
      {"nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", "nvjet"},
      // FP64 tensor cores (A100), AMD matrix cores (Tensile MFMA instruction in the name).
      {"sm80_xmma_gemm_f64f64_f64f64_f64_nt_n_tilesize64x64x16_dmma", "dmma"},
      {"Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0_AFC1", "mfma mi16x16x1"},
  };
  for (const auto& [name, marker] : tensor_core) EXPECT_EQ(tensor_core_marker(name), marker) << name;

  // SIMT kernels, including ones from tensor-core families and names with look-alike numbers.
  for (const char* name :
       {"ampere_sgemm_32x32_sliced1x4_tn", "volta_sgemm_64x64_nt", "ampere_gcgemm_64x64_nt",
        "cudnn_ampere_scudnn_128x64_relu_xregs_large_nn_v1",
        "cudnn_infer_volta_scudnn_winograd_128x128_ldg1_ldg4",
        "void fft2d_r2c_32x32<float, false, 5u, true>(float2*, float const*, int)",
        "cutlass_80_simt_sgemm_128x128_8x4_nn_align1",
        "sm80_xmma_fprop_implicit_gemm_f32f32_f32f32_f32_nchwkcrs_nchw_tilesize32x32x8_stage3_warpsize1x2x1_"
        "g1_"
        "ffma_aligna4_alignc4",
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize64x64x8",
        "void cudnn::ops::nchwToNhwcKernel<float, float>",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float> >",
        "Memcpy HtoD (Pageable -> Device)", "kernel_1688_v2", "x884y", "ampere_s16816x", ""})
    EXPECT_EQ(tensor_core_marker(name), "") << name;
}

// Every kernel of the repository's real Kineto traces (tests/data/kineto): the tensor-core names are
// exactly the MMA families truly in them (XMMA tf32 in the A100 alexnet run, Tensile MFMA in the
// MI250 run; the V100 fp32 training run has none: volta_sgemm, scudnn, winograd).
TEST(TensorCores, RealTraceKernelNames) {
  const std::map<std::string, std::set<std::string>> expected_markers = {
      {"a100_alexnet_train.json.gz", {"tensor16x8x8"}},
      {"v100_train_rank0.json.gz", {}},
      {"mi250_train.json.gz", {"mfma mi16x16x1"}},
  };
  for (const auto& [file, markers] : expected_markers) {
    const std::string path = source("tests/data/kineto/" + file);
    trace::Trace trace;
    std::string error;
    ASSERT_TRUE(import::import_trace(path, &trace, &error)) << error;
    std::set<std::string> seen;
    uint64_t kernels = 0;
    for (const SpanRecord& s : trace.spans) {
      if (s.level != static_cast<uint8_t>(Level::kDevice) ||
          s.kind != static_cast<uint8_t>(SpanKind::kExecution))
        continue;
      ++kernels;
      std::string name(trace.name(s));
      std::string marker = tensor_core_marker(name);
      if (marker.empty()) continue;
      seen.insert(marker);
      // Every name called a tensor-core kernel carries its family in full.
      EXPECT_TRUE(name.find("tensor16x8x8") != std::string::npos ||
                  name.find("_MI16x16x1_") != std::string::npos)
          << file << ": " << name;
    }
    EXPECT_GT(kernels, 0u) << file;
    EXPECT_EQ(seen, markers) << file;
  }
}

// torchvision alexnet's forward pass on an A100 (PyTorch, cuDNN, fp32 with TF32 allowed): the three
// 3x3 convolutions run XMMA tf32 kernels (tensor16x8x8) after two nchwToNhwc conversions each; the
// 11x11 and 5x5 ones scudnn and FFT kernels; the classifier ampere_sgemm. Nothing else does.
TEST(TensorCores, PerLayerUsageOnTheRealA100AlexnetTrace) {
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(source("tests/lowerbound/data/alexnet.onnx"), &m, &error)) << error;
  trace::Trace trace;
  ASSERT_TRUE(import::import_trace(source("tests/data/kineto/a100_alexnet_train.json.gz"), &trace, &error))
      << error;
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, trace, &cmp, &error)) << error;
  // Every layer that needs a library call has its op (the 6x6 adaptive average pool, exported as a
  // plain AveragePool, included).
  EXPECT_EQ(cmp.unmatched_layers, 0u);
  EXPECT_EQ(cmp.extra_ops, 0u);
  const TensorCoreUsage& u = cmp.tensor_cores;
  ASSERT_TRUE(u.has_kernels);
  std::map<std::string, const LayerTensorCores*> by_layer;
  for (const LayerTensorCores& l : u.layers) by_layer[m.layers[l.layer].name] = &l;
  for (const char* conv :
       {"/features/features.6/Conv", "/features/features.8/Conv", "/features/features.10/Conv"}) {
    ASSERT_TRUE(by_layer.count(conv)) << conv;
    const LayerTensorCores& l = *by_layer[conv];
    EXPECT_EQ(l.tensor_core_kernels, 1u) << conv;
    EXPECT_EQ(l.kernels, 4u) << conv;  // 2 nchwToNhwc + the xmma kernel + the bias add
    EXPECT_EQ(l.marker, "tensor16x8x8") << conv;
    EXPECT_NE(l.top_kernel.find("sm80_xmma_fprop_implicit_gemm_indexed_tf32"), std::string::npos);
    EXPECT_GT(l.tensor_core_ns, 0.6 * l.device_ns) << conv;
    EXPECT_LT(l.tensor_core_ns, l.device_ns) << conv;
  }
  // The first conv's kernels: from the trace, 4 us offsets + 1034 us scudnn + 187 us bias add.
  ASSERT_TRUE(by_layer.count("/features/features.0/Conv"));
  EXPECT_DOUBLE_EQ(by_layer["/features/features.0/Conv"]->device_ns, (4 + 1034 + 187) * 1e3);
  uint64_t layers_using = 0, tc_kernels = 0;
  for (const LayerTensorCores& l : u.layers) {
    layers_using += l.tensor_core_kernels > 0;
    tc_kernels += l.tensor_core_kernels;
    const Layer& layer = m.layers[l.layer];
    if (layer.op_type == "Gemm") {
      EXPECT_EQ(l.tensor_core_kernels, 0u) << layer.name;
      EXPECT_NE(l.top_kernel.find("ampere_sgemm"), std::string::npos) << layer.name;
    }
  }
  EXPECT_EQ(layers_using, 3u);
  EXPECT_EQ(tc_kernels, 3u);

  table::Table t = tensor_core_table(m, u);
  EXPECT_EQ(t.name, "tensor_cores");
  ASSERT_GE(t.rows.size(), u.layers.size() + 1);
  const auto& total = t.rows[u.layers.size()];
  EXPECT_EQ(std::get<std::string>(total[0].value), "TOTAL");
  EXPECT_EQ(std::get<std::string>(total[8].value), "3 of " + std::to_string(u.layers.size()) + " layers");
  // comparison_tables carries it for a GPU trace.
  LatencyIndex index;
  ModelEstimate e = estimate_model(m, index, "f32", "nchw", false);
  bool found = false;
  for (const table::Table& table : comparison_tables(m, e, cmp, 5))
    found |= table.name == "tensor_cores";
  EXPECT_TRUE(found);
}

}  // namespace
}  // namespace strata::lowerbound
