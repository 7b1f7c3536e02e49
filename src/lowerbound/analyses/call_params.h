// What a library call was asked to do, read from the attributes its tracer recorded (src/onednn:
// "impl", "shapes", and where available "dtype", "formats", "attrs", "desc", "prop_kind" in oneDNN's
// verbose notation; src/gpu: cuDNN descriptor attributes such as "x.shape", "x.dtype", "conv.pads",
// "algorithm"; cuBLAS "m", "n", "k", "a.dtype"). A parameter a tracer does not record is left empty,
// never guessed. Used by framework inefficiency and trace comparison.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lowerbound/ir/layer_ir.h"
#include "trace/trace.h"

namespace strata::lowerbound {

// What one library call was asked to do. Empty / zero fields were not recorded by its tracer.
struct CallParams {
  std::string library;  // onednn, cudnn, cublas
  std::string
      call_class;  // conv, gemm, pool, eltwise, batch_norm, softmax, binary, concat, lrn, reorder, other
  Shape src, weights, dst;  // logical dims (N, C, spatial...), whatever the memory layout
  std::string dtype;        // f32, f16, bf16, or the tracer's own name for others
  std::string layout;       // activations (rank 4): nchw, nhwc, "strided" (cuDNN), "blocked:<tag>" (oneDNN)
  std::string weights_layout;
  std::vector<int64_t> pads, strides, dilations,
      window;  // spatial, begin pads only (cuDNN pads symmetrically)
  int64_t groups = 0;
  std::string algorithm;   // cuDNN algorithm name; oneDNN implementation ("impl", e.g. brgconv:avx512_core)
  std::string post_ops;    // "none", "relu", "sum+relu", "clip", ... (oneDNN attributes in FusionChain's
                           // notation; cuDNN fused calls: the activation only)
  std::string prop_kind;   // oneDNN: forward_inference, forward_training, ...
  std::string conversion;  // reorders: "abcd -> aBcd16b" (oneDNN tags) or "nchw -> nhwc" (cuDNN strides)
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
};

// "onednn::convolution" -> conv, "cudnnTransformTensor" -> reorder, "cublasSgemm" -> gemm, ...
std::string call_class_of(std::string_view span_name);
// The class of call a layer needs ("Conv" -> conv); empty for layers that need none.
std::string expected_call_class(const std::string& op_type);
CallParams parse_call(const trace::Trace& trace, size_t span);

// Small text helpers shared by the analyses of this room.
bool starts_with(std::string_view s, std::string_view prefix);
std::string lower(std::string_view s);
std::string dims_text(const std::vector<int64_t>& d);  // "1x64x56x56"; "-" when empty
// Layout-conversion kernels by name (nchwToNhwc, ...).
bool is_layout_kernel(std::string_view name);
// kernel, memcpy or memset: the span's "category" attribute, else its name.
std::string device_category(const trace::Trace& trace, size_t i);

}  // namespace strata::lowerbound
