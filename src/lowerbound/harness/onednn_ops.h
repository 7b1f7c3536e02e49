// oneDNN (v2 API) primitives for BenchCase: what a framework's CPU backend calls for a layer.
// Header-only and free of Strata dependencies: `strata bench generate` copies it verbatim, so the
// generated standalone benchmarks and `strata bench run` time exactly the same code.
#pragma once

#include <cstring>
#include <dnnl.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bench_case.h"

namespace strata::lowerbound::onednn {

struct Prepared {
  dnnl::engine engine;
  dnnl::stream stream;
  dnnl::primitive primitive;
  std::unordered_map<int, dnnl::memory> args;
  std::string implementation;  // oneDNN's implementation name, e.g. "brgconv:avx512_core"
  void run() {
    primitive.execute(stream, args);
    stream.wait();
  }
};

inline dnnl::memory::data_type data_type_of(const std::string& dtype) {
  if (dtype == "bf16") return dnnl::memory::data_type::bf16;
  if (dtype == "f16") return dnnl::memory::data_type::f16;
  return dnnl::memory::data_type::f32;
}

inline dnnl::memory::format_tag activation_tag(size_t rank, const std::string& layout) {
  using tag = dnnl::memory::format_tag;
  switch (rank) {
    case 1:
      return tag::a;
    case 2:
      return tag::ab;
    case 3:
      return layout == "nhwc" ? tag::acb : tag::abc;
    case 4:
      return layout == "nhwc" ? tag::acdb : tag::abcd;
    case 5:
      return layout == "nhwc" ? tag::acdeb : tag::abcde;
    default:
      return tag::undef;
  }
}

inline dnnl::memory::desc activation_desc(const std::vector<int64_t>& dims, const BenchCase& c) {
  return dnnl::memory::desc(dnnl::memory::dims(dims.begin(), dims.end()), data_type_of(c.dtype),
                            activation_tag(dims.size(), c.layout));
}

// Layouts: nchw, nhwc, or blocked (convolutions only choose their own; other ops use nchw then).
// Memory filled with a small non-zero pattern (denormals and NaNs would distort timings).
inline dnnl::memory filled(const dnnl::memory::desc& desc, const dnnl::engine& engine) {
  dnnl::memory mem(desc, engine);
  size_t bytes = desc.get_size();
  auto* p = static_cast<unsigned char*>(mem.get_data_handle());
  if (desc.data_type() == dnnl::memory::data_type::f32) {
    auto* f = reinterpret_cast<float*>(p);
    for (size_t i = 0; i < bytes / 4; ++i) f[i] = 0.01f * static_cast<float>((i * 7) % 13);
  } else {
    std::memset(p, 0x3c, bytes);  // 0x3c3c: a normal value in both bf16 and f16
  }
  return mem;
}

inline bool is_eltwise_algorithm(const std::string& name) {
  return name == "relu" || name == "logistic" || name == "tanh" || name == "clip" || name == "elu" ||
         name == "leaky_relu";
}

inline dnnl::algorithm eltwise_algorithm(const std::string& name) {
  if (name == "logistic") return dnnl::algorithm::eltwise_logistic;
  if (name == "tanh") return dnnl::algorithm::eltwise_tanh;
  if (name == "clip") return dnnl::algorithm::eltwise_clip;
  if (name == "elu") return dnnl::algorithm::eltwise_elu;
  if (name == "leaky_relu") return dnnl::algorithm::eltwise_relu;  // relu with a negative slope
  return dnnl::algorithm::eltwise_relu;
}

// Per-op preparers: build the primitive and its arguments for one BenchCase op (oneDNN errors are
// caught by `prepare`). False with `why` for a case no primitive can express.
using Preparer = bool (*)(const BenchCase&, Prepared*, std::string*);

inline dnnl::memory::dims dims_of(const std::vector<int64_t>& v) {
  return dnnl::memory::dims(v.begin(), v.end());
}

// Fused post-ops in order: "sum" adds the residual already in dst (a framework passes the other Add
// operand as dst), eltwise names apply the activation. *sum says whether dst must hold data.
inline bool conv_post_ops(const BenchCase& c, dnnl::primitive_attr* attr, bool* sum, std::string* why) {
  *sum = false;
  if (c.post_op.empty()) return true;
  dnnl::post_ops ops;
  for (const std::string& p : split_post_ops(c.post_op)) {
    if (p == "sum") {
      ops.append_sum(1.f);
      *sum = true;
      continue;
    }
    if (!is_eltwise_algorithm(p)) {
      *why = "unknown post-op '" + p + "' (sum or an eltwise algorithm)";
      return false;
    }
    double alpha = 0, beta = 0;
    default_eltwise_params(p, &alpha, &beta);
    ops.append_eltwise(1.f, eltwise_algorithm(p), static_cast<float>(alpha), static_cast<float>(beta));
  }
  attr->set_post_ops(ops);
  return true;
}

inline bool prepare_conv(const BenchCase& c, Prepared* out, std::string* why) {
  using namespace dnnl;
  engine& eng = out->engine;
  const auto dt = data_type_of(c.dtype);
  const auto any = memory::format_tag::any;
  algorithm alg = c.algorithm == "winograd" ? algorithm::convolution_winograd
                  : c.algorithm == "auto"   ? algorithm::convolution_auto
                                            : algorithm::convolution_direct;
  memory::dims w = dims_of(c.weights);
  if (c.groups > 1) {  // oneDNN grouped weights: G x O/G x I/G x spatial...
    w = {c.groups, c.weights[0] / c.groups};
    w.insert(w.end(), c.weights.begin() + 1, c.weights.end());
  }
  memory::dims dil;
  for (int64_t d : c.dilations) dil.push_back(d - 1);
  // "blocked": oneDNN picks the activation layout (nChw16c, ...), as frameworks that keep tensors in
  // oneDNN's own layout between layers do; reorders to it are not timed.
  const bool blocked = c.layout == "blocked";
  auto src_md = blocked ? memory::desc(dims_of(c.src[0]), dt, any) : activation_desc(c.src[0], c);
  auto dst_md = blocked ? memory::desc(dims_of(c.dst), dt, any) : activation_desc(c.dst, c);
  memory::desc w_md(w, dt, any);
  memory::desc b_md({c.weights[0]}, dt, memory::format_tag::a);
  auto d =
      c.bias ? convolution_forward::desc(prop_kind::forward_inference, alg, src_md, w_md, b_md, dst_md,
                                         dims_of(c.strides), dil, dims_of(c.pads_begin), dims_of(c.pads_end))
             : convolution_forward::desc(prop_kind::forward_inference, alg, src_md, w_md, dst_md,
                                         dims_of(c.strides), dil, dims_of(c.pads_begin), dims_of(c.pads_end));
  primitive_attr attr;
  bool sum = false;
  if (!conv_post_ops(c, &attr, &sum, why)) return false;
  convolution_forward::primitive_desc pd(d, attr, eng);
  out->primitive = convolution_forward(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_SRC, filled(pd.src_desc(), eng)},
               {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), eng)},
               {DNNL_ARG_DST, sum ? filled(pd.dst_desc(), eng) : memory(pd.dst_desc(), eng)}};
  if (c.bias) out->args[DNNL_ARG_BIAS] = filled(pd.bias_desc(), eng);
  return true;
}

inline bool prepare_inner_product(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  engine& eng = out->engine;
  const auto dt = data_type_of(c.dtype);
  memory::desc src_md(dims_of(c.src[0]), dt, memory::format_tag::ab);
  memory::desc w_md(dims_of(c.weights), dt, memory::format_tag::any);
  memory::desc b_md({c.weights[0]}, dt, memory::format_tag::a);
  memory::desc dst_md(dims_of(c.dst), dt, memory::format_tag::ab);
  auto d = c.bias ? inner_product_forward::desc(prop_kind::forward_inference, src_md, w_md, b_md, dst_md)
                  : inner_product_forward::desc(prop_kind::forward_inference, src_md, w_md, dst_md);
  inner_product_forward::primitive_desc pd(d, eng);
  out->primitive = inner_product_forward(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_SRC, filled(pd.src_desc(), eng)},
               {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), eng)},
               {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
  if (c.bias) out->args[DNNL_ARG_BIAS] = filled(pd.bias_desc(), eng);
  return true;
}

inline bool prepare_matmul(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  engine& eng = out->engine;
  auto plain = [&](const std::vector<int64_t>& v) {
    return memory::desc(dims_of(v), data_type_of(c.dtype), activation_tag(v.size(), "nchw"));
  };
  matmul::desc d(plain(c.src[0]), plain(c.src[1]), plain(c.dst));
  matmul::primitive_desc pd(d, eng);
  out->primitive = matmul(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_SRC, filled(pd.src_desc(), eng)},
               {DNNL_ARG_WEIGHTS, filled(pd.weights_desc(), eng)},
               {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
  return true;
}

// Single-input primitives: src filled, dst allocated.
template <typename PrimitiveDesc, typename Primitive>
bool finish_unary(const PrimitiveDesc& pd, Prepared* out) {
  out->primitive = Primitive(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_SRC, filled(pd.src_desc(), out->engine)},
               {DNNL_ARG_DST, dnnl::memory(pd.dst_desc(), out->engine)}};
  return true;
}

inline bool prepare_pool(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  algorithm alg = c.algorithm == "max"           ? algorithm::pooling_max
                  : c.algorithm == "avg_include" ? algorithm::pooling_avg_include_padding
                                                 : algorithm::pooling_avg_exclude_padding;
  pooling_forward::desc d(prop_kind::forward_inference, alg, activation_desc(c.src[0], c),
                          activation_desc(c.dst, c), dims_of(c.strides), dims_of(c.kernel),
                          dims_of(c.pads_begin), dims_of(c.pads_end));
  return finish_unary<pooling_forward::primitive_desc, pooling_forward>(
      pooling_forward::primitive_desc(d, out->engine), out);
}

inline bool prepare_eltwise(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  eltwise_forward::desc d(prop_kind::forward_inference, eltwise_algorithm(c.algorithm),
                          activation_desc(c.src[0], c), static_cast<float>(c.alpha),
                          static_cast<float>(c.beta));
  return finish_unary<eltwise_forward::primitive_desc, eltwise_forward>(
      eltwise_forward::primitive_desc(d, out->engine), out);
}

inline bool prepare_batch_norm(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  engine& eng = out->engine;
  auto flags =
      normalization_flags::use_global_stats | normalization_flags::use_scale | normalization_flags::use_shift;
  batch_normalization_forward::desc d(prop_kind::forward_inference, activation_desc(c.src[0], c), 1e-5f,
                                      flags);
  batch_normalization_forward::primitive_desc pd(d, eng);
  finish_unary<batch_normalization_forward::primitive_desc, batch_normalization_forward>(pd, out);
  memory::desc stat_md({c.src[0][1]}, memory::data_type::f32, memory::format_tag::a);
  out->args[DNNL_ARG_MEAN] = filled(stat_md, eng);
  out->args[DNNL_ARG_VARIANCE] = filled(stat_md, eng);
  out->args[DNNL_ARG_SCALE] = filled(stat_md, eng);
  out->args[DNNL_ARG_SHIFT] = filled(stat_md, eng);
  return true;
}

inline bool prepare_softmax(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  softmax_forward::desc d(prop_kind::forward_inference, activation_desc(c.src[0], c),
                          static_cast<int>(c.axis));
  return finish_unary<softmax_forward::primitive_desc, softmax_forward>(
      softmax_forward::primitive_desc(d, out->engine), out);
}

inline bool prepare_binary(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  engine& eng = out->engine;
  algorithm alg = c.algorithm == "mul"   ? algorithm::binary_mul
                  : c.algorithm == "sub" ? algorithm::binary_sub
                  : c.algorithm == "div" ? algorithm::binary_div
                                         : algorithm::binary_add;
  binary::desc d(alg, activation_desc(c.src[0], c), activation_desc(c.src[1], c), activation_desc(c.dst, c));
  binary::primitive_desc pd(d, eng);
  out->primitive = binary(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_SRC_0, filled(pd.src_desc(0), eng)},
               {DNNL_ARG_SRC_1, filled(pd.src_desc(1), eng)},
               {DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
  return true;
}

inline bool prepare_concat(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  engine& eng = out->engine;
  std::vector<memory::desc> srcs;
  for (const auto& s : c.src) srcs.push_back(activation_desc(s, c));
  concat::primitive_desc pd(activation_desc(c.dst, c), static_cast<int>(c.axis), srcs, eng);
  out->primitive = concat(pd);
  out->implementation = pd.impl_info_str();
  out->args = {{DNNL_ARG_DST, memory(pd.dst_desc(), eng)}};
  for (size_t i = 0; i < srcs.size(); ++i)
    out->args[DNNL_ARG_MULTIPLE_SRC + static_cast<int>(i)] = filled(srcs[i], eng);
  return true;
}

inline bool prepare_lrn(const BenchCase& c, Prepared* out, std::string*) {
  using namespace dnnl;
  lrn_forward::desc d(prop_kind::forward_inference, algorithm::lrn_across_channels,
                      activation_desc(c.src[0], c), c.kernel.empty() ? 5 : c.kernel[0],
                      static_cast<float>(c.alpha), static_cast<float>(c.beta), 1.f);
  return finish_unary<lrn_forward::primitive_desc, lrn_forward>(lrn_forward::primitive_desc(d, out->engine),
                                                                out);
}

struct OpPreparer {
  const char* op;
  Preparer prepare;
};
inline constexpr OpPreparer kPreparers[] = {
    {"conv", prepare_conv},       {"inner_product", prepare_inner_product},
    {"matmul", prepare_matmul},   {"pool", prepare_pool},
    {"eltwise", prepare_eltwise}, {"batch_norm", prepare_batch_norm},
    {"softmax", prepare_softmax}, {"binary", prepare_binary},
    {"concat", prepare_concat},   {"lrn", prepare_lrn},
};

// Builds the primitive and its arguments (setup: never timed). False with `why` when oneDNN has no
// implementation for this case on this CPU (e.g. winograd for a 1x1 kernel, bf16 without support).
inline bool prepare(const BenchCase& c, Prepared* out, std::string* why) {
  const OpPreparer* entry = nullptr;
  for (const OpPreparer& e : kPreparers)
    if (c.op == e.op) entry = &e;
  if (!entry) {
    *why = "no oneDNN primitive for op '" + c.op + "'";
    return false;
  }
  try {
    out->engine = dnnl::engine(dnnl::engine::kind::cpu, 0);
    out->stream = dnnl::stream(out->engine);
    return entry->prepare(c, out, why);
  } catch (const dnnl::error& e) {
    *why = std::string("oneDNN: ") + e.what();
    return false;
  }
}

}  // namespace strata::lowerbound::onednn
