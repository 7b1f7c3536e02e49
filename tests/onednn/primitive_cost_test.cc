// FLOPs and bytes of oneDNN primitives (onednn/primitive_cost.h) against brute-force counts: loop
// nests that walk every output and every tap of the operation as its definition states, on real
// layer shapes (resnet18's 20 convolutions, its max pool, global average pool, batch norms and fc;
// a depthwise convolution, a transposed convolution, a batched matmul), and the same problems read
// back from oneDNN 2.6's own verbose lines.
#include "onednn/primitive_cost.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "onednn/verbose_parser.h"

namespace strata::onednn {
namespace {

Dims dims(std::initializer_list<int64_t> values) {
  Dims d;
  for (int64_t v : values) d.push(v);
  return d;
}

// Output positions along one axis: window starts from -pad_l, stepping by stride, while the
// dilated window still ends inside the padded input.
int64_t positions(int64_t in, int64_t kernel, int64_t stride, int64_t pad_l, int64_t pad_r, int64_t dilation = 0) {
  int64_t count = 0;
  for (int64_t start = -pad_l; start + (kernel - 1) * (dilation + 1) <= in - 1 + pad_r; start += stride) ++count;
  return count;
}

struct Conv {
  int64_t mb, ic, oc, ih, iw, kh, kw, stride, pad, groups = 1;
  bool bias = false;
};

struct Counted {
  double flops = 0, bytes = 0;
  int64_t oh = 0, ow = 0;
};

// Every multiply-add of the convolution, counted by walking outputs and taps.
Counted brute_force_conv(const Conv& c) {
  Counted r;
  r.oh = positions(c.ih, c.kh, c.stride, c.pad, c.pad);
  r.ow = positions(c.iw, c.kw, c.stride, c.pad, c.pad);
  const int64_t ic_per_group = c.ic / c.groups;
  int64_t macs = 0;
  for (int64_t n = 0; n < c.mb; ++n)
    for (int64_t o = 0; o < c.oc; ++o)
      for (int64_t y = 0; y < r.oh; ++y)
        for (int64_t x = 0; x < r.ow; ++x) {
          for (int64_t i = 0; i < ic_per_group; ++i)
            for (int64_t ky = 0; ky < c.kh; ++ky)
              for (int64_t kx = 0; kx < c.kw; ++kx) ++macs;
          if (c.bias) r.flops += 1;
        }
  r.flops += 2.0 * static_cast<double>(macs);
  const double src = static_cast<double>(c.mb * c.ic * c.ih * c.iw);
  const double wei = static_cast<double>(c.oc * ic_per_group * c.kh * c.kw);
  const double dst = static_cast<double>(c.mb * c.oc * r.oh * r.ow);
  r.bytes = 4 * (src + wei + dst + (c.bias ? static_cast<double>(c.oc) : 0));
  return r;
}

PrimitiveProblem conv_problem(const Conv& c, int64_t oh, int64_t ow) {
  PrimitiveProblem p;
  p.kind = CostKind::kConvolution;
  p.src = dims({c.mb, c.ic, c.ih, c.iw});
  p.weights = c.groups > 1 ? dims({c.groups, c.oc / c.groups, c.ic / c.groups, c.kh, c.kw})
                           : dims({c.oc, c.ic, c.kh, c.kw});
  p.dst = dims({c.mb, c.oc, oh, ow});
  if (c.bias) p.bias = dims({c.oc});
  p.src_bytes = p.weights_bytes = p.bias_bytes = p.dst_bytes = 4;
  return p;
}

const std::vector<Conv>& resnet18_convolutions() {
  static const std::vector<Conv> convs = [] {
    std::vector<Conv> v = {{1, 3, 64, 224, 224, 7, 7, 2, 3}};
    for (int k = 0; k < 4; ++k) v.push_back({1, 64, 64, 56, 56, 3, 3, 1, 1});
    const int64_t channels[] = {64, 128, 256, 512};
    const int64_t size[] = {56, 28, 14, 7};
    for (int stage = 1; stage < 4; ++stage) {
      const int64_t in = channels[stage - 1], out = channels[stage], s = size[stage];
      v.push_back({1, in, out, 2 * s, 2 * s, 3, 3, 2, 1});  // block 0, conv1 (stride 2)
      v.push_back({1, out, out, s, s, 3, 3, 1, 1});         // block 0, conv2
      v.push_back({1, in, out, 2 * s, 2 * s, 1, 1, 2, 0});  // downsample
      v.push_back({1, out, out, s, s, 3, 3, 1, 1});         // block 1
      v.push_back({1, out, out, s, s, 3, 3, 1, 1});
    }
    return v;
  }();
  return convs;
}

TEST(PrimitiveCost, Resnet18ConvolutionsMatchABruteForceCount) {
  ASSERT_EQ(resnet18_convolutions().size(), 20u);
  double total = 0;
  for (const Conv& c : resnet18_convolutions()) {
    Counted counted = brute_force_conv(c);
    PrimitiveCost cost = primitive_cost(conv_problem(c, counted.oh, counted.ow));
    ASSERT_TRUE(cost.flops && cost.bytes);
    EXPECT_DOUBLE_EQ(*cost.flops, counted.flops) << c.ic << "->" << c.oc << " k" << c.kh << " s" << c.stride;
    EXPECT_DOUBLE_EQ(*cost.bytes, counted.bytes);
    total += *cost.flops;
  }
  // PyTorch 1.13's own counter (torch.autograd.profiler, with_flops=True) says 3,627,122,688 for
  // resnet18's convolutions at batch 1, 224x224.
  EXPECT_DOUBLE_EQ(total, 3627122688.0);
}

TEST(PrimitiveCost, GroupedBiasedAndBackwardConvolutions) {
  const Conv depthwise = {1, 32, 32, 112, 112, 3, 3, 1, 1, 32, true};  // mobilenet's first depthwise
  Counted counted = brute_force_conv(depthwise);
  PrimitiveCost cost = primitive_cost(conv_problem(depthwise, counted.oh, counted.ow));
  EXPECT_DOUBLE_EQ(*cost.flops, counted.flops);
  EXPECT_DOUBLE_EQ(*cost.bytes, counted.bytes);
  // Backward by data or weights: the same multiply-adds (diff tensors in the same slots).
  const Conv plain = {2, 64, 128, 28, 28, 3, 3, 1, 1};
  Counted fwd = brute_force_conv(plain);
  PrimitiveProblem p = conv_problem(plain, fwd.oh, fwd.ow);
  set_prop_kind("backward_data", &p);
  EXPECT_DOUBLE_EQ(*primitive_cost(p).flops, fwd.flops);
  set_prop_kind("backward_weights", &p);
  EXPECT_DOUBLE_EQ(*primitive_cost(p).flops, fwd.flops);
}

TEST(PrimitiveCost, TransposedConvolutionMatmulAndInnerProduct) {
  // Deconvolution 16 -> 8 channels, 14x14 -> 28x28 (k4 s2 p1): every input pixel scatters into a
  // 4x4 window of every output channel.
  int64_t macs = 0;
  for (int64_t ic = 0; ic < 16; ++ic)
    for (int64_t y = 0; y < 14; ++y)
      for (int64_t x = 0; x < 14; ++x)
        for (int64_t oc = 0; oc < 8; ++oc)
          for (int64_t k = 0; k < 16; ++k) ++macs;
  PrimitiveProblem deconv;
  deconv.kind = CostKind::kDeconvolution;
  deconv.src = dims({1, 16, 14, 14});
  deconv.weights = dims({8, 16, 4, 4});
  deconv.dst = dims({1, 8, 28, 28});
  EXPECT_DOUBLE_EQ(*primitive_cost(deconv).flops, 2.0 * static_cast<double>(macs));
  EXPECT_FALSE(primitive_cost(deconv).bytes.has_value());  // element sizes unknown: no bytes

  // Batched matmul [2, 64, 128] x [2, 128, 256] + bias.
  double flops = 0;
  for (int b = 0; b < 2; ++b)
    for (int m = 0; m < 64; ++m)
      for (int n = 0; n < 256; ++n) {
        for (int k = 0; k < 128; ++k) flops += 2;
        flops += 1;  // bias
      }
  PrimitiveProblem mm;
  mm.kind = CostKind::kMatmul;
  mm.src = dims({2, 64, 128});
  mm.weights = dims({2, 128, 256});
  mm.bias = dims({256});
  mm.dst = dims({2, 64, 256});
  mm.src_bytes = mm.weights_bytes = mm.bias_bytes = mm.dst_bytes = 4;
  EXPECT_DOUBLE_EQ(*primitive_cost(mm).flops, flops);
  EXPECT_DOUBLE_EQ(*primitive_cost(mm).bytes, 4.0 * (2 * 64 * 128 + 2 * 128 * 256 + 256 + 2 * 64 * 256));

  // resnet18's fc: 512 -> 1000 with bias, batch 1 (PyTorch counts 2 x 512 x 1000 for the addmm).
  PrimitiveProblem fc;
  fc.kind = CostKind::kInnerProduct;
  fc.src = dims({1, 512});
  fc.weights = dims({1000, 512});
  fc.bias = dims({1000});
  fc.dst = dims({1, 1000});
  EXPECT_DOUBLE_EQ(*primitive_cost(fc).flops, 2.0 * 512 * 1000 + 1000);
}

TEST(PrimitiveCost, PoolingEltwiseAndBatchNorm) {
  // resnet18's max pool: 3x3, stride 2, pad 1, 112 -> 56; one comparison per tap and output.
  const int64_t out = positions(112, 3, 2, 1, 1);
  ASSERT_EQ(out, 56);
  double compares = 0;
  for (int64_t c = 0; c < 64; ++c)
    for (int64_t y = 0; y < out; ++y)
      for (int64_t x = 0; x < out; ++x)
        for (int64_t k = 0; k < 9; ++k) compares += 1;
  PrimitiveProblem pool;
  pool.kind = CostKind::kPooling;
  pool.src = dims({1, 64, 112, 112});
  pool.dst = dims({1, 64, out, out});
  pool.window = dims({3, 3});
  pool.src_bytes = pool.dst_bytes = 4;
  EXPECT_DOUBLE_EQ(*primitive_cost(pool).flops, compares);
  EXPECT_DOUBLE_EQ(*primitive_cost(pool).bytes, 4.0 * 64 * (112 * 112 + 56 * 56));
  // Global average pool 7x7 over 512 channels: 49 adds and a divide per channel.
  pool.src = dims({1, 512, 7, 7});
  pool.dst = dims({1, 512, 1, 1});
  pool.window = dims({7, 7});
  pool.average = true;
  EXPECT_DOUBLE_EQ(*primitive_cost(pool).flops, 512.0 * (49 + 1));

  PrimitiveProblem relu;
  relu.kind = CostKind::kEltwise;
  relu.src = relu.dst = dims({1, 64, 112, 112});
  relu.src_bytes = relu.dst_bytes = 4;
  EXPECT_DOUBLE_EQ(*primitive_cost(relu).flops, 64.0 * 112 * 112);
  EXPECT_DOUBLE_EQ(*primitive_cost(relu).bytes, 2 * 4.0 * 64 * 112 * 112);

  // Batch norm on [2, 64, 28, 28], counted by running the textbook algorithm's passes.
  const double n = 2.0 * 64 * 28 * 28;
  PrimitiveProblem bn;
  bn.kind = CostKind::kBatchNorm;
  bn.src = bn.dst = dims({2, 64, 28, 28});
  bn.src_bytes = bn.dst_bytes = 4;
  bn.scale_shift_arrays = 2;
  set_prop_kind("forward_training", &bn);
  double ops = 0;
  for (double i = 0; i < n; ++i) ops += 1;      // sum for the mean
  for (double i = 0; i < n; ++i) ops += 3;      // (x - mean)^2 accumulated
  for (double i = 0; i < n; ++i) ops += 2;      // x * scale_c + shift_c
  EXPECT_DOUBLE_EQ(*primitive_cost(bn).flops, ops);
  EXPECT_DOUBLE_EQ(*primitive_cost(bn).bytes, 4 * (2 * n + 64 * 4));  // src, dst, mean, var, scale, shift
  bn.global_stats = true;
  set_prop_kind("forward_inference", &bn);
  EXPECT_DOUBLE_EQ(*primitive_cost(bn).flops, 2 * n);
  set_prop_kind("backward", &bn);
  EXPECT_FALSE(primitive_cost(bn).flops.has_value());  // no formula: left out, never guessed
  PrimitiveProblem reorder;
  EXPECT_FALSE(primitive_cost(reorder).flops.has_value());
}

// Lines oneDNN 2.6.3 printed here (ONEDNN_VERBOSE=1) for PyTorch 1.13's resnet18 and mkldnn ops.
TEST(PrimitiveCost, VerboseLinesGiveTheSameProblems) {
  struct Case {
    const char* line;
    double flops, bytes;
  };
  const Case cases[] = {
      {"onednn_verbose,exec,cpu,convolution,jit:avx512_core,forward_training,src_f32::blocked:abcd:f0 "
       "wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,attr-scratchpad:user "
       ",alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,19.9148",
       236027904, 4 * (3 * 224 * 224 + 64 * 3 * 49 + 64 * 112 * 112)},
      {"onednn_verbose,exec,cpu,eltwise,jit:avx512_core,forward_training,data_f32::blocked:abcd:f0 "
       "diff_undef::undef::f0,attr-scratchpad:user ,alg:eltwise_relu alpha:0 beta:0,1x64x56x56,0.580078",
       64 * 56 * 56, 2 * 4 * 64 * 56 * 56},
      {"onednn_verbose,exec,cpu,pooling_v2,jit:avx512_core,forward_inference,src_f32::blocked:abcd:f0 "
       "dst_f32::blocked:abcd:f0 ws_undef::undef::f0,attr-scratchpad:user ,alg:pooling_max,"
       "mb1ic64_ih56oh28kh3sh2dh0ph1_iw56ow28kw3sw2dw0pw1,0.301025",
       64 * 28 * 28 * 9, 4 * 64 * (56 * 56 + 28 * 28)},
      {"onednn_verbose,exec,cpu,pooling_v2,jit:avx512_core,forward_training,src_f32::blocked:abcd:f0 "
       "dst_f32::blocked:abcd:f0 ws_undef::undef::f0,attr-scratchpad:user ,alg:pooling_avg_exclude_padding,"
       "mb1ic64_ih56oh1kh56sh56dh0ph0_iw56ow1kw56sw56dw0pw0,0.0769043",
       64 * (56 * 56 + 1), 4 * 64 * (56 * 56 + 1)},
      {"onednn_verbose,exec,cpu,batch_normalization,ncsp_bnorm:any,forward_inference,data_f32::blocked:abcd:f0 "
       "diff_undef::undef::f0,attr-scratchpad:user ,flags:GS,mb1ic64ih56iw56,0.546875",
       2 * 64 * 56 * 56, 4 * (2 * 64 * 56 * 56 + 64 * 4)},
      {"onednn_verbose,exec,cpu,inner_product,brgemm:avx512_core,forward_training,src_f32::blocked:ab:f0 "
       "wei_f32:p:blocked:AB16b64a:f0 bia_f32::blocked:a:f0 dst_f32::blocked:ab:f0,attr-scratchpad:user ,,"
       "mb1ic512oc1000,0.153076",
       2 * 512 * 1000 + 1000, 4 * (512 + 512 * 1000 + 1000 + 1000)},
      {"onednn_verbose,exec,cpu,matmul,brg:avx512_core,undef,src_f32::blocked:abc:f0 wei_f32::blocked:abc:f0 "
       "bia_f32::blocked:abc:f0_mask4 dst_f32::blocked:abc:f0,,,2x64x128:2x128x256:2x64x256,0.2",
       2.0 * 2 * 64 * 256 * 128 + 2 * 64 * 256, 4.0 * (2 * 64 * 128 + 2 * 128 * 256 + 256 + 2 * 64 * 256)},
  };
  for (const Case& c : cases) {
    VerboseLine v = parse_verbose_line(c.line);
    PrimitiveProblem p;
    ASSERT_TRUE(problem_from_verbose(v, &p)) << c.line;
    PrimitiveCost cost = primitive_cost(p);
    ASSERT_TRUE(cost.flops && cost.bytes) << c.line;
    EXPECT_DOUBLE_EQ(*cost.flops, c.flops) << c.line;
    EXPECT_DOUBLE_EQ(*cost.bytes, c.bytes) << c.line;
  }
  // Each resnet18 convolution as oneDNN prints it: same cost as the brute-force count.
  for (const Conv& c : resnet18_convolutions()) {
    Counted counted = brute_force_conv(c);
    std::string desc = "mb1_ic" + std::to_string(c.ic) + "oc" + std::to_string(c.oc) + "_ih" + std::to_string(c.ih) +
                       "oh" + std::to_string(counted.oh) + "kh" + std::to_string(c.kh) + "sh" +
                       std::to_string(c.stride) + "dh0ph" + std::to_string(c.pad) + "_iw" + std::to_string(c.iw) +
                       "ow" + std::to_string(counted.ow) + "kw" + std::to_string(c.kw) + "sw" +
                       std::to_string(c.stride) + "dw0pw" + std::to_string(c.pad);
    std::string line =
        "onednn_verbose,exec,cpu,convolution,brgconv:avx512_core,forward_training,src_f32::blocked:abcd:f0 "
        "wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,,alg:convolution_direct," +
        desc + ",1.5";
    PrimitiveProblem p;
    ASSERT_TRUE(problem_from_verbose(parse_verbose_line(line), &p)) << line;
    EXPECT_DOUBLE_EQ(*primitive_cost(p).flops, counted.flops) << line;
    EXPECT_DOUBLE_EQ(*primitive_cost(p).bytes, counted.bytes) << line;
  }
  // A reorder and a line with a descriptor this cannot read: no problem, no cost.
  PrimitiveProblem p;
  EXPECT_FALSE(problem_from_verbose(
      parse_verbose_line("onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 "
                         "dst_f32::blocked:Acdb16a:f0,attr-scratchpad:user ,,64x3x7x7,0.027832"),
      &p));
  EXPECT_FALSE(problem_from_verbose(
      parse_verbose_line("onednn_verbose,exec,cpu,convolution,x,forward_training,src_f32::blocked:abcd:f0,,,"
                         "garbage,1.0"),
      &p));
}

}  // namespace
}  // namespace strata::onednn
