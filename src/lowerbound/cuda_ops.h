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
// fp32 and fp16 (tensor-op math), NCHW and NHWC. A case cuDNN/cuBLAS cannot run (an algorithm that
// does not apply to the shape, an operand layout the call cannot express, bf16) fails `prepare` with
// the reason, which `strata bench run` stores as "unsupported" and the generated code reports.
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
#include <vector>

#include "bench_case.h"

// Everything below uses cuDNN's legacy (descriptor) API on purpose: it is what frameworks' CUDA
// backends call and what Table II names, and cuDNN 9 still ships it in libcudnn_ops. cuDNN 9 marks it
// deprecated, a warning it only emits when CUDNN_WARN_DEPRECATED is defined; silencing it here keeps
// -Werror builds that define it working (the tests build this header with it defined).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace strata::lowerbound::cuda {

// ---- Geometry: what each call needs from a BenchCase. No CUDA calls, so testable without a GPU. ----

// cuDNN tensor dimensions (logical N, C, spatial... order). Ranks below 4 get trailing 1s, so an
// N x C tensor is N x C x 1 x 1 and per-channel semantics hold; empty when the rank is 0 or above 5
// or a dimension does not fit cuDNN's int.
inline std::vector<int> cudnn_dims(const std::vector<int64_t>& shape) {
  if (shape.empty() || shape.size() > 5) return {};
  std::vector<int> d;
  for (int64_t v : shape) {
    if (v <= 0 || v > INT_MAX) return {};
    d.push_back(static_cast<int>(v));
  }
  while (d.size() < 4) d.push_back(1);
  return d;
}

// Number of heuristic results requested from cuBLASLt; the plan has one case per rank.
constexpr int kLtHeuristicCount = 8;

// "lt_heuristic_3" -> 3; -1 for any other algorithm name.
inline int lt_heuristic_index(const std::string& algorithm) {
  const std::string prefix = "lt_heuristic_";
  if (algorithm.rfind(prefix, 0) != 0 || algorithm.size() == prefix.size()) return -1;
  int index = 0;
  for (size_t i = prefix.size(); i < algorithm.size(); ++i) {
    char ch = algorithm[i];
    if (ch < '0' || ch > '9' || index > 1000) return -1;
    index = index * 10 + (ch - '0');
  }
  return index;
}

// Row-major Y[m, n] = X[m, k] * op(W), `batch` times. cuBLAS is column-major, so the call computes
// Y^T (n x m) = op(A) * B with A = W and B = X^T (which is X's memory unchanged): inner_product
// weights are O x I (N x K, a framework's Linear: transa = T), matmul's second operand is K x N.
struct GemmGeometry {
  int64_t m = 0, n = 0, k = 0;
  int64_t batch = 1;
  bool transpose_w = false;
  int64_t lda = 0, ldb = 0, ldd = 0;
  int64_t stride_x = 0, stride_w = 0, stride_y = 0;  // elements between batch matrices; 0: broadcast
  int64_t x_elements = 0, w_elements = 0, y_elements = 0;
};

inline bool gemm_geometry(const BenchCase& c, GemmGeometry* g, std::string* why) {
  if (c.src.empty() || c.dst.size() < 2) {
    *why = "GEMM needs an input and an output of rank >= 2";
    return false;
  }
  const std::vector<int64_t>& x = c.src[0];
  if (c.op == "inner_product") {
    if (x.size() != 2 || c.weights.size() != 2 || c.dst.size() != 2 || c.weights[1] != x[1] ||
        c.dst[0] != x[0] || c.dst[1] != c.weights[0]) {
      *why = "inner product needs X[M,K], weights[N,K] and Y[M,N]";
      return false;
    }
    g->m = x[0], g->k = x[1], g->n = c.weights[0];
    g->transpose_w = true;
  } else {
    const size_t r = c.dst.size();
    if (c.src.size() != 2 || x.size() != r || c.src[1].size() != r) {
      *why = "MatMul operands and output must have the same rank (>= 2) on CUDA";
      return false;
    }
    const std::vector<int64_t>& w = c.src[1];
    g->m = x[r - 2], g->k = x[r - 1], g->n = w[r - 1];
    if (w[r - 2] != g->k || c.dst[r - 2] != g->m || c.dst[r - 1] != g->n) {
      *why = "MatMul shapes do not chain (X[..,M,K] * W[..,K,N] = Y[..,M,N])";
      return false;
    }
    // Strided batch: each operand either has the output's batch dimensions or none (all 1, stride 0).
    auto batch_stride = [&](const std::vector<int64_t>& s, int64_t matrix, int64_t* stride) {
      bool same = true, ones = true;
      for (size_t i = 0; i + 2 < r; ++i) {
        same = same && s[i] == c.dst[i];
        ones = ones && s[i] == 1;
      }
      *stride = same ? matrix : 0;
      return same || ones;
    };
    for (size_t i = 0; i + 2 < r; ++i) g->batch *= c.dst[i];
    if (!batch_stride(x, g->m * g->k, &g->stride_x) || !batch_stride(w, g->k * g->n, &g->stride_w)) {
      *why = "MatMul broadcasts only some batch dimensions: not expressible as one strided-batched GEMM";
      return false;
    }
  }
  if (g->m > INT_MAX || g->n > INT_MAX || g->k > INT_MAX || g->batch > INT_MAX) {
    *why = "GEMM dimensions exceed cuBLAS's int";
    return false;
  }
  g->lda = g->transpose_w ? g->k : g->n;
  g->ldb = g->k;
  g->ldd = g->n;
  g->stride_y = g->m * g->n;
  g->x_elements = (g->stride_x ? g->batch : 1) * g->m * g->k;
  g->w_elements = (g->stride_w ? g->batch : 1) * g->k * g->n;
  g->y_elements = g->batch * g->m * g->n;
  return true;
}

// cuDNN pooling pads both sides of a dimension equally; ONNX pads (and ceil_mode, which the plan
// turns into extra end padding) need not be. Per dimension: pads_begin when cuDNN's output size
// 1 + (in + 2 * pad - window) / stride then matches the planned output, else the larger pad when that
// matches (same windows, one more padded position that no window reaches), else no equivalent.
inline bool pool_padding(const BenchCase& c, std::vector<int>* pad, std::string* why) {
  if (c.src.empty() || c.src[0].size() != 4 || c.dst.size() != 4 || c.kernel.size() != 2 ||
      c.strides.size() != 2 || c.pads_begin.size() != 2 || c.pads_end.size() != 2) {
    *why = "the CUDA backend benchmarks 2-D pooling only (cudnnSetPooling2dDescriptor)";
    return false;
  }
  pad->clear();
  for (size_t d = 0; d < 2; ++d) {
    const int64_t in = c.src[0][2 + d], out = c.dst[2 + d], window = c.kernel[d], stride = c.strides[d];
    auto cudnn_out = [&](int64_t p) { return 1 + (in + 2 * p - window) / stride; };
    int64_t chosen = -1;
    if (stride > 0 && window > 0)
      for (int64_t p : {c.pads_begin[d], std::max(c.pads_begin[d], c.pads_end[d])})
        if (chosen < 0 && p < window && cudnn_out(p) == out) chosen = p;
    if (chosen < 0) {
      *why = "pooling padding " + std::to_string(c.pads_begin[d]) + "/" + std::to_string(c.pads_end[d]) +
             " has no symmetric cuDNN equivalent giving output size " + std::to_string(out);
      return false;
    }
    pad->push_back(static_cast<int>(chosen));
  }
  return true;
}

// cudnnOpTensor computes C = op(alpha1 * A, alpha2 * B) + beta * C where A has C's shape and B may be
// broadcast (each dimension equal or 1). The operand of the output's shape becomes A.
struct BinaryGeometry {
  int a = 0, b = 1;  // indices into BenchCase::src
  float alpha1 = 1.f, alpha2 = 1.f;
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
};

inline bool binary_geometry(const BenchCase& c, BinaryGeometry* g, std::string* why) {
  if (c.src.size() != 2) {
    *why = "binary op needs two operands";
    return false;
  }
  if (c.algorithm == "div") {
    *why = "cudnnOpTensor has no division (frameworks run their own element-wise kernel for Div)";
    return false;
  }
  if (c.algorithm != "add" && c.algorithm != "sub" && c.algorithm != "mul") {
    *why = "no cudnnOpTensor operation for binary '" + c.algorithm + "'";
    return false;
  }
  g->op = c.algorithm == "mul" ? CUDNN_OP_TENSOR_MUL : CUDNN_OP_TENSOR_ADD;
  if (c.src[0] == c.dst) {
    g->a = 0, g->b = 1;
  } else if (c.src[1] == c.dst) {
    g->a = 1, g->b = 0;
  } else {
    *why = "cudnnOpTensor needs one operand of the output's shape (here both are broadcast)";
    return false;
  }
  const std::vector<int64_t>& bshape = c.src[static_cast<size_t>(g->b)];
  if (bshape.size() != c.dst.size()) {
    *why = "binary operands must have the output's rank";
    return false;
  }
  for (size_t i = 0; i < bshape.size(); ++i)
    if (bshape[i] != c.dst[i] && bshape[i] != 1) {
      *why = "binary operand does not broadcast to the output";
      return false;
    }
  if (c.algorithm == "sub") {  // src0 - src1, whichever operand is A
    g->alpha1 = g->a == 0 ? 1.f : -1.f;
    g->alpha2 = g->a == 0 ? -1.f : 1.f;
  }
  return true;
}

// cudnnSoftmaxForward's channel mode normalizes over C for every (N, H, W): viewing the tensor as
// outer x axis x inner x 1 (contiguous) makes that the softmax over one axis, whatever the rank.
inline bool softmax_dims(const BenchCase& c, std::vector<int>* dims, std::string* why) {
  if (c.src.empty() || c.axis < 0 || c.axis >= static_cast<int64_t>(c.src[0].size())) {
    *why = "softmax axis outside the input's rank";
    return false;
  }
  int64_t outer = 1, inner = 1;
  const std::vector<int64_t>& s = c.src[0];
  for (size_t i = 0; i < s.size(); ++i) {
    if (static_cast<int64_t>(i) < c.axis) outer *= s[i];
    if (static_cast<int64_t>(i) > c.axis) inner *= s[i];
  }
  const int64_t axis = s[static_cast<size_t>(c.axis)];
  if (outer > INT_MAX || inner > INT_MAX || axis > INT_MAX) {
    *why = "softmax dimensions exceed cuDNN's int";
    return false;
  }
  *dims = {static_cast<int>(outer), static_cast<int>(axis), static_cast<int>(inner), 1};
  return true;
}

// One device-to-device 2-D copy: `height` rows of `width` bytes.
struct CopyRegion {
  size_t dst_offset = 0, dst_pitch = 0, src_pitch = 0, width = 0, height = 0;
};

// Concat as copies: in memory order (NHWC puts channels last), every input is `outer` contiguous
// blocks of (its extent along the axis x everything after it), interleaved into the output's rows.
inline bool concat_copies(const BenchCase& c, size_t element_bytes, std::vector<CopyRegion>* out,
                          std::string* why) {
  const size_t rank = c.dst.size();
  if (c.src.empty() || rank == 0 || c.axis < 0 || c.axis >= static_cast<int64_t>(rank)) {
    *why = "concat axis outside the output's rank";
    return false;
  }
  std::vector<size_t> order(rank);  // memory order of the logical dimensions
  for (size_t i = 0; i < rank; ++i) order[i] = i;
  if (c.layout == "nhwc" && rank >= 3) {
    for (size_t i = 1; i + 1 < rank; ++i) order[i] = i + 1;
    order[rank - 1] = 1;
  }
  size_t axis_pos = 0;
  while (order[axis_pos] != static_cast<size_t>(c.axis)) ++axis_pos;
  auto row_elements = [&](const std::vector<int64_t>& s) {
    size_t n = 1;
    for (size_t i = axis_pos; i < rank; ++i) n *= static_cast<size_t>(s[order[i]]);
    return n;
  };
  size_t outer = 1;
  for (size_t i = 0; i < axis_pos; ++i) outer *= static_cast<size_t>(c.dst[order[i]]);
  const size_t dst_row = row_elements(c.dst) * element_bytes;
  int64_t along_axis = 0;
  size_t offset = 0;
  out->clear();
  for (const std::vector<int64_t>& s : c.src) {
    if (s.size() != rank) {
      *why = "concat inputs must have the output's rank";
      return false;
    }
    for (size_t i = 0; i < rank; ++i)
      if (static_cast<int64_t>(i) != c.axis && s[i] != c.dst[i]) {
        *why = "concat inputs differ from the output outside the axis";
        return false;
      }
    along_axis += s[static_cast<size_t>(c.axis)];
    const size_t width = row_elements(s) * element_bytes;
    out->push_back(CopyRegion{offset, dst_row, width, width, outer});
    offset += width;
  }
  if (along_axis != c.dst[static_cast<size_t>(c.axis)]) {
    *why = "concat inputs do not add up to the output along the axis";
    return false;
  }
  return true;
}

// Whether cuDNN/cuBLAS can express this case at all, from the case alone (no CUDA calls): false with
// the reason for what the library cannot do (Div, 3-D pooling, asymmetric convolution padding, bf16,
// ...). `prepare` checks this first, so the reason is the same with or without a GPU.
inline bool supported(const BenchCase& c, std::string* why) {
  if (c.dtype != "f32" && c.dtype != "f16") {
    *why = c.dtype + " is not benchmarked on the CUDA backend (fp32 and fp16 are; bf16 on CPU)";
    return false;
  }
  if (c.src.empty() || c.src[0].empty() || c.dst.empty()) {
    *why = "case without input or output shape";
    return false;
  }
  if (c.op == "inner_product" || c.op == "matmul") {
    if (c.algorithm != "gemm_ex" && c.algorithm != "default" && lt_heuristic_index(c.algorithm) < 0) {
      *why = "unknown GEMM algorithm '" + c.algorithm + "' (gemm_ex or lt_heuristic_<i>)";
      return false;
    }
    GemmGeometry g;
    return gemm_geometry(c, &g, why);
  }
  if (c.op == "concat") {
    std::vector<CopyRegion> copies;
    return concat_copies(c, 4, &copies, why);
  }
  if (c.op == "softmax") {
    std::vector<int> d;
    return softmax_dims(c, &d, why);
  }
  for (const std::vector<int64_t>& s : c.src)
    if (cudnn_dims(s).empty()) {
      *why = "cuDNN tensors have 1 to 5 dimensions of at most INT_MAX (got rank " + std::to_string(s.size()) +
             ")";
      return false;
    }
  if (cudnn_dims(c.dst).empty()) {
    *why = "cuDNN tensors have 1 to 5 dimensions of at most INT_MAX (got rank " +
           std::to_string(c.dst.size()) + ")";
    return false;
  }
  if (c.op == "binary") {
    BinaryGeometry g;
    return binary_geometry(c, &g, why);
  }
  if (c.op == "pool") {
    std::vector<int> pad;
    return pool_padding(c, &pad, why);
  }
  if (c.op == "conv") {
    if (c.src[0].size() != 4 || c.weights.size() != 4 || c.strides.size() != 2 || c.dilations.size() != 2 ||
        c.pads_begin.size() != 2 || c.pads_end.size() != 2) {
      *why = "the CUDA backend benchmarks 2-D convolution only (cudnnSetConvolution2dDescriptor)";
      return false;
    }
    if (c.pads_begin != c.pads_end) {
      *why =
          "cuDNN convolution pads both sides equally; this Conv's padding is asymmetric (a framework "
          "inserts a separate Pad first)";
      return false;
    }
    // cudnnConvolutionBiasActivationForward: y = act(conv(x) + alpha2 * z + bias), act ReLU or the
    // identity; other activations would need cuDNN's graph API, which this backend does not use.
    if (!c.post_op.empty() && c.post_op != "relu" && c.post_op != "sum" && c.post_op != "sum+relu") {
      *why = "cudnnConvolutionBiasActivationForward fuses a residual (z) and ReLU only, not post-ops '" +
             c.post_op + "' (that needs cuDNN's graph API)";
      return false;
    }
    if (c.post_op == "sum" && c.algorithm != "implicit_precomp_gemm") {
      *why =
          "cudnnConvolutionBiasActivationForward takes the identity activation (a residual without ReLU) "
          "only with IMPLICIT_PRECOMP_GEMM";
      return false;
    }
    return true;
  }
  if (c.op == "eltwise") {
    if (c.algorithm == "leaky_relu" && (c.alpha < 0 || c.alpha > 1)) {
      // Computed as max(x, slope * x), which is leaky ReLU only for a slope in [0, 1].
      *why = "leaky ReLU slope outside [0, 1] has no cuDNN equivalent";
      return false;
    }
    if (c.algorithm == "clip" && c.alpha != 0) {
      *why = "cuDNN's clipped ReLU clips to [0, max]; this Clip's minimum is not 0";
      return false;
    }
    if (c.algorithm != "relu" && c.algorithm != "logistic" && c.algorithm != "tanh" &&
        c.algorithm != "clip" && c.algorithm != "elu" && c.algorithm != "leaky_relu") {
      *why = "no cuDNN activation for '" + c.algorithm + "'";
      return false;
    }
    return true;
  }
  if (c.op == "batch_norm") {
    if (c.src[0].size() < 2) {
      *why = "batch normalization input has no channel dimension";
      return false;
    }
    return true;
  }
  if (c.op == "lrn") {
    const int64_t size = c.kernel.empty() ? 5 : c.kernel[0];
    if (size < CUDNN_LRN_MIN_N || size > CUDNN_LRN_MAX_N || c.beta < CUDNN_LRN_MIN_BETA) {
      *why = "LRN size " + std::to_string(size) + " or beta outside cuDNN's range (size 1..16, beta >= 0.01)";
      return false;
    }
    return true;
  }
  *why = "op '" + c.op + "' has no CUDA benchmark";
  return false;
}

// ---- Setup and launch ----

struct Prepared {
  cudnnHandle_t cudnn = nullptr;
  cublasHandle_t cublas = nullptr;
  cublasLtHandle_t cublas_lt = nullptr;
  std::vector<void*> buffers;
  std::vector<std::function<void()>> cleanups;
  // Enqueues the call on the default stream (no sync). False when the library rejects it at run time;
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

// cuBLAS / cuBLASLt GEMM: "gemm_ex" (cublasGemmEx, the strided-batched form when batched) or
// "lt_heuristic_<i>" (cublasLtMatmul with the i-th heuristic result; fewer results: not applicable).
inline bool prepare_gemm(const BenchCase& c, Prepared* p, std::string* why) {
  GemmGeometry g;
  if (!gemm_geometry(c, &g, why)) return false;
  const bool half = c.dtype == "f16";
  const size_t elem = half ? 2 : 4;
  const cudaDataType_t t = half ? CUDA_R_16F : CUDA_R_32F;
  const bool bias = c.bias && c.op == "inner_product";
  void* x = device_buffer(p, static_cast<size_t>(g.x_elements) * elem);
  void* w = device_buffer(p, static_cast<size_t>(g.w_elements) * elem);
  void* y = device_buffer(p, static_cast<size_t>(g.y_elements) * elem);
  void* b = bias ? device_buffer(p, static_cast<size_t>(g.n) * elem) : nullptr;
  if (!x || !w || !y || (bias && !b)) {
    *why = std::string("cudaMalloc failed (no CUDA device?): ") + cudaGetErrorString(cudaGetLastError());
    return false;
  }
  const cublasOperation_t transa = g.transpose_w ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int lt_index = lt_heuristic_index(c.algorithm);
  if (c.algorithm == "gemm_ex" || c.algorithm == "default") {
    if (cublasCreate(&p->cublas) != CUBLAS_STATUS_SUCCESS) {
      *why = "cublasCreate failed (no CUDA device?)";
      return false;
    }
    // fp16: fp32 accumulation allowed to use fp16 tensor cores, as frameworks ask for.
    const cublasComputeType_t compute = half ? CUBLAS_COMPUTE_32F_FAST_16F : CUBLAS_COMPUTE_32F;
    cublasHandle_t h = p->cublas;
    // With a bias a framework's addmm first broadcasts it into Y, then accumulates: beta = 1.
    const float beta = bias ? 1.f : 0.f;
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
    } else {
      const int batch = static_cast<int>(g.batch);
      const long long sw = g.stride_w, sx = g.stride_x, sy = g.stride_y;
      p->launch = [=] {
        static const float one = 1.f;
        return launched(
            p,
            cublasGemmStridedBatchedEx(h, transa, CUBLAS_OP_N, m, n, k, &one, w, t, lda, sw, x, t, ldb, sx,
                                       &beta, y, t, ldd, sy, batch, compute, CUBLAS_GEMM_DEFAULT),
            "cublasGemmStridedBatchedEx");
      };
      p->implementation = std::string("cublasGemmStridedBatchedEx(") + (half ? "fp16, tensor op" : "fp32") +
                          ", batch " + std::to_string(batch) + ")";
    }
    return true;
  }
  auto lt_ok = [&](cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return true;
    *why = std::string(what) + ": " + cublasGetStatusString(s);
    return false;
  };
  if (!lt_ok(cublasLtCreate(&p->cublas_lt), "cublasLtCreate (no CUDA device?)")) return false;
  // fp16 inputs with fp32 accumulation and scale: cuBLASLt picks tensor-core kernels itself.
  cublasLtMatmulDesc_t op = nullptr;
  if (!lt_ok(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F), "cublasLtMatmulDescCreate"))
    return false;
  p->cleanups.push_back([op] { cublasLtMatmulDescDestroy(op); });
  const cublasOperation_t transb = CUBLAS_OP_N;
  if (!lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &transa, sizeof transa),
             "cublasLtMatmulDescSetAttribute(TRANSA)") ||
      !lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &transb, sizeof transb),
             "cublasLtMatmulDescSetAttribute(TRANSB)"))
    return false;
  if (bias) {  // one call, as frameworks' Linear does: D = A * B + bias (per output feature)
    const cublasLtEpilogue_t epilogue = CUBLASLT_EPILOGUE_BIAS;
    if (!lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue),
               "cublasLtMatmulDescSetAttribute(EPILOGUE)") ||
        !lt_ok(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &b, sizeof b),
               "cublasLtMatmulDescSetAttribute(BIAS_POINTER)"))
      return false;
  }
  auto layout = [&](uint64_t rows, uint64_t cols, int64_t ld, int64_t stride, cublasLtMatrixLayout_t* out) {
    if (!lt_ok(cublasLtMatrixLayoutCreate(out, t, rows, cols, ld), "cublasLtMatrixLayoutCreate"))
      return false;
    cublasLtMatrixLayout_t l = *out;
    p->cleanups.push_back([l] { cublasLtMatrixLayoutDestroy(l); });
    if (g.batch == 1) return true;
    const int32_t count = static_cast<int32_t>(g.batch);
    return lt_ok(
               cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
               "cublasLtMatrixLayoutSetAttribute(BATCH_COUNT)") &&
           lt_ok(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                  sizeof stride),
                 "cublasLtMatrixLayoutSetAttribute(STRIDED_BATCH_OFFSET)");
  };
  // A as stored: transposed weights are K x N (ld K), plain ones N x K (ld N); B = X^T is K x M.
  const uint64_t m = static_cast<uint64_t>(g.m), n = static_cast<uint64_t>(g.n),
                 k = static_cast<uint64_t>(g.k);
  cublasLtMatrixLayout_t a_desc = nullptr, b_desc = nullptr, d_desc = nullptr;
  if (!layout(g.transpose_w ? k : n, g.transpose_w ? n : k, g.lda, g.stride_w, &a_desc) ||
      !layout(k, m, g.ldb, g.stride_x, &b_desc) || !layout(n, m, g.ldd, g.stride_y, &d_desc))
    return false;
  // Workspace cap as recent PyTorch sets for cuBLASLt on Hopper-class GPUs (lets split-K algorithms in).
  const uint64_t max_workspace = uint64_t{32} << 20;
  cublasLtMatmulPreference_t pref = nullptr;
  if (!lt_ok(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate")) return false;
  p->cleanups.push_back([pref] { cublasLtMatmulPreferenceDestroy(pref); });
  if (!lt_ok(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &max_workspace, sizeof max_workspace),
             "cublasLtMatmulPreferenceSetAttribute(MAX_WORKSPACE_BYTES)"))
    return false;
  const int requested = std::max(kLtHeuristicCount, lt_index + 1);
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(requested));
  int returned = 0;
  if (!lt_ok(cublasLtMatmulAlgoGetHeuristic(p->cublas_lt, op, a_desc, b_desc, d_desc, d_desc, pref, requested,
                                            results.data(), &returned),
             "cublasLtMatmulAlgoGetHeuristic"))
    return false;
  if (lt_index >= returned) {
    *why = "cuBLASLt's heuristic returned " + std::to_string(returned) + " algorithms for this GEMM, not " +
           std::to_string(lt_index + 1);
    return false;
  }
  const cublasLtMatmulHeuristicResult_t& r = results[static_cast<size_t>(lt_index)];
  if (!lt_ok(r.state, "cuBLASLt heuristic result")) return false;
  const size_t ws_bytes = r.workspaceSize;
  void* ws = ws_bytes ? device_buffer(p, ws_bytes) : nullptr;
  if (ws_bytes && !ws) {
    *why = "cudaMalloc of the cuBLASLt workspace failed";
    return false;
  }
  const cublasLtMatmulAlgo_t algo = r.algo;
  cublasLtHandle_t lt = p->cublas_lt;
  p->launch = [=] {
    static const float one = 1.f, zero = 0.f;
    return launched(p,
                    cublasLtMatmul(lt, op, &one, w, a_desc, x, b_desc, &zero, y, d_desc, y, d_desc, &algo, ws,
                                   ws_bytes, 0),
                    "cublasLtMatmul");
  };
  // The algorithm's configuration, so rows in the database say which kernel family each rank was.
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
  p->implementation = "cublasLtMatmul(" + std::string(half ? "fp16" : "fp32") +
                      (bias ? ", bias epilogue" : "") +
                      (g.batch > 1 ? ", batch " + std::to_string(g.batch) : std::string()) +
                      "):algo=" + std::to_string(id) + ",tile=" + std::to_string(tile) +
                      ",stages=" + std::to_string(stages) + ",splitk=" + std::to_string(splitk) +
                      ",reduction=" + std::to_string(reduction) + ",swizzle=" + std::to_string(swizzle) +
                      ",custom=" + std::to_string(custom) + ",workspace=" + std::to_string(ws_bytes);
  return true;
}

// Sets up the call (allocations, descriptors, workspace): never timed. False with `why` when cuDNN
// or cuBLAS rejects the case (an algorithm not applicable to the shape, fp16 unsupported, no device).
inline bool prepare(const BenchCase& c, Prepared* p, std::string* why) {
  auto cudnn_ok = [&](cudnnStatus_t s, const char* what) {
    if (s == CUDNN_STATUS_SUCCESS) return true;
    *why = std::string(what) + ": " + cudnnGetErrorString(s);
    return false;
  };
  if (!supported(c, why)) return false;
  const bool half = c.dtype == "f16";
  const size_t elem = half ? 2 : 4;
  const cudnnDataType_t dt = half ? CUDNN_DATA_HALF : CUDNN_DATA_FLOAT;
  const cudnnTensorFormat_t fmt = c.layout == "nhwc" ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  if (c.op == "inner_product" || c.op == "matmul") return prepare_gemm(c, p, why);
  if (c.op == "concat") {
    std::vector<CopyRegion> copies;
    if (!concat_copies(c, elem, &copies, why)) return false;
    std::vector<const void*> srcs;
    bool allocated = true;
    for (const std::vector<int64_t>& s : c.src) {
      srcs.push_back(device_buffer(p, elements(s) * elem));
      allocated = allocated && srcs.back();
    }
    char* dst = static_cast<char*>(device_buffer(p, elements(c.dst) * elem));
    if (!allocated || !dst) {
      *why = std::string("cudaMalloc failed (no CUDA device?): ") + cudaGetErrorString(cudaGetLastError());
      return false;
    }
    p->launch = [=] {
      for (size_t i = 0; i < copies.size(); ++i) {
        const CopyRegion& r = copies[i];
        if (!launched(p,
                      cudaMemcpy2DAsync(dst + r.dst_offset, r.dst_pitch, srcs[i], r.src_pitch, r.width,
                                        r.height, cudaMemcpyDeviceToDevice, 0),
                      "cudaMemcpy2DAsync"))
          return false;
      }
      return true;
    };
    p->implementation = "cudaMemcpy2DAsync x" + std::to_string(copies.size());
    return true;
  }
  // Everything else is cuDNN on activation tensors.
  if (!cudnn_ok(cudnnCreate(&p->cudnn), "cudnnCreate (no CUDA device?)")) return false;
  cudnnHandle_t h = p->cudnn;
  auto descriptor = [&](const std::vector<int>& d, cudnnTensorFormat_t format, cudnnTensorDescriptor_t* out) {
    if (!cudnn_ok(cudnnCreateTensorDescriptor(out), "cudnnCreateTensorDescriptor")) return false;
    cudnnTensorDescriptor_t desc = *out;
    p->cleanups.push_back([desc] { cudnnDestroyTensorDescriptor(desc); });
    return cudnn_ok(cudnnSetTensorNdDescriptorEx(desc, format, dt, static_cast<int>(d.size()), d.data()),
                    "cudnnSetTensorNdDescriptorEx");
  };
  auto tensor = [&](const std::vector<int64_t>& shape, cudnnTensorDescriptor_t* out) {
    std::vector<int> d = cudnn_dims(shape);
    if (d.empty()) {
      *why = "cuDNN tensors have 1 to 5 dimensions of at most INT_MAX (got rank " +
             std::to_string(shape.size()) + ")";
      return false;
    }
    return descriptor(d, fmt, out);
  };
  auto alloc_failed = [&] {
    *why = std::string("cudaMalloc failed (no CUDA device?): ") + cudaGetErrorString(cudaGetLastError());
    return false;
  };
  if (c.op == "softmax") {
    std::vector<int> d;
    if (!softmax_dims(c, &d, why)) return false;
    cudnnTensorDescriptor_t desc;
    if (!descriptor(d, CUDNN_TENSOR_NCHW, &desc)) return false;
    void* x = device_buffer(p, elements(c.src[0]) * elem);
    void* y = device_buffer(p, elements(c.src[0]) * elem);
    if (!x || !y) return alloc_failed();
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      return launched(p,
                      cudnnSoftmaxForward(h, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc,
                                          x, &zero, desc, y),
                      "cudnnSoftmaxForward");
    };
    p->implementation = "cudnnSoftmaxForward(accurate, channel over " + std::to_string(d[0]) + "x" +
                        std::to_string(d[1]) + "x" + std::to_string(d[2]) + ")";
    return true;
  }
  if (c.op == "binary") {
    BinaryGeometry g;
    if (!binary_geometry(c, &g, why)) return false;
    const std::vector<int64_t>& a_shape = c.src[static_cast<size_t>(g.a)];
    const std::vector<int64_t>& b_shape = c.src[static_cast<size_t>(g.b)];
    cudnnTensorDescriptor_t a_desc, b_desc, c_desc;
    if (!tensor(a_shape, &a_desc) || !tensor(b_shape, &b_desc) || !tensor(c.dst, &c_desc)) return false;
    cudnnOpTensorDescriptor_t op_desc;
    if (!cudnn_ok(cudnnCreateOpTensorDescriptor(&op_desc), "cudnnCreateOpTensorDescriptor")) return false;
    p->cleanups.push_back([op_desc] { cudnnDestroyOpTensorDescriptor(op_desc); });
    // fp16 tensors compute in fp32 (the only compute type cuDNN accepts for them).
    if (!cudnn_ok(cudnnSetOpTensorDescriptor(op_desc, g.op, CUDNN_DATA_FLOAT, CUDNN_NOT_PROPAGATE_NAN),
                  "cudnnSetOpTensorDescriptor"))
      return false;
    void* a = device_buffer(p, elements(a_shape) * elem);
    void* b = device_buffer(p, elements(b_shape) * elem);
    void* y = device_buffer(p, elements(c.dst) * elem);
    if (!a || !b || !y) return alloc_failed();
    const float alpha1 = g.alpha1, alpha2 = g.alpha2;
    p->launch = [=] {
      static const float zero = 0.f;
      return launched(p, cudnnOpTensor(h, op_desc, &alpha1, a_desc, a, &alpha2, b_desc, b, &zero, c_desc, y),
                      "cudnnOpTensor");
    };
    p->implementation = "cudnnOpTensor(" + c.algorithm + (b_shape == c.dst ? "" : ", broadcast") + ")";
    return true;
  }
  cudnnTensorDescriptor_t x_desc, y_desc;
  if (!tensor(c.src[0], &x_desc) || !tensor(c.dst, &y_desc)) return false;
  void* x = device_buffer(p, elements(c.src[0]) * elem);
  void* y = device_buffer(p, elements(c.dst) * elem);
  if (!x || !y) return alloc_failed();
  if (c.op == "conv") {
    cudnnFilterDescriptor_t w_desc;
    if (!cudnn_ok(cudnnCreateFilterDescriptor(&w_desc), "cudnnCreateFilterDescriptor")) return false;
    p->cleanups.push_back([w_desc] { cudnnDestroyFilterDescriptor(w_desc); });
    if (!cudnn_ok(cudnnSetFilter4dDescriptor(w_desc, dt, fmt, static_cast<int>(c.weights[0]),
                                             static_cast<int>(c.weights[1]), static_cast<int>(c.weights[2]),
                                             static_cast<int>(c.weights[3])),
                  "cudnnSetFilter4dDescriptor"))
      return false;
    cudnnConvolutionDescriptor_t conv_desc;
    if (!cudnn_ok(cudnnCreateConvolutionDescriptor(&conv_desc), "cudnnCreateConvolutionDescriptor"))
      return false;
    p->cleanups.push_back([conv_desc] { cudnnDestroyConvolutionDescriptor(conv_desc); });
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
    if (!w || !ws) return alloc_failed();
    const bool fused = !c.post_op.empty();
    const bool residual = c.post_op.rfind("sum", 0) == 0;  // "sum" or "sum+relu": z is the residual
    cudnnTensorDescriptor_t b_desc = nullptr;
    void* bias = nullptr;
    if (fused || c.bias) {
      if (!tensor({1, c.weights[0], 1, 1}, &b_desc)) return false;
      bias = device_buffer(p, static_cast<size_t>(c.weights[0]) * elem);
      if (!bias) return alloc_failed();
    }
    if (fused) {
      cudnnActivationDescriptor_t act;
      if (!cudnn_ok(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor")) return false;
      p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
      const bool relu = c.post_op == "relu" || c.post_op == "sum+relu";
      cudnnSetActivationDescriptor(act, relu ? CUDNN_ACTIVATION_RELU : CUDNN_ACTIVATION_IDENTITY,
                                   CUDNN_NOT_PROPAGATE_NAN, 0.0);
      // Without a residual, z aliases y with alpha2 = 0 (cuDNN allows it); with one, z is its own buffer.
      void* z = y;
      if (residual) {
        z = device_buffer(p, elements(c.dst) * elem);
        if (!z) return alloc_failed();
      }
      p->launch = [=] {
        static const float one = 1.f, zero = 0.f;
        return launched(p,
                        cudnnConvolutionBiasActivationForward(h, &one, x_desc, x, w_desc, w, conv_desc, alg,
                                                              ws, ws_bytes, residual ? &one : &zero, y_desc,
                                                              z, b_desc, bias, act, y_desc, y),
                        "cudnnConvolutionBiasActivationForward");
      };
    } else {
      // A framework without the fused call adds the bias with a second call (Benanza III-B3).
      const bool add_bias = c.bias;
      p->launch = [=] {
        static const float one = 1.f, zero = 0.f;
        if (!launched(p,
                      cudnnConvolutionForward(h, &one, x_desc, x, w_desc, w, conv_desc, alg, ws, ws_bytes,
                                              &zero, y_desc, y),
                      "cudnnConvolutionForward"))
          return false;
        return !add_bias ||
               launched(p, cudnnAddTensor(h, &one, b_desc, bias, &one, y_desc, y), "cudnnAddTensor");
      };
    }
    p->implementation =
        "cudnn:" + c.algorithm + (half ? ":tensor_op" : "") + (!fused && c.bias ? "+cudnnAddTensor" : "");
    return true;
  }
  if (c.op == "pool") {
    std::vector<int> pad;
    if (!pool_padding(c, &pad, why)) return false;
    cudnnPoolingDescriptor_t pool;
    if (!cudnn_ok(cudnnCreatePoolingDescriptor(&pool), "cudnnCreatePoolingDescriptor")) return false;
    p->cleanups.push_back([pool] { cudnnDestroyPoolingDescriptor(pool); });
    cudnnPoolingMode_t mode = c.algorithm == "max"           ? CUDNN_POOLING_MAX
                              : c.algorithm == "avg_include" ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                                                             : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    if (!cudnn_ok(
            cudnnSetPooling2dDescriptor(pool, mode, CUDNN_NOT_PROPAGATE_NAN, static_cast<int>(c.kernel[0]),
                                        static_cast<int>(c.kernel[1]), pad[0], pad[1],
                                        static_cast<int>(c.strides[0]), static_cast<int>(c.strides[1])),
            "cudnnSetPooling2dDescriptor"))
      return false;
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      return launched(p, cudnnPoolingForward(h, pool, &one, x_desc, x, &zero, y_desc, y),
                      "cudnnPoolingForward");
    };
    p->implementation = "cudnnPoolingForward(" + c.algorithm + ")";
    return true;
  }
  if (c.op == "eltwise") {
    if (c.algorithm == "leaky_relu") {
      // cuDNN has no leaky-ReLU activation; for a slope in [0, 1] (supported() checked), max(x, slope * x)
      // is exactly it.
      cudnnOpTensorDescriptor_t op_desc;
      if (!cudnn_ok(cudnnCreateOpTensorDescriptor(&op_desc), "cudnnCreateOpTensorDescriptor")) return false;
      p->cleanups.push_back([op_desc] { cudnnDestroyOpTensorDescriptor(op_desc); });
      if (!cudnn_ok(cudnnSetOpTensorDescriptor(op_desc, CUDNN_OP_TENSOR_MAX, CUDNN_DATA_FLOAT,
                                               CUDNN_NOT_PROPAGATE_NAN),
                    "cudnnSetOpTensorDescriptor"))
        return false;
      const float slope = static_cast<float>(c.alpha);
      p->launch = [=] {
        static const float one = 1.f, zero = 0.f;
        return launched(p, cudnnOpTensor(h, op_desc, &one, x_desc, x, &slope, x_desc, x, &zero, y_desc, y),
                        "cudnnOpTensor");
      };
      p->implementation = "cudnnOpTensor(max(x, alpha*x))";
      return true;
    }
    cudnnActivationMode_t mode;
    double coef = 0;
    if (c.algorithm == "relu") {
      mode = CUDNN_ACTIVATION_RELU;
    } else if (c.algorithm == "logistic") {
      mode = CUDNN_ACTIVATION_SIGMOID;
    } else if (c.algorithm == "tanh") {
      mode = CUDNN_ACTIVATION_TANH;
    } else if (c.algorithm == "clip") {
      mode = CUDNN_ACTIVATION_CLIPPED_RELU, coef = c.beta;
    } else {
      mode = CUDNN_ACTIVATION_ELU, coef = c.alpha;
    }
    cudnnActivationDescriptor_t act;
    if (!cudnn_ok(cudnnCreateActivationDescriptor(&act), "cudnnCreateActivationDescriptor")) return false;
    p->cleanups.push_back([act] { cudnnDestroyActivationDescriptor(act); });
    if (!cudnn_ok(cudnnSetActivationDescriptor(act, mode, CUDNN_NOT_PROPAGATE_NAN, coef),
                  "cudnnSetActivationDescriptor"))
      return false;
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      return launched(p, cudnnActivationForward(h, act, &one, x_desc, x, &zero, y_desc, y),
                      "cudnnActivationForward");
    };
    p->implementation = "cudnnActivationForward(" + c.algorithm + ")";
    return true;
  }
  if (c.op == "batch_norm") {
    cudnnTensorDescriptor_t bn_desc;
    if (!cudnn_ok(cudnnCreateTensorDescriptor(&bn_desc), "cudnnCreateTensorDescriptor")) return false;
    p->cleanups.push_back([bn_desc] { cudnnDestroyTensorDescriptor(bn_desc); });
    // Spatial mode: one scale/bias/mean/variance per channel (fp32 also for fp16 data).
    if (!cudnn_ok(cudnnDeriveBNTensorDescriptor(bn_desc, x_desc, CUDNN_BATCHNORM_SPATIAL),
                  "cudnnDeriveBNTensorDescriptor"))
      return false;
    const size_t channels = static_cast<size_t>(c.src[0][1]);
    void* scale = device_buffer(p, channels * 4);
    void* shift = device_buffer(p, channels * 4);
    void* mean = device_buffer(p, channels * 4);
    void* var = device_buffer(p, channels * 4);
    if (!scale || !shift || !mean || !var) return alloc_failed();
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      return launched(
          p,
          cudnnBatchNormalizationForwardInference(h, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc, x, y_desc,
                                                  y, bn_desc, scale, shift, mean, var, 1e-5),
          "cudnnBatchNormalizationForwardInference");
    };
    p->implementation = "cudnnBatchNormalizationForwardInference(spatial)";
    return true;
  }
  if (c.op == "lrn") {
    const int64_t size = c.kernel.empty() ? 5 : c.kernel[0];
    cudnnLRNDescriptor_t lrn;
    if (!cudnn_ok(cudnnCreateLRNDescriptor(&lrn), "cudnnCreateLRNDescriptor")) return false;
    p->cleanups.push_back([lrn] { cudnnDestroyLRNDescriptor(lrn); });
    if (!cudnn_ok(cudnnSetLRNDescriptor(lrn, static_cast<unsigned>(size), c.alpha, c.beta, 1.0),
                  "cudnnSetLRNDescriptor"))
      return false;
    p->launch = [=] {
      static const float one = 1.f, zero = 0.f;
      return launched(p,
                      cudnnLRNCrossChannelForward(h, lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, x_desc, x,
                                                  &zero, y_desc, y),
                      "cudnnLRNCrossChannelForward");
    };
    p->implementation = "cudnnLRNCrossChannelForward(size " + std::to_string(size) + ")";
    return true;
  }
  *why = "op '" + c.op + "' has no CUDA benchmark";
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
  bool ok = p->launch();  // warm-up; a call the library rejects is an error, never a timing
  if (!ok) *why = p->error;
  if (ok && cudaDeviceSynchronize() != cudaSuccess) {
    ok = false;
    *why = std::string("CUDA error: ") + cudaGetErrorString(cudaGetLastError());
  }
  for (int r = 0; ok && r < repetitions; ++r) {
    cudaEventRecord(start);
    for (int i = 0; ok && i < iterations; ++i) ok = p->launch();
    cudaEventRecord(stop);
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
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  return ok;
}

}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop
