// Geometry of the cuDNN + cuBLAS calls for a BenchCase (see cuda_ops.h): what each call needs from
// the case (GEMM transposes and strides, pooling padding, cudnnOpTensor operand order, the softmax
// view, concat copies) and which cases a call cannot express. No CUDA calls, so it is testable
// without a GPU; header-only and free of Strata dependencies: `strata bench generate --backend cuda`
// copies it verbatim next to cuda_ops.h.
#pragma once

#include <cudnn.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "bench_case.h"

// cuDNN's legacy API types are deprecated in cuDNN 9 (a warning only with CUDNN_WARN_DEPRECATED);
// see cuda_ops.h.
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

}  // namespace strata::lowerbound::cuda

#pragma GCC diagnostic pop
