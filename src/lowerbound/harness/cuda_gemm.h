// GEMM preparers of the CUDA benchmark (see cuda_ops.h): cublasGemmEx / cublasGemmStridedBatchedEx
// ("gemm_ex") and cublasLtMatmul with the i-th heuristic algorithm ("lt_heuristic_<i>"). Header-only
// and free of Strata dependencies (copied by `strata bench generate`).
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_case.h"
#include "cuda_geometry.h"
#include "cuda_prepared.h"

// cuDNN's legacy API is deprecated in cuDNN 9 (see cuda_ops.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace strata::lowerbound::cuda {

// ---- GEMM: cuBLAS and cuBLASLt ----

// What both GEMM calls share: geometry, data type and the operand buffers.
struct GemmSetup {
  GemmGeometry g;
  bool half = false;
  bool bias = false;
  cudaDataType_t type = CUDA_R_32F;
  cublasOperation_t transa = CUBLAS_OP_N;
  void *x = nullptr, *w = nullptr, *y = nullptr, *b = nullptr;
};

inline bool gemm_setup(const BenchCase& c, Prepared* p, GemmSetup* s, std::string* why) {
  if (!gemm_geometry(c, &s->g, why)) return false;
  s->half = c.dtype == "f16";
  const size_t elem = s->half ? 2 : 4;
  s->type = s->half ? CUDA_R_16F : CUDA_R_32F;
  s->bias = c.bias && c.op == "inner_product";
  s->x = device_buffer(p, static_cast<size_t>(s->g.x_elements) * elem);
  s->w = device_buffer(p, static_cast<size_t>(s->g.w_elements) * elem);
  s->y = device_buffer(p, static_cast<size_t>(s->g.y_elements) * elem);
  s->b = s->bias ? device_buffer(p, static_cast<size_t>(s->g.n) * elem) : nullptr;
  if (!s->x || !s->w || !s->y || (s->bias && !s->b)) return alloc_failed(why);
  s->transa = s->g.transpose_w ? CUBLAS_OP_T : CUBLAS_OP_N;
  return true;
}

// "gemm_ex": cublasGemmEx, the strided-batched form when batched.
inline bool prepare_gemm_ex(const GemmSetup& s, Prepared* p, std::string* why) {
  if (cublasCreate(&p->cublas) != CUBLAS_STATUS_SUCCESS) {
    *why = "cublasCreate failed (no CUDA device?)";
    return false;
  }
  if (cublasSetStream(p->cublas, p->stream) != CUBLAS_STATUS_SUCCESS) {
    *why = "cublasSetStream failed";
    return false;
  }
  const GemmGeometry& g = s.g;
  const bool half = s.half;
  const cudaDataType_t t = s.type;
  const cublasOperation_t transa = s.transa;
  void *x = s.x, *w = s.w, *y = s.y;
  // fp16: fp32 accumulation allowed to use fp16 tensor cores, as frameworks ask for.
  const cublasComputeType_t compute = half ? CUBLAS_COMPUTE_32F_FAST_16F : CUBLAS_COMPUTE_32F;
  cublasHandle_t h = p->cublas;
  // With a bias a framework's addmm first broadcasts it into Y, then accumulates: beta = 1.
  const float beta = s.bias ? 1.f : 0.f;
  // Column-major sizes of Y^T = op(W) * X^T: n x m, inner dimension k.
  const int m = static_cast<int>(g.n), n = static_cast<int>(g.m), k = static_cast<int>(g.k);
  const int lda = static_cast<int>(g.lda), ldb = static_cast<int>(g.ldb), ldd = static_cast<int>(g.ldd);
  if (g.batch == 1) {
    p->launch = [=] {
      static const float one = 1.f;
      return launched(p,
                      cublasGemmEx(h, transa, CUBLAS_OP_N, m, n, k, &one, w, t, lda, x, t, ldb, &beta, y, t,
                                   ldd, compute, CUBLAS_GEMM_DEFAULT),
                      "cublasGemmEx");
    };
    p->implementation = half ? "cublasGemmEx(fp16, tensor op)" : "cublasGemmEx(fp32)";
    return true;
  }
  const int batch = static_cast<int>(g.batch);
  const long long sw = g.stride_w, sx = g.stride_x, sy = g.stride_y;
  p->launch = [=] {
    static const float one = 1.f;
    return launched(
        p,
        cublasGemmStridedBatchedEx(h, transa, CUBLAS_OP_N, m, n, k, &one, w, t, lda, sw, x, t, ldb, sx, &beta,
                                   y, t, ldd, sy, batch, compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
  };
  p->implementation = std::string("cublasGemmStridedBatchedEx(") + (half ? "fp16, tensor op" : "fp32") +
                      ", batch " + std::to_string(batch) + ")";
  return true;
}

inline bool lt_ok(cublasStatus_t s, const char* what, std::string* why) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  *why = std::string(what) + ": " + cublasGetStatusString(s);
  return false;
}

// The cuBLASLt operation and operand layouts of a GEMM (bias as the epilogue).
struct LtDescriptors {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, d = nullptr;
};

inline bool lt_layout(const GemmSetup& s, Prepared* p, uint64_t rows, uint64_t cols, int64_t ld,
                      int64_t stride, cublasLtMatrixLayout_t* out, std::string* why) {
  if (!lt_ok(cublasLtMatrixLayoutCreate(out, s.type, rows, cols, ld), "cublasLtMatrixLayoutCreate", why))
    return false;
  cublasLtMatrixLayout_t l = *out;
  p->cleanups.push_back([l] { cublasLtMatrixLayoutDestroy(l); });
  if (s.g.batch == 1) return true;
  const int32_t count = static_cast<int32_t>(s.g.batch);
  return lt_ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)", why) &&
         lt_ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                sizeof stride),
               "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)", why);
}

inline bool lt_descriptors(const GemmSetup& s, Prepared* p, LtDescriptors* d, std::string* why) {
  // fp16 inputs with fp32 accumulation and scale: cuBLASLt picks tensor-core kernels itself.
  if (!lt_ok(cublasLtMatmulDescCreate(&d->op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate",
             why))
    return false;
  cublasLtMatmulDesc_t op = d->op;
  p->cleanups.push_back([op] { cublasLtMatmulDescDestroy(op); });
  const cublasOperation_t transa = s.transa, transb = CUBLAS_OP_N;
  if (!lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
             "cublasLtMatmulDescSetAttribute(TRANSA)", why) ||
      !lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
             "cublasLtMatmulDescSetAttribute(TRANSB)", why))
    return false;
  if (s.bias) {  // one call, as frameworks' Linear does: D = A * B + bias (per output feature)
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    void* b = s.b;
    if (!lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
               "cublasLtMatmulDescSetAttribute(EPILOGUE)", why) ||
        !lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)", why))
      return false;
  }
  // A as stored: transposed weights are K x N (ld K), plain ones N x K (ld N); B = X^T is K x M.
  const GemmGeometry& g = s.g;
  const uint64_t m = static_cast<uint64_t>(g.m), n = static_cast<uint64_t>(g.n),
                 k = static_cast<uint64_t>(g.k);
  return lt_layout(s, p, g.transpose_w ? k : n, g.transpose_w ? n : k, g.lda, g.stride_w, &d->a, why) &&
         lt_layout(s, p, k, m, g.ldb, g.stride_x, &d->b, why) &&
         lt_layout(s, p, n, m, g.ldd, g.stride_y, &d->d, why);
}

// The algorithm's configuration, so rows in the database say which kernel family each rank was.
inline std::string lt_algorithm_text(const cublasLtMatmulAlgo_t& algo) {
  int32_t id = -1, splitk = 1;
  uint32_t tile = 0, stages = 0, swizzle = 0, reduction = 0, custom = 0;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof tile, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof stages,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof splitk,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &reduction,
                                       sizeof reduction, &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, &swizzle, sizeof swizzle,
                                       &written);
  cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, &custom, sizeof custom,
                                       &written);
  return "algo=" + std::to_string(id) + ",tile=" + std::to_string(tile) +
         ",stages=" + std::to_string(stages) + ",splitk=" + std::to_string(splitk) +
         ",reduction=" + std::to_string(reduction) + ",swizzle=" + std::to_string(swizzle) +
         ",custom=" + std::to_string(custom);
}

// "lt_heuristic_<i>": cublasLtMatmul with the i-th heuristic result (fewer results: not applicable).
inline bool prepare_gemm_lt(const GemmSetup& s, int lt_index, Prepared* p, std::string* why) {
  if (!lt_ok(cublasLtCreate(&p->cublas_lt), "cublasLtCreate (no CUDA device?)", why)) return false;
  LtDescriptors d;
  if (!lt_descriptors(s, p, &d, why)) return false;
  // Workspace cap as recent PyTorch sets for cuBLASLt on Hopper-class GPUs (lets split-K algorithms in).
  const uint64_t max_workspace = uint64_t{32} << 20;
  cublasLtMatmulPreference_t pref = nullptr;
  if (!lt_ok(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate", why)) return false;
  p->cleanups.push_back([pref] { cublasLtMatmulPreferenceDestroy(pref); });
  if (!lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &max_workspace, sizeof max_workspace),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)", why))
    return false;
  const int requested = std::max(kLtHeuristicCount, lt_index + 1);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(requested));
  int returned = 0;
  if (!lt_ok(cublasLtMatmulAlgoGetHeuristic(p->cublas_lt, d.op, d.a, d.b, d.d, d.d, pref, requested,
                                            results.data(), &returned),
             "cublasLtMatmulAlgoGetHeuristic", why))
    return false;
  if (lt_index >= returned) {
    *why = "cuBLASLt's heuristic returned " + std::to_string(returned) + " algorithms for this GEMM, not " +
           std::to_string(lt_index + 1);
    return false;
  }
  const cublasLtMatmulHeuristicResult_t& r = results[static_cast<size_t>(lt_index)];
  if (!lt_ok(r.state, "cuBLASLt heuristic result", why)) return false;
  const size_t ws_bytes = r.workspaceSize;
  void* ws = ws_bytes ? device_buffer(p, ws_bytes) : nullptr;
  if (ws_bytes && !ws) {
    *why = "cudaMalloc of the cuBLASLt workspace failed";
    return false;
  }
  const cublasLtMatmulAlgo_t algo = r.algo;
  cublasLtHandle_t lt = p->cublas_lt;
  void *x = s.x, *w = s.w, *y = s.y;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(
        p, cublasLtMatmul(lt, d.op, &one, w, d.a, x, d.b, &zero, y, d.d, y, d.d, &algo, ws, ws_bytes, p->stream),
        "cublasLtMatmul");
  };
  p->implementation = "cublasLtMatmul(" + std::string(s.half ? "fp16" : "fp32") +
                      (s.bias ? ", bias epilogue" : "") +
                      (s.g.batch > 1 ? ", batch " + std::to_string(s.g.batch) : std::string()) +
                      "):" + lt_algorithm_text(algo) + ",workspace=" + std::to_string(ws_bytes);
  return true;
}

// inner_product, matmul: "gemm_ex"/"default" or "lt_heuristic_<i>".
inline bool prepare_gemm(const BenchCase& c, Prepared* p, std::string* why) {
  GemmSetup s;
  if (!gemm_setup(c, p, &s, why)) return false;
  if (c.algorithm == "gemm_ex" || c.algorithm == "default") return prepare_gemm_ex(s, p, why);
  return prepare_gemm_lt(s, lt_heuristic_index(c.algorithm), p, why);
}

}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop
