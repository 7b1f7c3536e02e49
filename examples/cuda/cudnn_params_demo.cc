// Calls cuDNN and cuBLAS with real descriptors but no GPU context (null handles): the calls fail,
// which is fine for checking what the interposer records. Run it under
//   strata record --level library -o lib.strata -- build/bin/cudnn_params_demo
// Built also as a module (STRATA_DEMO_MODULE: entry strata_demo_entry) that dlopen_local_runner loads
// with RTLD_LOCAL, as Python loads PyTorch: cuDNN and cuBLAS are then outside the global scope.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cudnn.h>

#include <cstdio>

#ifdef STRATA_DEMO_MODULE
extern "C" int strata_demo_entry() {
#else
int main() {
#endif
  cudnnTensorDescriptor_t x = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  int ok = 1;
  ok &= cudnnCreateTensorDescriptor(&x) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnCreateTensorDescriptor(&y) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnCreateFilterDescriptor(&w) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetTensor4dDescriptor(x, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 64, 56, 56) ==
        CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetFilter4dDescriptor(w, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 128, 32, 3, 3) ==
        CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetConvolution2dDescriptor(conv, 1, 1, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT) ==
        CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetConvolutionGroupCount(conv, 2) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetConvolutionMathType(conv, CUDNN_TENSOR_OP_MATH) == CUDNN_STATUS_SUCCESS;
  ok &= cudnnSetTensor4dDescriptor(y, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 128, 28, 28) ==
        CUDNN_STATUS_SUCCESS;
  std::printf("descriptors %s\n", ok ? "created" : "FAILED");
  float one = 1, zero = 0;
  cudnnStatus_t s = cudnnConvolutionForward(nullptr, &one, x, nullptr, w, nullptr, conv,
                                            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, nullptr, 4096,
                                            &zero, y, nullptr);
  std::printf("cudnnConvolutionForward: %d\n", static_cast<int>(s));

  cublasStatus_t b = cublasSgemm(nullptr, CUBLAS_OP_T, CUBLAS_OP_N, 512, 256, 1024, &one, nullptr, 1024,
                                 nullptr, 1024, &zero, nullptr, 512);
  std::printf("cublasSgemm: %d\n", static_cast<int>(b));

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a_layout = nullptr, b_layout = nullptr, d_layout = nullptr;
  int lt_ok =
      cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS;
  cublasOperation_t trans = CUBLAS_OP_T;
  lt_ok &= cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof(trans)) ==
           CUBLAS_STATUS_SUCCESS;
  lt_ok &= cublasLtMatrixLayoutCreate(&a_layout, CUDA_R_16F, 96, 64, 96) ==
           CUBLAS_STATUS_SUCCESS;  // k x m, transposed
  lt_ok &= cublasLtMatrixLayoutCreate(&b_layout, CUDA_R_16F, 96, 48, 96) == CUBLAS_STATUS_SUCCESS;  // k x n
  lt_ok &= cublasLtMatrixLayoutCreate(&d_layout, CUDA_R_16F, 64, 48, 64) == CUBLAS_STATUS_SUCCESS;  // m x n
  std::printf("cublasLt descriptors %s\n", lt_ok ? "created" : "FAILED");
  cublasStatus_t l = cublasLtMatmul(nullptr, op, &one, nullptr, a_layout, nullptr, b_layout, &zero, nullptr,
                                    d_layout, nullptr, d_layout, nullptr, nullptr, 0, nullptr);
  std::printf("cublasLtMatmul: %d\n", static_cast<int>(l));

  cublasLtMatrixLayoutDestroy(d_layout);
  cublasLtMatrixLayoutDestroy(b_layout);
  cublasLtMatrixLayoutDestroy(a_layout);
  cublasLtMatmulDescDestroy(op);
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(w);
  cudnnDestroyTensorDescriptor(y);
  cudnnDestroyTensorDescriptor(x);
  return 0;
}
