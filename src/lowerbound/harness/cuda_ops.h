// cuDNN + cuBLAS calls for BenchCase: what a framework's CUDA backend calls for a layer (Benanza
// Table II). Header-only and free of Strata dependencies: `strata bench generate --backend cuda`
// copies it verbatim, so the generated standalone benchmarks and `strata bench run` time the same code.
//
// Covered (op -> call):
//   conv          cudnnConvolutionForward with one cudnnConvolutionFwdAlgo_t per case (+ cudnnAddTensor
//                 for the bias), or cudnnConvolutionBiasActivationForward for the fused Conv+Bias+Relu
//   inner_product cublasGemmEx ("gemm_ex") or cublasLtMatmul with the bias epilogue
//   matmul        cublasGemmEx / cublasGemmStridedBatchedEx, or strided-batched cublasLtMatmul
//                 ("lt_heuristic_<i>": the i-th algorithm cuBLASLt's heuristic returns for the shape)
//   pool          cudnnPoolingForward (2-D)
//   eltwise       cudnnActivationForward; leaky_relu as cudnnOpTensor max(x, alpha * x)
//   batch_norm    cudnnBatchNormalizationForwardInference (spatial, global statistics)
//   softmax       cudnnSoftmaxForward (accurate, over one axis)
//   binary        cudnnOpTensor add / mul (sub as add with a -1 scale; cuDNN has no division)
//   concat        one cudaMemcpy2DAsync per input (device-to-device copies into the output)
//   lrn           cudnnLRNCrossChannelForward
// fp32 and fp16 (tensor-op math), NCHW and NHWC. `prepare` looks the op up in kPreparers (one
// preparer per op); the geometry each call needs is in cuda_geometry.h. A case cuDNN/cuBLAS cannot run (an
// algorithm that does not apply to the shape, an operand layout the call cannot express, bf16) fails
// `prepare` with the reason, which `strata bench run` stores as "unsupported" and the generated code reports.
#pragma once

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bench_case.h"
#include "cuda_cudnn.h"
#include "cuda_gemm.h"
#include "cuda_geometry.h"
#include "cuda_prepared.h"

// Everything below uses cuDNN's legacy (descriptor) API on purpose: it is what frameworks' CUDA
// backends call and what Table II names, and cuDNN 9 still ships it in libcudnn_ops. cuDNN 9 marks it
// deprecated, a warning it only emits when CUDNN_WARN_DEPRECATED is defined; silencing it here keeps
// -Werror builds that define it working (the tests build this header with it defined).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace strata::lowerbound::cuda {

// ---- The table: one preparer per BenchCase op ----

using Preparer = bool (*)(const BenchCase&, Prepared*, std::string*);
struct OpPreparer {
  std::string_view op;
  Preparer prepare;
};
inline constexpr OpPreparer kPreparers[] = {
    {"conv", prepare_conv},       {"inner_product", prepare_gemm}, {"matmul", prepare_gemm},
    {"pool", prepare_pool},       {"eltwise", prepare_eltwise},    {"batch_norm", prepare_batch_norm},
    {"softmax", prepare_softmax}, {"binary", prepare_binary},      {"concat", prepare_concat},
    {"lrn", prepare_lrn},
};

// Sets up the call (allocations, descriptors, workspace): never timed. False with `why` when cuDNN
// or cuBLAS rejects the case (an algorithm not applicable to the shape, fp16 unsupported, no device).
inline bool prepare(const BenchCase& c, Prepared* p, std::string* why) {
  if (!supported(c, why)) return false;
  for (const OpPreparer& entry : kPreparers) {
    if (c.op != entry.op) continue;
    if (cudaStreamCreateWithFlags(&p->stream, cudaStreamNonBlocking) != cudaSuccess) {
      *why = std::string("cudaStreamCreate failed (no CUDA device?): ") + cudaGetErrorString(cudaGetLastError());
      return false;
    }
    if (!entry.prepare(c, p, why)) return false;
    // The buffers were filled on the legacy stream, which a non-blocking stream does not wait for.
    if (cudaDeviceSynchronize() != cudaSuccess) {
      *why = std::string("CUDA error while preparing: ") + cudaGetErrorString(cudaGetLastError());
      return false;
    }
    return true;
  }
  *why = "op '" + c.op + "' has no CUDA benchmark";
  return false;
}

// `iterations` calls captured into one CUDA graph: replaying it runs them back to back on the GPU
// with no host work in between. Timing the calls as the host enqueues them measured the host instead
// whenever a call's host side outlasts its kernels: on an H100, cuDNN 9's legacy convolution call
// took ~30 us of host time for a 7 us kernel, and the "lower bound" came out 4-5x above the kernel
// PyTorch ran. False when the library cannot be captured (then the caller times plain launches).
inline bool capture_calls(Prepared* p, int iterations, cudaGraphExec_t* exec) {
  if (cudaStreamBeginCapture(p->stream, cudaStreamCaptureModeThreadLocal) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  bool ok = true;
  for (int i = 0; ok && i < iterations; ++i) ok = p->launch();
  cudaGraph_t graph = nullptr;
  const bool ended = cudaStreamEndCapture(p->stream, &graph) == cudaSuccess && graph != nullptr;
  bool instantiated = ok && ended && cudaGraphInstantiate(exec, graph, 0) == cudaSuccess;
  if (graph != nullptr) cudaGraphDestroy(graph);
  // Upload and run it once untimed: the first replay of a graph pays its setup.
  if (instantiated && (cudaGraphLaunch(*exec, p->stream) != cudaSuccess ||
                       cudaStreamSynchronize(p->stream) != cudaSuccess)) {
    cudaGraphExecDestroy(*exec);
    instantiated = false;
  }
  if (!instantiated) {
    cudaGetLastError();  // a capture the library refused leaves an error behind: not the case's
    p->error.clear();
  }
  return instantiated;
}

// Median-of-repetitions timing with CUDA events around `iterations` calls per repetition, replayed
// from a CUDA graph when the calls can be captured (*method "cuda_graph": GPU time, launch gaps of the
// graph included), else enqueued by the host one by one (*method "cuda_events": host-bound when the
// calls' host side is slower than their kernels).
inline bool time_launches(Prepared* p, int repetitions, int iterations, std::vector<double>* per_call_ns,
                          std::string* why, std::string* method = nullptr) {
  cudaEvent_t start, stop;
  if (cudaEventCreate(&start) != cudaSuccess || cudaEventCreate(&stop) != cudaSuccess) {
    *why = "cudaEventCreate failed";
    return false;
  }
  bool ok = p->launch();  // warm-up; a call the library rejects is an error, never a timing
  if (!ok) *why = p->error;
  if (ok && cudaDeviceSynchronize() != cudaSuccess) {
    ok = false;
    *why = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
  }
  cudaGraphExec_t exec = nullptr;
  const bool graph = ok && capture_calls(p, iterations, &exec);
  if (method != nullptr) *method = graph ? "cuda_graph" : "cuda_events";
  for (int r = 0; ok && r < repetitions; ++r) {
    cudaEventRecord(start, p->stream);
    if (graph) {
      ok = cudaGraphLaunch(exec, p->stream) == cudaSuccess;
      if (!ok) p->error = std::string("cudaGraphLaunch: ") + cudaGetErrorString(cudaGetLastError());
    } else {
      for (int i = 0; ok && i < iterations; ++i) ok = p->launch();
    }
    cudaEventRecord(stop, p->stream);
    if (!ok) {
      *why = p->error;
      break;
    }
    if (cudaEventSynchronize(stop) != cudaSuccess) {
      ok = false;
      *why = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
      break;
    }
    float ms = 0;
    cudaEventElapsedTime(&ms, start, stop);
    per_call_ns->push_back(static_cast<double>(ms) * 1e6 / iterations);
  }
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok;
}
}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop
