// One benchmark: the library call a framework makes for one unique layer, with its algorithm, data
// type and layout (Benanza Table II). Self-contained (std only) because `strata bench generate`
// copies this header verbatim next to the generated benchmark sources.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace strata::lowerbound {

struct BenchCase {
  std::string op;  // conv, inner_product, matmul, pool, eltwise, batch_norm, softmax, binary, concat, lrn
  std::string
      algorithm;  // conv: direct|winograd|auto (cpu) or a cuDNN algo; pool: max|avg_include|avg_exclude;
                  // eltwise: relu|logistic|tanh|clip|elu|leaky_relu; binary: add|mul|sub|div; else "default"
  std::string dtype;                      // f32, bf16, f16
  std::string layout;                     // nchw or nhwc (activations of rank 4)
  std::vector<std::vector<int64_t>> src;  // input shapes (concat/binary have several)
  std::vector<int64_t> dst;               // output shape
  std::vector<int64_t> weights;           // conv: O x I/g x KH x KW; inner_product: O x I
  std::vector<int64_t> kernel, strides, pads_begin, pads_end,
      dilations;  // spatial (dilation: ONNX style, 1 = none)
  int64_t groups = 1;
  bool bias = false;
  std::string post_op;  // conv: fused post-ops joined by '+' ("relu", "clip", "sum", "sum+relu", ...); ""
                        // for none. "sum" accumulates into dst, which holds the residual operand.
  int64_t axis = 1;     // softmax, concat
  double alpha = 0, beta = 0;  // eltwise parameters (clip min/max, leaky slope), lrn
  std::string signature;       // the layer signature this case measures (DB key)
};

// Parameters of an eltwise algorithm as frameworks use it: Clip as ReLU6 (min/max are run-time inputs
// in ONNX, 0 and 6 in the models; they do not change the cost), LeakyRelu's default slope, Elu's alpha.
inline void default_eltwise_params(const std::string& algorithm, double* alpha, double* beta) {
  *alpha = 0;
  *beta = 0;
  if (algorithm == "clip") {
    *beta = 6;
  } else if (algorithm == "leaky_relu") {
    *alpha = 0.01;
  } else if (algorithm == "elu") {
    *alpha = 1;
  }
}

// The post-ops of a fused case, in order ("sum+relu" -> {"sum", "relu"}).
inline std::vector<std::string> split_post_ops(const std::string& post_ops) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < post_ops.size()) {
    size_t plus = post_ops.find('+', start);
    if (plus == std::string::npos) plus = post_ops.size();
    if (plus > start) out.push_back(post_ops.substr(start, plus - start));
    start = plus + 1;
  }
  return out;
}

}  // namespace strata::lowerbound
