#include "onednn/primitive_cost.h"

namespace strata::onednn {

double Dims::elements() const {
  if (n == 0) return 0;
  double product = 1;
  for (int i = 0; i < n; ++i) product *= static_cast<double>(d[i]);
  return product;
}

bool Dims::valid() const {
  for (int i = 0; i < n; ++i)
    if (d[i] < 0) return false;
  return true;
}

CostKind cost_kind(std::string_view primitive) {
  if (primitive == "convolution") return CostKind::kConvolution;
  if (primitive == "deconvolution") return CostKind::kDeconvolution;
  if (primitive == "inner_product") return CostKind::kInnerProduct;
  if (primitive == "matmul") return CostKind::kMatmul;
  if (primitive == "eltwise") return CostKind::kEltwise;
  if (primitive == "pooling" || primitive == "pooling_v2") return CostKind::kPooling;
  if (primitive == "batch_normalization") return CostKind::kBatchNorm;
  return CostKind::kOther;
}

int dtype_size(std::string_view dtype) {
  if (dtype == "f32" || dtype == "s32") return 4;
  if (dtype == "f16" || dtype == "bf16") return 2;
  if (dtype == "s8" || dtype == "u8" || dtype == "boolean" || dtype == "f8_e5m2" || dtype == "f8_e4m3") return 1;
  if (dtype == "f64") return 8;
  return 0;
}

void set_prop_kind(std::string_view prop_kind, PrimitiveProblem* p) {
  p->forward = prop_kind.substr(0, 7) == "forward" || prop_kind.empty() || prop_kind == "undef";
  p->inference = prop_kind == "forward_inference" || prop_kind == "forward_scoring";
}

namespace {

std::optional<double> flops(const PrimitiveProblem& p) {
  const double dst = p.dst.elements();
  const double src = p.src.elements();
  const double weights = p.weights.elements();
  const double bias = p.bias.n > 0 ? dst : 0;
  switch (p.kind) {
    case CostKind::kConvolution:
    case CostKind::kInnerProduct: {
      // weights / OC = IC/G x spatial kernel, grouped or not (grouped weights: [G, OC/G, IC/G, ..]).
      if (p.dst.n < 2 || p.dst.d[1] <= 0 || weights <= 0 || dst <= 0) return std::nullopt;
      return 2 * dst * (weights / static_cast<double>(p.dst.d[1])) + bias;
    }
    case CostKind::kDeconvolution: {
      if (p.src.n < 2 || p.src.d[1] <= 0 || weights <= 0 || src <= 0) return std::nullopt;
      return 2 * src * (weights / static_cast<double>(p.src.d[1])) + bias;
    }
    case CostKind::kMatmul: {
      if (p.src.n < 2 || dst <= 0) return std::nullopt;
      return 2 * dst * static_cast<double>(p.src.d[p.src.n - 1]) + bias;
    }
    case CostKind::kEltwise: {
      double elements = dst > 0 ? dst : src;
      if (elements <= 0) return std::nullopt;
      return elements;
    }
    case CostKind::kPooling: {
      const double window = p.window.elements();
      if (window <= 0 || dst <= 0) return std::nullopt;
      return dst * (p.average ? window + 1 : window);
    }
    case CostKind::kBatchNorm: {
      if (!p.forward || src <= 0) return std::nullopt;
      return src * (p.global_stats ? 2 : 6);
    }
    case CostKind::kOther:
      break;
  }
  return std::nullopt;
}

std::optional<double> bytes(const PrimitiveProblem& p) {
  double total = 0;
  auto add = [&](const Dims& dims, int size) {
    if (dims.n == 0) return true;
    if (size <= 0) return false;
    total += dims.elements() * size;
    return true;
  };
  if (!add(p.src, p.src_bytes) || !add(p.weights, p.weights_bytes) || !add(p.bias, p.bias_bytes) ||
      !add(p.dst, p.dst_bytes))
    return std::nullopt;
  if (p.kind == CostKind::kBatchNorm) {
    // Mean and variance (read with global stats, written in training) and scale/shift, f32 per channel.
    const double channels = p.src.n >= 2 ? static_cast<double>(p.src.d[1]) : 0;
    total += channels * 4 * (2 + p.scale_shift_arrays);
  }
  return total > 0 ? std::optional<double>(total) : std::nullopt;
}

}  // namespace

PrimitiveCost primitive_cost(const PrimitiveProblem& p) {
  PrimitiveCost c;
  // Runtime-defined dims (DNNL_RUNTIME_DIM_VAL) are negative: the shape is not known, nor the cost.
  if (p.kind == CostKind::kOther || !p.src.valid() || !p.weights.valid() || !p.bias.valid() || !p.dst.valid() ||
      !p.window.valid())
    return c;
  c.flops = flops(p);
  c.bytes = bytes(p);
  return c;
}

}  // namespace strata::onednn
