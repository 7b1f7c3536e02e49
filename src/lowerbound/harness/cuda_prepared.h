// A prepared CUDA benchmark call (see cuda_ops.h): handles, device buffers, descriptors to destroy,
// and the launch. Header-only and free of Strata dependencies (copied by `strata bench generate`).
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

// cuDNN's legacy API is deprecated in cuDNN 9 (see cuda_ops.h).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace strata::lowerbound::cuda {

struct Prepared {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublas_lt = nullptr;
  // Every call is enqueued on this stream (not the legacy default stream, which cannot be captured):
  // the timing captures the calls into a CUDA graph (cuda_ops.h, time_launches).
  cudaStream_t stream = nullptr;
  std::vector<void*> buffers;
  std::vector<std::function<void()>> cleanups;
  // Enqueues the call on `stream` (no sync). False when the library rejects it at run time;
  // `error` then says why (a rejected call enqueues nothing, so timing it would be meaningless).
  std::function<bool()> launch;
  std::string implementation;
  std::string error;
  Prepared() = default;
  Prepared(const Prepared&) = delete;  // launch captures this object's address
  Prepared& operator=(const Prepared&) = delete;
  ~Prepared() {
    for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) (*it)();
    for (void* b : buffers) cudaFree(b);
    if (cublas_lt) cublasLtDestroy(cublas_lt);
    if (cublas) cublasDestroy(cublas);
    if (cudnn) cudnnDestroy(cudnn);
    if (stream) cudaStreamDestroy(stream);
  }
};

// Device memory filled with 0x3c bytes: a small normal value in both fp32 (0.0115) and fp16 (1.06).
// Not zeros: a GPU draws less power on zeros and may clock higher than on real data.
inline void* device_buffer(Prepared* p, size_t bytes) {
  void* ptr = nullptr;
  if (cudaMalloc(&ptr, bytes ? bytes : 1) != cudaSuccess) return nullptr;
  p->buffers.push_back(ptr);
  if (cudaMemset(ptr, 0x3c, bytes ? bytes : 1) != cudaSuccess) return nullptr;
  return ptr;
}

inline size_t elements(const std::vector<int64_t>& dims) {
  size_t n = 1;
  for (int64_t d : dims) n *= static_cast<size_t>(d);
  return n;
}

inline cudnnConvolutionFwdAlgo_t conv_algorithm(const std::string& name) {
  if (name == "implicit_gemm") return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  if (name == "implicit_precomp_gemm") return CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM;
  if (name == "gemm") return CUDNN_CONVOLUTION_FWD_ALGO_GEMM;
  if (name == "direct") return CUDNN_CONVOLUTION_FWD_ALGO_DIRECT;
  if (name == "fft") return CUDNN_CONVOLUTION_FWD_ALGO_FFT;
  if (name == "fft_tiling") return CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING;
  if (name == "winograd") return CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD;
  return CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}

// Launch-time status checks: on failure record the reason in p->error.
inline bool launched(Prepared* p, cudnnStatus_t s, const char* what) {
  if (s == CUDNN_STATUS_SUCCESS) return true;
  p->error = std::string(what) + ": " + cudnnGetErrorString(s);
  return false;
}
inline bool launched(Prepared* p, cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return true;
  p->error = std::string(what) + ": " + cublasGetStatusString(s);
  return false;
}
inline bool launched(Prepared* p, cudaError_t s, const char* what) {
  if (s == cudaSuccess) return true;
  p->error = std::string(what) + ": " + cudaGetErrorString(s);
  return false;
}

inline bool alloc_failed(std::string* why) {
  *why = std::string("cudaMalloc failed (no CUDA device?): ") + cudaGetErrorString(cudaGetLastError());
  return false;
}

}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop
