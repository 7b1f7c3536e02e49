// cuDNN + cuBLAS calls for BenchCase: what a framework's CUDA backend calls for a layer. Header-only
// and free of Strata dependencies: `strata bench generate --backend cuda` copies it verbatim.
// Covered: convolution (every cudnnConvolutionFwdAlgo_t, fp32 and fp16 with tensor-op math, NCHW and
// NHWC), fused cudnnConvolutionBiasActivationForward, pooling, activations, GEMM via cublasGemmEx.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <functional>
#include <string>
#include <vector>

#include "bench_case.h"

namespace strata::lowerbound::cuda {

struct Prepared {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  std::vector<void*> buffers;
  std::vector<std::function<void()>> cleanups;
  std::function<void()> launch;  // enqueues the call on the default stream (no sync)
  std::string implementation;
  ~Prepared() {
    for (auto it = cleanups.rbegin(); it != cleanups.rend(); ++it) (*it)();
    for (void* b : buffers) cudaFree(b);
    if (cublas) cublasDestroy(cublas);
    if (cudnn) cudnnDestroy(cudnn);
  }
};

inline void* device_buffer(Prepared* p, size_t bytes) {
  void* ptr = nullptr;
  if (cudaMalloc(&ptr, bytes ? bytes : 1) != cudaSuccess) return nullptr;
  cudaMemset(ptr, 0, bytes ? bytes : 1);
  p->buffers.push_back(ptr);
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

// Sets up the call (allocations, descriptors, workspace): never timed. False with `why` when cuDNN
// or cuBLAS rejects the case (an algorithm not applicable to the shape, fp16 unsupported, no device).
inline bool prepare(const BenchCase& c, Prepared* p, std::string* why) {
  auto cudnn_ok = [&](cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    *why = std::string(what) + ": " + cudnnGetErrorString(s);
    return false;
  };
  const bool half = c.dtype == "f16";
  if (c.dtype == "bf16") {
    *why = "bf16 is benchmarked on the CPU backend only";
    return false;
  }
  const size_t elem = half ? 2 : 4;
  const cudnnDataType_t dt = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t fmt = c.layout == "nhwc" ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (c.op == "inner_product" || c.op == "matmul") {
    if (cublasCreate(&p->cublas) != CUBLAS_STATUS_SUCCESS) {
      *why = "cublasCreate failed (no CUDA device?)";
      return false;
    }
    int64_t m, n, k;
    if (c.op == "inner_product") {
      m = c.src[0][0], k = c.src[0][1], n = c.weights[0];
    } else {
      if (c.src[0].size() != 2) {
        *why = "batched matmul (rank > 2) is not benchmarked on CUDA yet";
        return false;
      }
      m = c.src[0][0], k = c.src[0][1], n = c.src[1][1];
    }
    void* a = device_buffer(p, static_cast<size_t>(m * k) * elem);
    void* b = device_buffer(p, static_cast<size_t>(k * n) * elem);
    void* d = device_buffer(p, static_cast<size_t>(m * n) * elem);
    if (!a || !b || !d) {
      *why = "cudaMalloc failed";
      return false;
    }
    cudaDataType_t t = half ? CUDA_R_16F : CUDA_R_32F;
    cublasComputeType_t compute = half ? CUBLAS_COMPUTE_32F_FAST_16F : CUBLAS_COMPUTE_32F;
    cublasHandle_t h = p->cublas;
    // Row-major D[m,n] = A[m,k] * B[k,n] is column-major D^T = B^T * A^T.
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m), static_cast<int>(k),
                   &one, b, t, static_cast<int>(n), a, t, static_cast<int>(k), &zero, d, t,
                   static_cast<int>(n), compute, CUBLAS_GEMM_DEFAULT);
    };
    p->implementation = half ? "cublasGemmEx(fp16, tensor op)" : "cublasGemmEx(fp32)";
    return true;
  }
  if (!cudnn_ok(cudnnCreate(&p->cudnn), "cudnnCreate")) return false;
  cudnnHandle_t h = p->cudnn;
  auto tensor = [&](const std::vector<int64_t>& d, cudnnTensorDescriptor_t* out) {
    if (d.size() != 4) {
      *why = "cuDNN benchmarks need rank-4 activations";
      return false;
    }
    cudnnCreateTensorDescriptor(out);
    cudnnTensorDescriptor_t desc = *out;
    p->cleanups.push_back([desc] { cudnnDestroyTensorDescriptor(desc); });
    return cudnn_ok(cudnnSetTensor4dDescriptor(desc, fmt, dt, static_cast<int>(d[0]), static_cast<int>(d[1]),
                                               static_cast<int>(d[2]), static_cast<int>(d[3])),
                    "cudnnSetTensor4dDescriptor");
  };
  cudnnTensorDescriptor_t x_desc, y_desc;
  if (!tensor(c.src[0], &x_desc) || !tensor(c.dst, &y_desc)) return false;
  void* x = device_buffer(p, elements(c.src[0]) * elem);
  void* y = device_buffer(p, elements(c.dst) * elem);
  if (!x || !y) {
    *why = "cudaMalloc failed (no CUDA device?)";
    return false;
  }
  if (c.op == "conv") {
    cudnnFilterDescriptor_t w_desc;
    cudnnCreateFilterDescriptor(&w_desc);
    p->cleanups.push_back([w_desc] { cudnnDestroyFilterDescriptor(w_desc); });
    if (!cudnn_ok(cudnnSetFilter4dDescriptor(w_desc, dt, fmt, static_cast<int>(c.weights[0]),
                                             static_cast<int>(c.weights[1]), static_cast<int>(c.weights[2]),
                                             static_cast<int>(c.weights[3])),
                  "cudnnSetFilter4dDescriptor"))
      return false;
    cudnnConvolutionDescriptor_t conv_desc;
    cudnnCreateConvolutionDescriptor(&conv_desc);
    p->cleanups.push_back([conv_desc] { cudnnDestroyConvolutionDescriptor(conv_desc); });
    if (c.pads_begin.size() != 2 || c.pads_begin != c.pads_end) {
      *why = "cuDNN needs symmetric 2-D padding";
      return false;
    }
    if (!cudnn_ok(cudnnSetConvolution2dDescriptor(
                      conv_desc, static_cast<int>(c.pads_begin[0]), static_cast<int>(c.pads_begin[1]),
                      static_cast<int>(c.strides[0]), static_cast<int>(c.strides[1]),
                      static_cast<int>(c.dilations[0]), static_cast<int>(c.dilations[1]),
                      CUDNN_CROSS_CORRELATION, half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT),
                  "cudnnSetConvolution2dDescriptor"))
      return false;
    cudnnSetConvolutionGroupCount(conv_desc, static_cast<int>(c.groups));
    cudnnSetConvolutionMathType(conv_desc, half ? CUDNN_TENSOR_OP_MATH : CUDNN_DEFAULT_MATH);
    cudnnConvolutionFwdAlgo_t alg = conv_algorithm(c.algorithm);
    size_t ws_bytes = 0;
    if (!cudnn_ok(
            cudnnGetConvolutionForwardWorkspaceSize(h, x_desc, w_desc, conv_desc, y_desc, alg, &ws_bytes),
            "algorithm not applicable"))
      return false;
    void* w = device_buffer(p, elements(c.weights) * elem);
    void* ws = device_buffer(p, ws_bytes);
    if (!w || !ws) {
      *why = "cudaMalloc failed";
      return false;
    }
    if (c.post_op == "relu") {
      cudnnTensorDescriptor_t b_desc;
      if (!tensor({1, c.weights[0], 1, 1}, &b_desc)) return false;
      cudnnActivationDescriptor_t act;
      cudnnCreateActivationDescriptor(&act);
      p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
      cudnnSetActivationDescriptor(act, CUDNN_ACTIVATION_RELU, CUDNN_NOT_PROPAGATE_NAN, 0.0);
      void* bias = device_buffer(p, static_cast<size_t>(c.weights[0]) * elem);
      p->launch = [=] {
        static const float one = 1.f, zero = 0.f;
        cudnnConvolutionBiasActivationForward(h, &one, x_desc, x, w_desc, w, conv_desc, alg, ws, ws_bytes,
                                              &zero, y_desc, y, b_desc, bias, act, y_desc, y);
      };
    } else {
      p->launch = [=] {
        static const float one = 1.f, zero = 0.f;
        cudnnConvolutionForward(h, &one, x_desc, x, w_desc, w, conv_desc, alg, ws, ws_bytes, &zero, y_desc,
                                y);
      };
    }
    p->implementation = "cudnn:" + c.algorithm + (half ? ":tensor_op" : "");
    return true;
  }
  if (c.op == "pool") {
    cudnnPoolingDescriptor_t pool;
    cudnnCreatePoolingDescriptor(&pool);
    p->cleanups.push_back([pool] { cudnnDestroyPoolingDescriptor(pool); });
    cudnnPoolingMode_t mode = c.algorithm == "max"           ? CUDNN_POOLING_MAX
                              : c.algorithm == "avg_include" ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (!cudnn_ok(
            cudnnSetPooling2dDescriptor(pool, mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(c.kernel[0]),
                                        static_cast<int>(c.kernel[1]), static_cast<int>(c.pads_begin[0]),
                                        static_cast<int>(c.pads_begin[1]), static_cast<int>(c.strides[0]),
                                        static_cast<int>(c.strides[1])),
            "cudnnSetPooling2dDescriptor"))
      return false;
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      cudnnPoolingForward(h, pool, &one, x_desc, x, &zero, y_desc, y);
    };
    p->implementation = "cudnnPoolingForward";
    return true;
  }
  if (c.op == "eltwise") {
    cudnnActivationDescriptor_t act;
    cudnnCreateActivationDescriptor(&act);
    p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
    cudnnActivationMode_t mode = c.algorithm == "logistic" ? CUDNN_ACTIVATION_SIGMOID
                                 : c.algorithm == "tanh"   ? CUDNN_ACTIVATION_TANH
                                 : c.algorithm == "clip"   ? CUDNN_ACTIVATION_CLIPPED_RELU
                                 : c.algorithm == "elu"    ? CUDNN_ACTIVATION_ELU
                                                           : CUDNN_ACTIVATION_RELU;
    cudnnSetActivationDescriptor(act, mode, CUDNN_NOT_PROPAGATE_NAN,
                                 c.algorithm == "clip" ? c.beta : c.alpha);
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      cudnnActivationForward(h, act, &one, x_desc, x, &zero, y_desc, y);
    };
    p->implementation = "cudnnActivationForward";
    return true;
  }
  *why = "op '" + c.op + "' is not benchmarked on CUDA yet";
  return false;
}

// Median-of-repetitions timing with CUDA events: `iterations` back-to-back launches per repetition,
// so the per-call time excludes host synchronization.
inline bool time_launches(Prepared* p, int repetitions, int iterations, std::vector<double>* per_call_ns,
                          std::string* why) {
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    *why = "cudaEventCreate failed";
    return false;
  }
  p->launch();  // warm-up
  bool ok = cudaDeviceSynchronize() == cudaSuccess;
  for (int r = 0; ok && r < repetitions; ++r) {
    cudaEventRecord(start);
    for (int i = 0; i < iterations; ++i) p->launch();
    cudaEventRecord(stop);
    ok = cudaEventSynchronize(stop) == cudaSuccess;
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    per_call_ns->push_back(static_cast<double>(ms) * 1e6 / iterations);
  }
  if (!ok) *why = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok;
}

}  // namespace strata::lowerbound::cuda
