// Maps a layer to the library calls a framework makes for it (Benanza Table II) and expands them
// over algorithms, data types and layouts. Layers that only move metadata (Reshape, Flatten,
// Identity, Dropout at inference, ...) need no call and cost zero; anything else without a mapping
// is reported as unsupported, never silently dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lowerbound/harness/bench_case.h"
#include "lowerbound/ir/layer_ir.h"

namespace strata::lowerbound {

struct BenchOptions {
  std::string backend = "cpu";                // cpu (oneDNN) or cuda (cuDNN + cuBLAS)
  std::vector<std::string> dtypes = {"f32"};  // f32, bf16, f16 (accepts fp32/fp16 too)
  std::vector<std::string> layouts = {"nchw"};
  bool fusion = false;     // also benchmark fused convolutions (only where the model has a fusable chain)
  std::string system_tag;  // appended to the system key ("|tag=..."): keeps separate measurement sets apart
  bool recheck = false;    // bench run: re-measure items whose rows are suspicious (quality, spread)
};

enum class LayerCost { kBenchmarked, kFree, kUnsupported };

// What a layer needs: its benchmark cases (one per algorithm) for one dtype and layout.
struct LayerPlan {
  LayerCost cost = LayerCost::kUnsupported;
  std::string library_call;  // e.g. "dnnl::convolution_forward" (for the tables)
  std::vector<BenchCase> cases;
  std::string why;  // for kUnsupported
};

// `post_ops` (Conv only): plan the convolution with these fused post-ops (FusionChain::post_ops)
// instead of the plain call; empty: the plain call.
LayerPlan plan_layer(const Layer& layer, const std::string& backend, const std::string& dtype,
                     const std::string& layout, const std::string& post_ops = "");

// Operators that only move metadata (Reshape, Flatten, Identity, ...): no library call, zero cost.
bool is_metadata_op(const std::string& op_type);

// "fp32" -> "f32", "fp16" -> "f16"; empty when unknown.
std::string normalize_dtype(const std::string& name);

// A convolution and the layers that oneDNN post-ops (and cuDNN's fused call, partly) fold into its
// call, as frameworks fuse them: an activation that is the conv's only consumer (Relu, Clip as in
// mobilenet_v2's ReLU6, Sigmoid, Tanh, Elu, LeakyRelu), or a residual Add that is (the `sum`
// post-op: the conv accumulates into the other operand), optionally followed by an activation that
// is the Add's only consumer (resnet's conv + add + relu).
struct FusionChain {
  uint32_t conv = 0;
  std::vector<uint32_t> absorbed;  // the layers folded into the conv's call, in order
  std::string post_ops;            // post-op names joined by '+': "relu", "clip", "sum", "sum+relu", ...
};

// The chain that starts at layer `i`; nullopt unless `i` is a Conv with a fusable consumer. A residual
// Add is claimed only by the later of its producers (the one that runs last), so no layer is folded
// into two convolutions.
std::optional<FusionChain> fusion_chain(const LayerModel& model, size_t i);

// oneDNN eltwise algorithm for an activation layer a conv can fuse ("Relu" -> "relu", "Clip" ->
// "clip", "Sigmoid" -> "logistic", ...); empty for other operators.
std::string fusable_activation(const std::string& op_type);

// The signature under which a fused convolution is stored: the conv's plus "|fused=<post_ops>".
std::string fused_signature(const Layer& conv, const std::string& post_ops);

}  // namespace strata::lowerbound
