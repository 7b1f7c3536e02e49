// Hopper awareness on real H100 traces: tensor-core kernels of the shared Kineto traces (counted
// against kernel names checked by hand in the files, not against the marker list), the nsys H100
// export's nvjet kernel, TMA descriptor calls and cuLaunchKernelEx kernel (against SQL over the same
// file), the H100/H200 peak table, and the roofline peaks taken from TARGET_INFO_GPU.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/device_peaks.h"
#include "core/attr_keys.h"
#include "core/kernel_names.h"
#include "core/level.h"
#include "import/importer.h"
#include "table/table.h"
#include "trace/span_tree.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace strata {
namespace {

std::string data(const std::string& rel) { return std::string(STRATA_SOURCE_DIR) + "/tests/data/" + rel; }

trace::Trace open(const std::string& path) {
  import::register_readers();
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::open_trace(path, &t, &error)) << error;
  return t;
}

// Kernel executions by name.
std::map<std::string, int> kernels_by_name(const trace::Trace& t) {
  std::map<std::string, int> out;
  for (const SpanRecord& s : t.spans)
    if (s.activity_type() == ActivityType::kKernel) ++out[std::string(t.name(s))];
  return out;
}

// Tensor-core kernels of each shared H100 Kineto trace. The expected kernels were read off the files
// by hand (kernel name -> count, from a count of kernels by name): CUTLASS 2.x tensorop/wmma GEMMs
// (Ampere kernels run on the H100), cuBLAS sm90 XMMA GEMMs, cuDNN's tensorop fprop and
// FlashAttention's forward kernel; everything else in them is elementwise, layer norm, reduction,
// indexing, layout conversion or copy work.
struct HopperCase {
  const char* file;
  int kernels;
  std::vector<std::pair<const char*, int>> tensor_core;  // a substring naming one kernel, its count
};
const HopperCase kHopper[] = {
    {"kineto_hopper/h100_bert_small.json.gz",
     60,
     {{"cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32_128x2_tn_align8", 17},
      {"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8", 4},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1", 4},
      {"pytorch_flash::flash_fwd_kernel<", 4},
      {"cutlass_80_tensorop_bf16_s16816gemm_bf16_256x128_64x3_tn_align2", 1}}},
    {"kineto_hopper/h100_vit_image_classification.json.gz",
     154,
     {{"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_128x64_64x6_tn_align8", 48},
      {"pytorch_flash::flash_fwd_kernel<", 12},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1", 12},
      {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x64x64_warpgroupsize1x1x1", 12},
      {"cutlass_tensorop_bf16_s16816fprop_optimized_bf16_256x64_32x4_nhwc_align8", 1},
      {"cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x6_tn_align8", 1}}},
    {"kineto/h100_cuda_sync_small.json", 1, {}},  // one kernel named "Kernel"
};

TEST(Hopper, SharedH100KinetoTracesHaveTheirTensorCoreKernelsRecognized) {
  for (const HopperCase& c : kHopper) {
    const trace::Trace t = open(data(c.file));
    const auto names = kernels_by_name(t);
    int kernels = 0, recognized = 0, expected = 0;
    for (const auto& [name, count] : names) {
      kernels += count;
      bool listed = false;
      for (const auto& [part, n] : c.tensor_core)
        if (name.find(part) != std::string::npos) {
          listed = true;
          EXPECT_EQ(count, n) << c.file << ": " << name;
        }
      EXPECT_EQ(is_tensor_core_kernel(name), listed) << c.file << ": " << name;
      if (is_tensor_core_kernel(name)) recognized += count;
    }
    for (const auto& [part, n] : c.tensor_core) expected += n;
    EXPECT_EQ(kernels, c.kernels) << c.file;
    EXPECT_EQ(recognized, expected) << c.file;
  }
}

TEST(Hopper, PrecisionOfTensorCoreKernels) {
  EXPECT_EQ(
      tensor_core_precision("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize64x64x64_warpgroupsize1x1x1"),
      TensorPrecision::kBf16);
  EXPECT_EQ(tensor_core_precision("nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_NTN"), TensorPrecision::kFp16);
  EXPECT_EQ(tensor_core_precision("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT"), TensorPrecision::kTf32);
  EXPECT_EQ(
      tensor_core_precision("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x5_tn_align4>"),
      TensorPrecision::kTf32);
  EXPECT_EQ(tensor_core_precision("volta_h884gemm_64x64_ldg8_nn"), TensorPrecision::kFp16);
  EXPECT_EQ(tensor_core_precision("turing_i8816cudnn_int8_128x128_ldg16_relu_small_nt_v1"),
            TensorPrecision::kInt8);
  EXPECT_EQ(tensor_core_precision("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3_f32_f16_128x128x128"),
            TensorPrecision::kFp8);
  EXPECT_EQ(tensor_core_precision("sm80_xmma_gemm_f64f64_f64f64_f64_nt_n_tilesize64x64x16_dmma"),
            TensorPrecision::kFp64);
  EXPECT_EQ(tensor_core_precision("ampere_sgemm_32x32_sliced1x4_tn"), TensorPrecision::kUnknown);
  // FlashAttention's helper kernels do no MMA.
  EXPECT_FALSE(is_tensor_core_kernel("void flash_fwd_splitkv_combine_kernel<Flash_fwd_kernel_traits<64>>"));
  EXPECT_TRUE(
      is_tensor_core_kernel("void flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits>"));
}

// The H100 nsys export (NVIDIA/Fuser's matmul test): one nvjet cuBLAS kernel, launched by the one
// cuLaunchKernelEx (SQL says which kernel that call launched), and two cuTensorMapEncodeTiled calls.
int64_t sql_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return v;
}

std::optional<std::string> text_attr(const trace::Trace& t, size_t span, std::string_view key) {
  const std::optional<AttrRecord> a = t.find_attr(span, key);
  if (!a) return std::nullopt;
  return t.attr_value_string(*a);
}

TEST(Hopper, NsysH100ExportTmaCallsClusterLaunchesAndNvjet) {
  const std::string path = data("nsys/h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
  const trace::Trace t = open(path);
  int64_t tma = 0, tma_classed = 0, launched_ex = 0, nvjet = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const SpanRecord& s = t.spans[i];
    const std::string name(t.name(s));
    if (name.rfind("cuTensorMapEncode", 0) == 0) {
      ++tma;
      tma_classed += text_attr(t, i, attr_keys::kApiClass) == "tma_descriptor";
    }
    if (s.activity_type() != ActivityType::kKernel) continue;
    if (auto api = text_attr(t, i, attr_keys::kLaunchApi)) {
      ++launched_ex;
      EXPECT_EQ(*api, "cuLaunchKernelEx");
      // cuBLAS launches its nvjet kernels with cuLaunchKernelEx (the "2x1" in the name is the
      // cluster shape); nvFuser's own kernel goes through cuLaunchKernel.
      EXPECT_EQ(name.rfind("nvjet_hsh_128x256_64x4_2x1", 0), 0u) << name;
    }
    if (name.rfind("nvjet_hsh_128x256", 0) == 0) {
      ++nvjet;
      EXPECT_TRUE(is_tensor_core_kernel(name));
    }
  }
  EXPECT_EQ(tma,
            sql_int(path,
                    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                    "WHERE s.value LIKE 'cuTensorMapEncode%'"));
  EXPECT_EQ(tma_classed, tma);
  EXPECT_EQ(launched_ex,
            sql_int(path,
                    "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON "
                    "r.correlationId = k.correlationId JOIN StringIds s ON s.id = r.nameId "
                    "WHERE s.value = 'cuLaunchKernelEx'"));
  EXPECT_EQ(launched_ex, 1);
  EXPECT_EQ(nvjet, 1);
  EXPECT_EQ(t.stat(stats::Stat::kImportKernelsOfExtensibleLaunches), 1u);
}

TEST(Hopper, PeakTableHasHopperBoardsWithTensorPeaks) {
  struct Want {
    const char* reported;  // the device name as CUDA reports it
    const char* key;
    double fp32, gbps, tf32, fp16, fp8;
  };
  // Dense figures: half of the datasheets' sparse TF32/FP16/FP8 numbers.
  for (const Want& w : {Want{"NVIDIA H100 80GB HBM3", "h100", 66900, 3350, 494500, 989500, 1979000},
                        Want{"NVIDIA H100 PCIe", "h100-pcie", 51200, 2000, 378000, 756500, 1513000},
                        Want{"NVIDIA H100 NVL", "h100-nvl", 60000, 3900, 417500, 835500, 1670500},
                        Want{"NVIDIA H200", "h200", 66900, 4800, 494500, 989500, 1979000},
                        Want{"NVIDIA H200 NVL", "h200-nvl", 60000, 4800, 417500, 835500, 1670500}}) {
    const analysis::DevicePeak* p = analysis::find_device_peak(w.reported);
    ASSERT_NE(p, nullptr) << w.reported;
    EXPECT_EQ(p->key, w.key) << w.reported;
    EXPECT_EQ(p->peak_gflops, w.fp32) << w.reported;
    EXPECT_EQ(p->peak_gbps, w.gbps) << w.reported;
    EXPECT_EQ(p->tensor.tf32, w.tf32) << w.reported;
    EXPECT_EQ(p->tensor.fp16, w.fp16) << w.reported;
    EXPECT_EQ(p->tensor.fp8, w.fp8) << w.reported;
    EXPECT_NE(p->source.find("datasheet"), std::string_view::npos) << w.reported;
  }
  // Ceilings: a tensor-core kernel gets the tensor peak of its precision, others FP32.
  analysis::ResolvedPeaks r;
  r.gflops = 66900;
  r.gbps = 3350;
  r.tensor = analysis::find_device_peak("h100")->tensor;
  std::string label;
  EXPECT_EQ(r.ceiling("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", &label), 989500);
  EXPECT_EQ(label, "tensor bf16");
  EXPECT_EQ(r.ceiling("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_NNT", &label), 494500);
  EXPECT_EQ(label, "tensor tf32");
  EXPECT_EQ(r.ceiling("ampere_sgemm_32x32_sliced1x4_tn", &label), 66900);
  EXPECT_EQ(label, "fp32");
  r.tensor = analysis::find_device_peak("a100")->tensor;  // no FP8 on the A100: the FP16 peak
  EXPECT_EQ(r.ceiling("cutlass3x_sm90_tensorop_gemm_e4m3_e4m3", &label), 312000);
  EXPECT_EQ(label, "tensor fp16 (no fp8 peak known)");
}

// TARGET_INFO_GPU of the GPU that ran the kernels gives FP32 (SMs x clock x 128 lanes x 2 on
// compute capability 9.0, 64 on 8.0) and the memory bandwidth; the name picks the tensor peaks.
TEST(Hopper, RooflinePeaksFromTheUsedGpusTargetInfo) {
  struct Want {
    const char* file;
    double sms, clock_hz, lanes, bandwidth;  // TARGET_INFO_GPU of device 0 (the one the kernels ran on)
    const char* entry;
  };
  for (const Want& w : {Want{"nsys/h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite", 132, 1980000000, 128,
                             3352320000000, "h100"},
                        Want{"nsys/a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite", 108, 1410000000, 64,
                             2039040000000, "a100-80gb"}}) {
    const std::string path = data(w.file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    EXPECT_EQ(sql_int(path, "SELECT smCount FROM TARGET_INFO_GPU WHERE id = 0"), w.sms);
    EXPECT_EQ(sql_int(path, "SELECT memoryBandwidth FROM TARGET_INFO_GPU WHERE id = 0"), w.bandwidth);
    const trace::Trace t = open(path);
    std::string why;
    auto peaks = analysis::resolve_peaks(t, {}, false, &why);
    ASSERT_TRUE(peaks) << why;
    EXPECT_NEAR(peaks->gflops, w.sms * w.clock_hz * w.lanes * 2 / 1e9, 1e-6) << w.file;
    EXPECT_NEAR(peaks->gbps, w.bandwidth / 1e9, 1e-9) << w.file;
    EXPECT_EQ(peaks->tensor.fp16, analysis::find_device_peak(w.entry)->tensor.fp16) << w.file;
    EXPECT_NE(peaks->description.find("device.0 properties"), std::string::npos) << peaks->description;
    EXPECT_NE(peaks->description.find(std::string("table entry ") + w.entry + "]"), std::string::npos)
        << peaks->description;
    // An explicit device still wins over the trace's properties.
    analysis::Params p;
    p.set("device", "h200");
    auto forced = analysis::resolve_peaks(t, p, false, &why);
    ASSERT_TRUE(forced) << why;
    EXPECT_EQ(forced->gbps, 4800);
  }
}

// kernel_roofline end to end: on an H100 (deviceProperties name), a bf16 XMMA GEMM and an FP32 SIMT
// GEMM of the same intensity (500 flop/byte: 1 GFLOP over 2 MB, 1 ms each). The tensor-core kernel's
// roof is the dense BF16 peak, min(989500, 500 x 3350) = 989500 GFLOP/s, compute bound; the SIMT
// one's the FP32 peak, min(66900, 1675000) = 66900.
TEST(Hopper, KernelRooflineUsesTheTensorPeakForTensorCoreKernels) {
  const std::string json =
      R"({"deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3"}], "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernelExC", "pid": 1, "tid": 1, "ts": 10, "dur": 5,
     "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
     "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", "pid": 0, "tid": 7,
     "ts": 30, "dur": 1000, "args": {"device": 0, "stream": 7, "correlation": 1, "cluster": [2, 1, 1],
     "flops": 1000000000, "bytes": 2000000}},
    {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_tn", "pid": 0, "tid": 7, "ts": 1100,
     "dur": 1000, "args": {"device": 0, "stream": 7, "correlation": 2, "flops": 1000000000, "bytes": 2000000}}
  ]})";
  trace::Trace t;
  std::string error;
  import::ImportOptions opts;
  opts.format = "kineto";
  ASSERT_TRUE(import::import_buffer(json, "roof.json", &t, &error, opts)) << error;
  const trace::SpanTree tree = trace::build_span_tree(t);
  auto r = analysis::find_analysis("kernel_roofline")->run({t, tree, {}});
  ASSERT_FALSE(r.missing_input) << *r.missing_input;
  const auto& table = r.tables.at(0);
  auto cell = [&](size_t row, const std::string& column) {
    for (size_t c = 0; c < table.columns.size(); ++c)
      if (table.columns[c] == column) return table.rows.at(row).at(c).value;
    ADD_FAILURE() << "no column " << column;
    return table::Cell::empty().value;
  };
  ASSERT_EQ(table.rows.size(), 2u);
  for (size_t row = 0; row < 2; ++row) {
    const bool tensor = std::get<std::string>(cell(row, "kernel")).rfind("sm90_xmma", 0) == 0;
    EXPECT_EQ(std::get<std::string>(cell(row, "tensor_core")), tensor ? "yes" : "no");
    EXPECT_EQ(std::get<std::string>(cell(row, "ceiling")), tensor ? "tensor bf16" : "fp32");
    EXPECT_DOUBLE_EQ(std::get<double>(cell(row, "attainable_gflop_per_s")), tensor ? 989500 : 66900);
    EXPECT_EQ(std::get<std::string>(cell(row, "bound")), "compute");
  }
  // The Ex launch's kernel carries its launch and its cluster dimensions.
  size_t with_launch = 0;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (const auto api = text_attr(t, i, attr_keys::kLaunchApi)) {
      ++with_launch;
      EXPECT_EQ(*api, "cudaLaunchKernelExC");
      EXPECT_EQ(text_attr(t, i, attr_keys::kClusterX), "2");
      EXPECT_EQ(text_attr(t, i, attr_keys::kClusterY), "1");
    }
  EXPECT_EQ(with_launch, 1u);
}

// kernels_by_name on the real BERT trace: its tensor_core column says yes for exactly the five
// kernel names listed above.
TEST(Hopper, KernelsByNameShowTheTensorCoreColumn) {
  const trace::Trace t = open(data(kHopper[0].file));
  const trace::SpanTree tree = trace::build_span_tree(t);
  analysis::Params params;
  params.set("top", "0");
  auto r = analysis::find_analysis("kernels_by_name")->run({t, tree, params});
  ASSERT_FALSE(r.missing_input) << *r.missing_input;
  const auto& table = r.tables.at(0);
  size_t col = 0, name_col = 0;
  for (size_t c = 0; c < table.columns.size(); ++c) {
    if (table.columns[c] == "tensor_core") col = c;
    if (table.columns[c] == "kernel") name_col = c;
  }
  ASSERT_EQ(table.columns[col], "tensor_core");
  size_t yes = 0;
  for (const auto& row : table.rows)
    if (std::get<std::string>(row[col].value) == "yes") {
      ++yes;
      const std::string name = std::get<std::string>(row[name_col].value);
      bool listed = false;
      for (const auto& [part, n] : kHopper[0].tensor_core)
        listed = listed || name.find(part) != std::string::npos;
      EXPECT_TRUE(listed) << name;
    }
  EXPECT_EQ(yes, kHopper[0].tensor_core.size());
}

}  // namespace
}  // namespace strata
