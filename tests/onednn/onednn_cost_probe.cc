// A oneDNN program the tests record with --level library (tests/python/test_onednn_cost.py): runs one
// primitive of each kind primitive_cost.h has a formula for, on real layer shapes, once each, through
// libdnnl (linked; so the interposer sees the calls, and --onednn verbose records the same from
// oneDNN's own lines). Prints "probe: <kind>" for each, in order.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <unordered_map>

using namespace dnnl;
using tag = memory::format_tag;
using dt = memory::data_type;

namespace {

memory::desc md(const memory::dims& d, tag t) { return memory::desc(d, dt::f32, t); }

void run(const char* what, const primitive& p, stream& s, const std::unordered_map<int, memory>& args) {
  p.execute(s, args);
  s.wait();
  std::printf("probe: %s\n", what);
}

}  // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  auto mem = [&](const memory::desc& d) { return memory(d, eng); };

  // resnet18's first convolution: 3 -> 64, 7x7, stride 2, pad 3 (224 -> 112), no bias.
  {
    auto src = md({1, 3, 224, 224}, tag::nchw), wei = md({64, 3, 7, 7}, tag::oihw), dst = md({1, 64, 112, 112}, tag::nchw);
    convolution_forward::primitive_desc pd(
        convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, wei, dst, {2, 2},
                                  {3, 3}, {3, 3}),
        eng);
    run("convolution", convolution_forward(pd), s,
        {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_WEIGHTS, mem(wei)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // A depthwise convolution with bias (mobilenet's): 32 groups, 3x3, 112x112.
  {
    auto src = md({1, 32, 112, 112}, tag::nchw), wei = md({32, 1, 1, 3, 3}, tag::goihw), bias = md({32}, tag::x),
         dst = md({1, 32, 112, 112}, tag::nchw);
    convolution_forward::primitive_desc pd(
        convolution_forward::desc(prop_kind::forward_inference, algorithm::convolution_direct, src, wei, bias, dst,
                                  {1, 1}, {1, 1}, {1, 1}),
        eng);
    run("convolution_depthwise", convolution_forward(pd), s,
        {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_WEIGHTS, mem(wei)}, {DNNL_ARG_BIAS, mem(bias)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // A transposed convolution: 16 -> 8 channels, 4x4, stride 2, pad 1 (14 -> 28).
  {
    auto src = md({1, 16, 14, 14}, tag::nchw), wei = md({8, 16, 4, 4}, tag::oihw), dst = md({1, 8, 28, 28}, tag::nchw);
    deconvolution_forward::primitive_desc pd(
        deconvolution_forward::desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src, wei, dst,
                                    {2, 2}, {1, 1}, {1, 1}),
        eng);
    run("deconvolution", deconvolution_forward(pd), s,
        {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_WEIGHTS, mem(wei)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // A batched matmul with bias: [2, 64, 128] x [2, 128, 256] + [1, 1, 256].
  {
    auto src = md({2, 64, 128}, tag::abc), wei = md({2, 128, 256}, tag::abc), bias = md({1, 1, 256}, tag::abc),
         dst = md({2, 64, 256}, tag::abc);
    matmul::primitive_desc pd(matmul::desc(src, wei, bias, dst), eng);
    run("matmul", matmul(pd), s,
        {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_WEIGHTS, mem(wei)}, {DNNL_ARG_BIAS, mem(bias)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // resnet18's fc: 512 -> 1000 with bias.
  {
    auto src = md({1, 512}, tag::nc), wei = md({1000, 512}, tag::oi), bias = md({1000}, tag::x), dst = md({1, 1000}, tag::nc);
    inner_product_forward::primitive_desc pd(
        inner_product_forward::desc(prop_kind::forward_inference, src, wei, bias, dst), eng);
    run("inner_product", inner_product_forward(pd), s,
        {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_WEIGHTS, mem(wei)}, {DNNL_ARG_BIAS, mem(bias)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // ReLU on resnet18's first activation.
  {
    auto data = md({1, 64, 112, 112}, tag::nchw);
    eltwise_forward::primitive_desc pd(
        eltwise_forward::desc(prop_kind::forward_inference, algorithm::eltwise_relu, data, 0.f, 0.f), eng);
    memory m = mem(data);
    run("eltwise", eltwise_forward(pd), s, {{DNNL_ARG_SRC, m}, {DNNL_ARG_DST, m}});
  }
  // resnet18's max pool (3x3, stride 2, pad 1: 112 -> 56) and global average pool (7x7 -> 1).
  {
    auto src = md({1, 64, 112, 112}, tag::nchw), dst = md({1, 64, 56, 56}, tag::nchw);
    pooling_v2_forward::primitive_desc pd(
        pooling_v2_forward::desc(prop_kind::forward_inference, algorithm::pooling_max, src, dst, {2, 2}, {3, 3},
                                 {0, 0}, {1, 1}, {1, 1}),
        eng);
    run("pooling_max", pooling_v2_forward(pd), s, {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_DST, mem(dst)}});
  }
  {
    auto src = md({1, 512, 7, 7}, tag::nchw), dst = md({1, 512, 1, 1}, tag::nchw);
    pooling_v2_forward::primitive_desc pd(
        pooling_v2_forward::desc(prop_kind::forward_inference, algorithm::pooling_avg_exclude_padding, src, dst,
                                 {7, 7}, {7, 7}, {0, 0}, {0, 0}, {0, 0}),
        eng);
    run("pooling_avg", pooling_v2_forward(pd), s, {{DNNL_ARG_SRC, mem(src)}, {DNNL_ARG_DST, mem(dst)}});
  }
  // Batch norm: inference with running statistics (resnet18's bn1 after the max pool) and training.
  {
    auto data = md({1, 64, 56, 56}, tag::nchw);
    batch_normalization_forward::primitive_desc pd(
        batch_normalization_forward::desc(prop_kind::forward_inference, data, 1e-5f,
                                          normalization_flags::use_global_stats | normalization_flags::use_scale_shift),
        eng);
    memory m = mem(data);
    run("batch_norm_inference", batch_normalization_forward(pd), s,
        {{DNNL_ARG_SRC, m},
         {DNNL_ARG_DST, m},
         {DNNL_ARG_MEAN, mem(pd.mean_desc())},
         {DNNL_ARG_VARIANCE, mem(pd.variance_desc())},
         {DNNL_ARG_SCALE_SHIFT, mem(pd.weights_desc())}});
  }
  {
    auto data = md({2, 64, 28, 28}, tag::nchw);
    batch_normalization_forward::primitive_desc pd(
        batch_normalization_forward::desc(prop_kind::forward_training, data, 1e-5f, normalization_flags::use_scale_shift),
        eng);
    memory m = mem(data);
    run("batch_norm_training", batch_normalization_forward(pd), s,
        {{DNNL_ARG_SRC, m},
         {DNNL_ARG_DST, m},
         {DNNL_ARG_MEAN, mem(pd.mean_desc())},
         {DNNL_ARG_VARIANCE, mem(pd.variance_desc())},
         {DNNL_ARG_SCALE_SHIFT, mem(pd.weights_desc())}});
  }
  return 0;
}
