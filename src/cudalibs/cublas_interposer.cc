// cuBLAS / cuBLASLt GEMM library spans by LD_PRELOAD interposition (part of libstrata_cudnn.so):
// m, n, k, transposes, data and compute types, batch count. cuBLASLt's layouts are read back from
// its descriptors. Misses: dlopen+dlsym users, static cuBLAS, the _64 and batched-pointer-array
// variants (not wrapped yet), and GEMMs cuBLAS issues internally.
#include <cublasLt.h>
#include <cublas_v2.h>

#include "core/attr_keys.h"
#include "cudalibs/library_span.h"

namespace strata::cudalibs {
namespace {

constexpr const char* kLib = "cublas";

using GemmExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int,
                                    const void*, const void*, cudaDataType, int, const void*, cudaDataType,
                                    int, const void*, void*, cudaDataType, int, cublasComputeType_t,
                                    cublasGemmAlgo_t);
using GemmStridedBatchedExFn = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int,
                                                  int, int, const void*, const void*, cudaDataType, int,
                                                  long long int, const void*, cudaDataType, int,
                                                  long long int, const void*, void*, cudaDataType, int,
                                                  long long int, int, cublasComputeType_t, cublasGemmAlgo_t);

const char* op_name(cublasOperation_t op) {
  switch (op) {
    case CUBLAS_OP_N:
      return "N";
    case CUBLAS_OP_T:
      return "T";
    case CUBLAS_OP_C:
      return "C";
    default:
      return "?";
  }
}

const char* data_type_name(int t) {
  switch (t) {
    case CUDA_R_32F:
      return "float32";
    case CUDA_R_64F:
      return "float64";
    case CUDA_R_16F:
      return "float16";
    case CUDA_R_16BF:
      return "bfloat16";
    case CUDA_R_8I:
      return "int8";
    case CUDA_R_32I:
      return "int32";
    case CUDA_R_8F_E4M3:
      return "fp8_e4m3";
    case CUDA_R_8F_E5M2:
      return "fp8_e5m2";
    case CUDA_C_32F:
      return "complex64";
    default:
      return "other";
  }
}

void gemm_shape(LibrarySpan& span, cublasOperation_t ta, cublasOperation_t tb, int64_t m, int64_t n,
                int64_t k) {
  span.set_int("m", m);
  span.set_int("n", n);
  span.set_int("k", k);
  span.set_string("transa", op_name(ta));
  span.set_string("transb", op_name(tb));
}

void types(LibrarySpan& span, int a, int b, int c, int compute) {
  span.set_string("a.dtype", data_type_name(a));
  span.set_string("b.dtype", data_type_name(b));
  span.set_string("c.dtype", data_type_name(c));
  span.set_int("compute_type", compute);
}

template <typename Fn, typename... Args>
cublasStatus_t call(LibrarySpan& span, Fn real, Args... args) {
  if (real == nullptr) {
    span.missing_real_function();
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  cublasStatus_t s = real(args...);
  const char* text = nullptr;
  if (s != CUBLAS_STATUS_SUCCESS)
    if (auto get = STRATA_REAL(cublasGetStatusString); get != nullptr) text = get(s);
  span.set_status(static_cast<int>(s), text);
  return s;
}

}  // namespace
}  // namespace strata::cudalibs

using namespace strata::cudalibs;

extern "C" {

cublasStatus_t CUBLASWINAPI cublasSgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k, const float* alpha,
                                           const float* A, int lda, const float* B, int ldb,
                                           const float* beta, float* C, int ldc) {
  LibrarySpan span("cublasSgemm", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
  return call(span, STRATA_REAL(cublasSgemm_v2), handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta,
              C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasDgemm_v2(cublasHandle_t handle, cublasOperation_t transa,
                                           cublasOperation_t transb, int m, int n, int k, const double* alpha,
                                           const double* A, int lda, const double* B, int ldb,
                                           const double* beta, double* C, int ldc) {
  LibrarySpan span("cublasDgemm", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F);
  return call(span, STRATA_REAL(cublasDgemm_v2), handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta,
              C, ldc);
}

cublasStatus_t CUBLASWINAPI cublasHgemm(cublasHandle_t handle, cublasOperation_t transa,
                                        cublasOperation_t transb, int m, int n, int k, const __half* alpha,
                                        const __half* A, int lda, const __half* B, int ldb,
                                        const __half* beta, __half* C, int ldc) {
  LibrarySpan span("cublasHgemm", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_16F);
  return call(span, STRATA_REAL(cublasHgemm), handle, transa, transb, m, n, k, alpha, A, lda, B, ldb, beta, C,
              ldc);
}

cublasStatus_t CUBLASWINAPI cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa,
                                         cublasOperation_t transb, int m, int n, int k, const void* alpha,
                                         const void* A, cudaDataType Atype, int lda, const void* B,
                                         cudaDataType Btype, int ldb, const void* beta, void* C,
                                         cudaDataType Ctype, int ldc, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo) {
  LibrarySpan span("cublasGemmEx", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, Atype, Btype, Ctype, computeType);
  span.set_int("algorithm", static_cast<int>(algo));
  return call(span, STRATA_REAL_AS(cublasGemmEx, GemmExFn), handle, transa, transb, m, n, k, alpha, A, Atype,
              lda, B, Btype, ldb, beta, C, Ctype, ldc, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasSgemmStridedBatched(cublasHandle_t handle, cublasOperation_t transa,
                                                      cublasOperation_t transb, int m, int n, int k,
                                                      const float* alpha, const float* A, int lda,
                                                      long long int strideA, const float* B, int ldb,
                                                      long long int strideB, const float* beta, float* C,
                                                      int ldc, long long int strideC, int batchCount) {
  LibrarySpan span("cublasSgemmStridedBatched", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F);
  span.set_int(strata::attr_keys::kBatchCount.data(), batchCount);
  return call(span, STRATA_REAL(cublasSgemmStridedBatched), handle, transa, transb, m, n, k, alpha, A, lda,
              strideA, B, ldb, strideB, beta, C, ldc, strideC, batchCount);
}

cublasStatus_t CUBLASWINAPI cublasGemmStridedBatchedEx(
    cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n, int k,
    const void* alpha, const void* A, cudaDataType Atype, int lda, long long int strideA, const void* B,
    cudaDataType Btype, int ldb, long long int strideB, const void* beta, void* C, cudaDataType Ctype,
    int ldc, long long int strideC, int batchCount, cublasComputeType_t computeType, cublasGemmAlgo_t algo) {
  LibrarySpan span("cublasGemmStridedBatchedEx", kLib);
  gemm_shape(span, transa, transb, m, n, k);
  types(span, Atype, Btype, Ctype, computeType);
  span.set_int(strata::attr_keys::kBatchCount.data(), batchCount);
  span.set_int("algorithm", static_cast<int>(algo));
  return call(span, STRATA_REAL_AS(cublasGemmStridedBatchedEx, GemmStridedBatchedExFn), handle, transa,
              transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb, strideB, beta, C, Ctype, ldc,
              strideC, batchCount, computeType, algo);
}

cublasStatus_t CUBLASWINAPI cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc,
                                           const void* alpha, const void* A, cublasLtMatrixLayout_t Adesc,
                                           const void* B, cublasLtMatrixLayout_t Bdesc, const void* beta,
                                           const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                                           cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo,
                                           void* workspace, size_t workspaceSizeInBytes,
                                           cudaStream_t stream) {
  LibrarySpan span("cublasLtMatmul", kLib);
  auto desc_get = STRATA_REAL(cublasLtMatmulDescGetAttribute);
  auto layout_get = STRATA_REAL(cublasLtMatrixLayoutGetAttribute);
  if (span.active() && desc_get != nullptr && layout_get != nullptr && computeDesc != nullptr &&
      Adesc != nullptr && Ddesc != nullptr) {
    size_t written = 0;
    int32_t compute = 0, ta = CUBLAS_OP_N, tb = CUBLAS_OP_N;
    desc_get(computeDesc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, sizeof(compute), &written);
    desc_get(computeDesc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta), &written);
    desc_get(computeDesc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb), &written);
    uint64_t a_rows = 0, a_cols = 0, d_rows = 0, d_cols = 0;
    uint32_t a_type = 0, b_type = 0, d_type = 0;
    int32_t batch = 1;
    layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &a_rows, sizeof(a_rows), &written);
    layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_COLS, &a_cols, sizeof(a_cols), &written);
    layout_get(Adesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &a_type, sizeof(a_type), &written);
    if (Bdesc != nullptr) layout_get(Bdesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &b_type, sizeof(b_type), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_ROWS, &d_rows, sizeof(d_rows), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_COLS, &d_cols, sizeof(d_cols), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_TYPE, &d_type, sizeof(d_type), &written);
    layout_get(Ddesc, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, sizeof(batch), &written);
    auto op_a = static_cast<cublasOperation_t>(ta);
    int64_t k = static_cast<int64_t>(op_a == CUBLAS_OP_N ? a_cols : a_rows);
    gemm_shape(span, op_a, static_cast<cublasOperation_t>(tb), static_cast<int64_t>(d_rows),
               static_cast<int64_t>(d_cols), k);
    types(span, static_cast<int>(a_type), static_cast<int>(b_type), static_cast<int>(d_type), compute);
    span.set_int(strata::attr_keys::kBatchCount.data(), batch);
  }
  span.set_int("workspace_bytes", static_cast<int64_t>(workspaceSizeInBytes));
  return call(span, STRATA_REAL(cublasLtMatmul), lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C,
              Cdesc, D, Ddesc, algo, workspace, workspaceSizeInBytes, stream);
}

}  // extern "C"
