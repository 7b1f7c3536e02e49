// FLOPs and bytes of one oneDNN primitive execution, from its problem descriptor: what the oneDNN
// tracer stores on each library span (attributes "flops" and "bytes"), so the rooflines run on CPU
// traces. Pure arithmetic on dims: both the interposer (oneDNN's query API) and the verbose capture
// (the line's descriptor) fill a PrimitiveProblem and get the same answer.
//
// FLOPs (a multiply-add is 2):
//   convolution, inner product  2 x dst elements x (weights elements / OC)   (= 2 N OC OH OW IC/G KH KW)
//                               for every propagation kind (backward data and weights do the same MACs)
//   deconvolution               2 x src elements x (weights elements / IC)
//   matmul                      2 x dst elements x K                         (src [.., M, K])
//   + bias                      dst elements (one add per output)
//   eltwise                     1 per element (max for ReLU; exp/tanh/... counted as one)
//   pooling                     max: window per output (comparisons); average: window + 1 (adds, divide)
//   batch norm forward          inference (global stats): 2 per element (x * scale_c + shift_c);
//                               training: 6 per element (mean 1, variance 3, normalize 2)
//   anything else, batch norm backward: no FLOPs (the attribute is left out, never guessed)
// Bytes: the compulsory traffic, every tensor the primitive reads or writes once: src, weights, bias,
// dst (the diff_ variants in backward passes), batch norm's mean/variance and scale/shift arrays;
// logical elements x element size (blocked layouts' padding not counted). Unknown element size: no
// bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace strata::onednn {

inline constexpr int kMaxDims = 12;  // DNNL_MAX_NDIMS

struct Dims {
  int n = 0;
  int64_t d[kMaxDims] = {};
  double elements() const;  // product of the dims (in double: no overflow); 0 when absent (n == 0)
  bool valid() const;       // no negative (runtime-defined) dim
  void push(int64_t v) {
    if (n < kMaxDims) d[n++] = v;
  }
};

enum class CostKind : uint8_t {
  kOther,
  kConvolution,
  kDeconvolution,
  kInnerProduct,
  kMatmul,
  kEltwise,
  kPooling,
  kBatchNorm,
};
// oneDNN's primitive kind names ("convolution", "pooling_v2", "batch_normalization", ...).
CostKind cost_kind(std::string_view primitive);

struct PrimitiveProblem {
  CostKind kind = CostKind::kOther;
  bool forward = true;    // forward_training / forward_inference; false for backward*
  bool inference = false;  // forward_inference (forward_scoring)
  // In the roles oneDNN's queries name them: src or diff_src, weights or diff_weights, bias (or
  // diff_bias), dst or diff_dst.
  Dims src, weights, bias, dst;
  int src_bytes = 0, weights_bytes = 0, bias_bytes = 0, dst_bytes = 0;  // element sizes; 0: unknown
  Dims window;               // pooling: kernel spatial dims
  bool average = false;      // pooling: average (else max)
  bool global_stats = false;  // batch norm: mean and variance are inputs
  int scale_shift_arrays = 0;  // batch norm: scale and/or shift arrays read (0 to 2)
};

struct PrimitiveCost {
  std::optional<double> flops, bytes;
};

PrimitiveCost primitive_cost(const PrimitiveProblem& p);

// Size in bytes of a oneDNN data type name ("f32" 4, "bf16" 2, "s8" 1, ...); 0 when unknown.
int dtype_size(std::string_view dtype);

// The propagation kind's effect on the problem ("forward_inference", "backward_data", ...).
void set_prop_kind(std::string_view prop_kind, PrimitiveProblem* p);

}  // namespace strata::onednn
