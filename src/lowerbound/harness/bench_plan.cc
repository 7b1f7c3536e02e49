#include "lowerbound/harness/bench_plan.h"

#include <algorithm>
#include <set>
#include <string_view>

namespace strata::lowerbound {
namespace {

const std::set<std::string> kFreeOps = {"Reshape",  "Flatten", "Identity",       "Dropout",
                                        "Constant", "Shape",   "Unsqueeze",      "Squeeze",
                                        "Gather",   "Cast",    "ConstantOfShape"};

// Fully known, non-empty, and small enough to allocate (2^31 elements at most).
bool known(const Shape& s) {
  if (s.empty()) return false;
  int64_t elements = 1;
  for (int64_t d : s) {
    if (d <= 0 || d > (int64_t{1} << 31)) return false;
    elements *= d;
    if (elements > (int64_t{1} << 31)) return false;
  }
  return true;
}

std::vector<std::string> conv_algorithms(const std::string& backend) {
  if (backend == "cuda")
    return {"implicit_gemm", "implicit_precomp_gemm", "gemm", "direct", "fft", "fft_tiling",
            "winograd",      "winograd_nonfused"};
  return {"direct", "winograd", "auto"};
}

// CUDA GEMMs: cublasGemmEx as a framework's default path, and each of the first 8 algorithms
// cuBLASLt's heuristic ranks for the shape (cuda_ops.h: kLtHeuristicCount); which algorithm a rank
// is depends on the GPU and library, so each row's implementation names it.
std::vector<std::string> gemm_algorithms(const std::string& backend) {
  if (backend != "cuda") return {"default"};
  std::vector<std::string> algorithms = {"gemm_ex"};
  for (int i = 0; i < 8; ++i) algorithms.push_back("lt_heuristic_" + std::to_string(i));
  return algorithms;
}

}  // namespace

bool is_metadata_op(const std::string& op_type) { return kFreeOps.count(op_type) > 0; }

std::string normalize_dtype(const std::string& name) {
  if (name == "fp32" || name == "f32" || name == "float32") return "f32";
  if (name == "fp16" || name == "f16" || name == "float16" || name == "half") return "f16";
  if (name == "bf16" || name == "bfloat16") return "bf16";
  return "";
}

std::string fused_signature(const Layer& conv, const std::string& post_ops) {
  return conv.signature() + "|fused=" + post_ops;
}

std::string fusable_activation(const std::string& op_type) {
  if (op_type == "Relu") return "relu";
  if (op_type == "Clip") return "clip";
  if (op_type == "Sigmoid") return "logistic";
  if (op_type == "Tanh") return "tanh";
  if (op_type == "Elu") return "elu";
  if (op_type == "LeakyRelu") return "leaky_relu";
  return "";
}

std::optional<FusionChain> fusion_chain(const LayerModel& model, size_t i) {
  if (i >= model.layers.size()) return std::nullopt;
  const Layer& conv = model.layers[i];
  if (conv.op_type != "Conv" || conv.succs.size() != 1 || conv.outputs.size() != 1 ||
      conv.output_shapes.empty())
    return std::nullopt;
  FusionChain chain;
  chain.conv = static_cast<uint32_t>(i);
  uint32_t next = conv.succs[0];
  const Layer* consumer = &model.layers[next];
  std::string activation = fusable_activation(consumer->op_type);
  if (activation.empty() && consumer->op_type == "Add") {
    // sum post-op: dst = conv(x) + other, the other operand of the same shape (no broadcast), and
    // produced before the conv runs (the later of the Add's producers fuses it).
    const Layer& add = *consumer;
    if (add.inputs.size() != 2 || add.inputs[0] == add.inputs[1] || add.input_shapes.size() != 2 ||
        add.input_shapes[0] != add.input_shapes[1] || add.input_shapes[0] != conv.output_shapes[0] ||
        add.output_shapes.empty() || add.output_shapes[0] != conv.output_shapes[0])
      return std::nullopt;
    for (uint32_t p : add.preds)
      if (p > i) return std::nullopt;
    chain.absorbed.push_back(next);
    chain.post_ops = "sum";
    if (add.succs.size() != 1 || add.outputs.size() != 1) return chain;
    next = add.succs[0];
    consumer = &model.layers[next];
    activation = fusable_activation(consumer->op_type);
    if (activation.empty()) return chain;
  }
  if (activation.empty()) return std::nullopt;
  chain.absorbed.push_back(next);
  chain.post_ops += (chain.post_ops.empty() ? "" : "+") + activation;
  return chain;
}

namespace {

// What every per-operator planner reads: the layer, the backend, the fused post-ops, and the
// layer's spatial attributes.
struct PlanContext {
  const Layer& layer;
  bool cuda = false;
  std::string backend;
  std::string post_ops;  // set for a fused convolution
  size_t spatial = 0;    // spatial dimensions of the first input

  std::vector<int64_t> spatial_attr(const char* key, int64_t fallback) const {
    std::vector<int64_t> v = layer.ints_attr(key);
    if (v.size() != spatial) v.assign(spatial, fallback);
    return v;
  }
  // ONNX pads (begin..., end...), or derived from the inferred output size for SAME_UPPER/LOWER.
  void pads(BenchCase* c) const {
    std::vector<int64_t> p = layer.ints_attr("pads");
    if (p.size() != 2 * spatial) p.assign(2 * spatial, 0);
    c->pads_begin.assign(p.begin(), p.begin() + static_cast<long>(spatial));
    c->pads_end.assign(p.begin() + static_cast<long>(spatial), p.end());
    auto ap = layer.attributes.find("auto_pad");
    if (ap == layer.attributes.end() || ap->second == "NOTSET" || ap->second == "VALID") return;
    for (size_t d = 0; d < spatial; ++d) {
      int64_t in = c->src[0][2 + d], outd = c->dst[2 + d];
      int64_t k = c->kernel.empty() ? c->weights[2 + d] : c->kernel[d];
      int64_t dil = c->dilations.empty() ? 1 : c->dilations[d];
      int64_t total = std::max<int64_t>(0, (outd - 1) * c->strides[d] + (k - 1) * dil + 1 - in);
      c->pads_begin[d] = ap->second == "SAME_LOWER" ? total - total / 2 : total / 2;
      c->pads_end[d] = total - c->pads_begin[d];
    }
  }
};

// One case per algorithm.
void add_algorithms(const BenchCase& base, const std::vector<std::string>& algorithms, LayerPlan* plan) {
  for (const std::string& alg : algorithms) {
    BenchCase c = base;
    c.algorithm = alg;
    plan->cases.push_back(c);
  }
}

// A planner fills the plan's cases and library call from `base` (shapes, dtype, layout, signature
// set); false with plan->why when the layer cannot be expressed as the call.
using Planner = bool (*)(const PlanContext&, BenchCase, LayerPlan*);

bool plan_conv(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  const Layer& layer = ctx.layer;
  int64_t groups = layer.int_attr("group", 1);
  if (layer.weight_shapes.empty() || layer.weight_shapes[0].size() != base.src[0].size() || groups < 1 ||
      !known(layer.weight_shapes[0]) || layer.weight_shapes[0][0] % groups != 0) {
    plan->why = "Conv weights missing, not initializers, or inconsistent with group";
    return false;
  }
  const bool fused = !ctx.post_ops.empty();
  base.op = "conv";
  base.weights = layer.weight_shapes[0];
  base.bias = layer.weight_shapes.size() > 1;
  base.groups = groups;
  base.strides = ctx.spatial_attr("strides", 1);
  base.dilations = ctx.spatial_attr("dilations", 1);
  ctx.pads(&base);
  if (fused) base.post_op = ctx.post_ops;
  plan->library_call = ctx.cuda ? (fused       ? "cudnnConvolutionBiasActivationForward"
                                   : base.bias ? "cudnnConvolutionForward+cudnnAddTensor"
                                               : "cudnnConvolutionForward")
                                : (fused ? "dnnl::convolution_forward+post_ops(" + ctx.post_ops + ")"
                                         : "dnnl::convolution_forward");
  add_algorithms(base, conv_algorithms(ctx.backend), plan);
  return true;
}

bool plan_gemm(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  const Layer& layer = ctx.layer;
  if (layer.weight_shapes.empty() || base.src[0].size() != 2 || layer.int_attr("transA", 0) != 0) {
    plan->why = "Gemm with a non-constant B or transposed A is not supported";
    return false;
  }
  Shape w = layer.weight_shapes[0];
  if (w.size() != 2 || !known(w)) {
    plan->why = "Gemm weight is not a known 2-D shape";
    return false;
  }
  if (layer.int_attr("transB", 0) == 0) std::swap(w[0], w[1]);  // oneDNN wants O x I
  base.op = "inner_product";
  base.weights = w;
  base.bias = layer.weight_shapes.size() > 1;
  base.layout = "nchw";
  plan->library_call = ctx.cuda ? "cublasGemmEx / cublasLtMatmul" : "dnnl::inner_product_forward";
  add_algorithms(base, gemm_algorithms(ctx.backend), plan);
  return true;
}

bool plan_matmul(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  base.op = "matmul";
  if (base.src.size() == 1 && !ctx.layer.weight_shapes.empty())
    base.src.push_back(ctx.layer.weight_shapes[0]);
  if (base.src.size() != 2 || base.src[0].size() != base.src[1].size() || !known(base.src[1])) {
    plan->why = "MatMul with broadcasting ranks is not supported";
    return false;
  }
  base.layout = "nchw";
  plan->library_call = ctx.cuda ? "cublasGemmEx / cublasLtMatmul" : "dnnl::matmul";
  add_algorithms(base, gemm_algorithms(ctx.backend), plan);
  return true;
}

bool plan_pool(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  const std::string& op = ctx.layer.op_type;
  if (ctx.spatial == 0) {
    plan->why = "pooling input has no spatial dimensions";
    return false;
  }
  base.op = "pool";
  if (op.rfind("Global", 0) == 0) {
    base.kernel.assign(base.src[0].begin() + 2, base.src[0].end());
    base.strides.assign(ctx.spatial, 1);
    base.pads_begin.assign(ctx.spatial, 0);
    base.pads_end.assign(ctx.spatial, 0);
  } else {
    base.kernel = ctx.spatial_attr("kernel_shape", 1);
    base.strides = ctx.spatial_attr("strides", 1);
    ctx.pads(&base);
    // oneDNN has no ceil_mode: pad the end up to the inferred output size.
    for (size_t d = 0; d < ctx.spatial; ++d) {
      int64_t need =
          (base.dst[2 + d] - 1) * base.strides[d] + base.kernel[d] - base.src[0][2 + d] - base.pads_begin[d];
      if (need > base.pads_end[d]) base.pads_end[d] = need;
    }
  }
  base.algorithm = (op == "MaxPool" || op == "GlobalMaxPool")   ? "max"
                   : ctx.layer.int_attr("count_include_pad", 0) ? "avg_include"
                                                                : "avg_exclude";
  plan->library_call = ctx.cuda ? "cudnnPoolingForward" : "dnnl::pooling_forward";
  plan->cases.push_back(base);
  return true;
}

bool plan_eltwise(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  const std::string& op = ctx.layer.op_type;
  base.op = "eltwise";
  base.algorithm = fusable_activation(op);  // relu, logistic, tanh, clip, elu, leaky_relu
  default_eltwise_params(base.algorithm, &base.alpha, &base.beta);
  // cuDNN has no leaky ReLU: cuda_cudnn.h computes it as cudnnOpTensor max(x, alpha * x).
  plan->library_call = !ctx.cuda           ? "dnnl::eltwise_forward"
                       : op == "LeakyRelu" ? "cudnnOpTensor"
                                           : "cudnnActivationForward";
  plan->cases.push_back(base);
  return true;
}

bool plan_batch_norm(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  if (base.src[0].size() < 2) {
    plan->why = "BatchNormalization input has no channel dimension";
    return false;
  }
  base.op = "batch_norm";
  base.src.resize(1);
  plan->library_call =
      ctx.cuda ? "cudnnBatchNormalizationForwardInference" : "dnnl::batch_normalization_forward";
  plan->cases.push_back(base);
  return true;
}

bool plan_softmax(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  base.op = "softmax";
  int64_t axis = ctx.layer.int_attr("axis", -1);
  base.axis = axis < 0 ? axis + static_cast<int64_t>(base.src[0].size()) : axis;
  base.layout = "nchw";
  plan->library_call = ctx.cuda ? "cudnnSoftmaxForward" : "dnnl::softmax_forward";
  plan->cases.push_back(base);
  return true;
}

bool plan_binary(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  const std::string& op = ctx.layer.op_type;
  base.op = "binary";
  if (base.src.size() == 1 && !ctx.layer.weight_shapes.empty())
    base.src.push_back(ctx.layer.weight_shapes[0]);
  if (base.src.size() != 2 || !known(base.src[1]) || base.src[1].size() > base.dst.size()) {
    plan->why = "binary op needs two inputs of known shape";
    return false;
  }
  // oneDNN needs equal ranks: left-pad the smaller operand with 1s (numpy broadcasting).
  for (auto& s : base.src)
    while (s.size() < base.dst.size()) s.insert(s.begin(), 1);
  base.algorithm = op == "Add" ? "add" : op == "Mul" ? "mul" : op == "Sub" ? "sub" : "div";
  plan->library_call = ctx.cuda ? "cudnnOpTensor" : "dnnl::binary";
  plan->cases.push_back(base);
  return true;
}

bool plan_concat(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  base.op = "concat";
  int64_t axis = ctx.layer.int_attr("axis", 1);
  base.axis = axis < 0 ? axis + static_cast<int64_t>(base.dst.size()) : axis;
  plan->library_call = ctx.cuda ? "cudaMemcpy2DAsync (concat)" : "dnnl::concat";
  plan->cases.push_back(base);
  return true;
}

bool plan_lrn(const PlanContext& ctx, BenchCase base, LayerPlan* plan) {
  base.op = "lrn";
  base.kernel = {ctx.layer.int_attr("size", 5)};
  base.alpha = 1e-4;
  base.beta = 0.75;
  plan->library_call = ctx.cuda ? "cudnnLRNCrossChannelForward" : "dnnl::lrn_forward";
  plan->cases.push_back(base);
  return true;
}

// ONNX operator -> planner (Benanza Table II, oneDNN and cuDNN/cuBLAS alike).
struct OpPlanner {
  std::string_view op_type;
  Planner plan;
  bool spatial;  // needs N x C x spatial input and output of the same rank
};
constexpr OpPlanner kPlanners[] = {
    {"Conv", plan_conv, true},          {"Gemm", plan_gemm, false},
    {"MatMul", plan_matmul, false},     {"MaxPool", plan_pool, true},
    {"AveragePool", plan_pool, true},   {"GlobalAveragePool", plan_pool, true},
    {"GlobalMaxPool", plan_pool, true}, {"Relu", plan_eltwise, false},
    {"Sigmoid", plan_eltwise, false},   {"Tanh", plan_eltwise, false},
    {"Clip", plan_eltwise, false},      {"Elu", plan_eltwise, false},
    {"LeakyRelu", plan_eltwise, false}, {"BatchNormalization", plan_batch_norm, false},
    {"Softmax", plan_softmax, false},   {"Add", plan_binary, false},
    {"Mul", plan_binary, false},        {"Sub", plan_binary, false},
    {"Div", plan_binary, false},        {"Concat", plan_concat, false},
    {"LRN", plan_lrn, false},
};

}  // namespace

LayerPlan plan_layer(const Layer& layer, const std::string& backend, const std::string& dtype,
                     const std::string& layout, const std::string& post_ops) {
  LayerPlan plan;
  const std::string& op = layer.op_type;
  if (kFreeOps.count(op) || layer.inputs.empty()) {
    plan.cost = LayerCost::kFree;
    plan.library_call = layer.inputs.empty() ? "(constant-folded)" : "(metadata only)";
    return plan;
  }
  for (const Shape& s : layer.input_shapes)
    if (!known(s)) {
      plan.why = "input shape unknown after shape inference (or empty or too large)";
      return plan;
    }
  if (layer.output_shapes.empty() || !known(layer.output_shapes[0])) {
    plan.why = "output shape unknown after shape inference (or empty or too large)";
    return plan;
  }
  const OpPlanner* planner = nullptr;
  for (const OpPlanner& p : kPlanners)
    if (p.op_type == op) planner = &p;
  if (!planner) {
    plan.why = "no library-call mapping for operator " + op;
    return plan;
  }
  BenchCase base;
  base.dtype = dtype;
  base.layout = layout;
  base.src = layer.input_shapes;
  base.dst = layer.output_shapes[0];
  const bool fused = !post_ops.empty() && op == "Conv";
  base.signature = fused ? fused_signature(layer, post_ops) : layer.signature();
  base.algorithm = "default";
  PlanContext ctx{layer, backend == "cuda", backend, fused ? post_ops : "",
                  base.src[0].size() >= 2 ? base.src[0].size() - 2 : 0};
  if (planner->spatial && (base.src[0].size() < 3 || base.dst.size() != base.src[0].size())) {
    plan.why = op + " needs N x C x spatial input and output of the same rank";
    return plan;
  }
  if (!planner->plan(ctx, std::move(base), &plan)) {
    plan.cases.clear();
    return plan;
  }
  // Every kind the CPU backend maps has CUDA cases too. What cuDNN/cuBLAS cannot express for one
  // layer (Div, 3-D pooling, asymmetric conv padding, bf16, ...) fails in cuda::prepare with the
  // reason, which `bench run` stores as "unsupported": the analyzer plans with the CPU mapping, so a
  // layer refused here would have no row and look merely missing.
  plan.cost = LayerCost::kBenchmarked;
  return plan;
}

}  // namespace strata::lowerbound
