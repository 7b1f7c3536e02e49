// Maps a layer to the library calls a framework makes for it (Benanza Table II) and expands them
// over algorithms, data types and layouts. Layers that only move metadata (Reshape, Flatten,
// Identity, Dropout at inference, ...) need no call and cost zero; anything else without a mapping
// is reported as unsupported, never silently dropped.
#pragma once

#include <string>
#include <vector>

#include "lowerbound/bench_case.h"
#include "lowerbound/layer_ir.h"

namespace strata::lowerbound {

struct BenchOptions {
  std::string backend = "cpu";                // cpu (oneDNN) or cuda (cuDNN + cuBLAS)
  std::vector<std::string> dtypes = {"f32"};  // f32, bf16, f16 (accepts fp32/fp16 too)
  std::vector<std::string> layouts = {"nchw"};
  bool fusion = false;     // also benchmark Conv+Bias+Relu fused (only where the model has the pattern)
  std::string system_tag;  // appended to the system key ("|tag=..."): keeps separate measurement sets apart
};

enum class LayerCost { kBenchmarked, kFree, kUnsupported };

// What a layer needs: its benchmark cases (one per algorithm) for one dtype and layout.
struct LayerPlan {
  LayerCost cost = LayerCost::kUnsupported;
  std::string library_call;  // e.g. "dnnl::convolution_forward" (for the tables)
  std::vector<BenchCase> cases;
  std::string why;  // for kUnsupported
};

// `fused_relu`: plan the fused Conv+Bias+Relu call instead of the plain convolution.
LayerPlan plan_layer(const Layer& layer, const std::string& backend, const std::string& dtype,
                     const std::string& layout, bool fused_relu = false);

// Operators that only move metadata (Reshape, Flatten, Identity, ...): no library call, zero cost.
bool is_metadata_op(const std::string& op_type);

// "fp32" -> "f32", "fp16" -> "f16"; empty when unknown.
std::string normalize_dtype(const std::string& name);

// The signature under which a fused Conv+Relu pair is stored.
std::string fused_signature(const Layer& conv);

// True when layer `i` is a Conv whose only consumer is a Relu (the fusable pattern).
bool fusable_conv_relu(const LayerModel& model, size_t i);

}  // namespace strata::lowerbound
