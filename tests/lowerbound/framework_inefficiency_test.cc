// Framework inefficiency inspection on traces built here with known answers: a CPU run with oneDNN
// spans (reorders around a conv, a padded input, a slower implementation, calls outside layers) and a
// GPU run with cuDNN spans, CUDA launches and device work (wrong data type and layout, a layout
// kernel inside the call, a pad kernel, a memset and a stream wait outside it). Plus, when the
// fixture is present, a real `strata record --level library` trace of PyTorch's resnet18.
#include "lowerbound/analyses/framework_inefficiency.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/level.h"
#include "lowerbound/analyses/trace_compare.h"
#include "lowerbound/ir/onnx_loader.h"
#include "trace/trace_loader.h"

namespace strata::lowerbound {
namespace {

std::string data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" + name;
}

using Attrs = std::vector<std::pair<std::string, std::string>>;

struct Builder {
  trace::Trace trace;
  uint64_t next_id = 1;
  Builder() { trace.add_process(trace::Process{}); }
  size_t add(const std::string& name, Level level, SpanKind kind, int64_t start, int64_t end,
             const Attrs& attrs = {}, uint64_t correlation = 0, bool on_device = false) {
    SpanRecord r;
    r.span_id = next_id++;
    r.start_ns = start;
    r.end_ns = end;
    r.level = static_cast<uint8_t>(level);
    r.kind = static_cast<uint8_t>(kind);
    r.correlation_id = correlation;
    r.tid = on_device ? 0 : 7;
    if (on_device) {
      r.device = 0;
      r.stream = 7;
    }
    r.name = trace.strings.intern(name);
    std::vector<AttrRecord> a;
    for (auto& [k, v] : attrs) a.push_back(trace.string_attr(k, v));
    r.attr_count = static_cast<uint16_t>(a.size());
    return trace.add_span(r, a);
  }
  size_t op(const std::string& name, int64_t start, int64_t end, const Attrs& attrs = {}) {
    return add(name, Level::kLayer, SpanKind::kSpan, start, end, attrs);
  }
  size_t lib(const std::string& name, int64_t start, int64_t end, const Attrs& attrs = {}) {
    return add(name, Level::kLibrary, SpanKind::kSpan, start, end, attrs);
  }
  // A launch at [start, start+2] and its device work at [dstart, dend], typed as the tracer would.
  void launch(const std::string& api, const std::string& kernel, uint64_t corr, int64_t start, int64_t dstart,
              int64_t dend, ActivityType activity = ActivityType::kKernel) {
    trace.spans[add(api, Level::kRuntimeApi, SpanKind::kLaunch, start, start + 2, {}, corr)].activity =
        static_cast<uint8_t>(ActivityType::kRuntimeCall);
    trace.spans[add(kernel, Level::kDevice, SpanKind::kExecution, dstart, dend, {}, corr, true)].activity =
        static_cast<uint8_t>(activity);
  }
};

std::string brackets(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out + "]";
}

std::string onednn_shapes(const Shape& src, const Shape& weights, const Shape& dst) {
  std::string s = "src:" + brackets(src);
  if (!weights.empty()) s += " weights:" + brackets(weights);
  return s + " dst:" + brackets(dst);
}

uint32_t nth(const LayerModel& m, const std::string& op, int n) {
  for (uint32_t i = 0; i < m.layers.size(); ++i)
    if (m.layers[i].op_type == op && n-- == 0) return i;
  ADD_FAILURE() << "no " << op;
  return 0;
}

LayerModel chain_net() {
  LayerModel m;
  std::string error;
  EXPECT_TRUE(load_onnx_file(data("chain_net.onnx"), &m, &error)) << error;
  return m;
}

// Every layer measured at `ns` (convs at conv_ns) with the given backend/algorithm/implementation.
ModelEstimate estimate(const LayerModel& m, LatencyIndex& index, const std::string& backend, double conv_ns,
                       const std::string& algorithm, const std::string& impl) {
  for (const Layer& l : m.layers) {
    if (l.op_type == "Flatten") continue;
    index.add(BenchRecord{"s", backend, "f32", "nchw", l.signature(),
                          l.op_type == "Conv" ? algorithm : "default", "", l.op_type == "Conv" ? impl : "",
                          l.op_type == "Conv" ? conv_ns : 10.0, 0, 3, 1, ""});
  }
  return estimate_model(m, index, "f32", "nchw", false);
}

const ParameterDeviation* find(const InefficiencyReport& r, uint32_t layer, const std::string& parameter) {
  for (const ParameterDeviation& d : r.deviations)
    if (d.layer == layer && d.parameter == parameter) return &d;
  return nullptr;
}

const LayerInefficiency* find_layer(const InefficiencyReport& r, uint32_t layer) {
  for (const LayerInefficiency& l : r.layers)
    if (l.layer == layer) return &l;
  return nullptr;
}

TEST(FrameworkInefficiency, CallClasses) {
  EXPECT_EQ(call_class_of("onednn::convolution"), "conv");
  EXPECT_EQ(call_class_of("onednn::reorder"), "reorder");
  EXPECT_EQ(call_class_of("onednn::pooling_v2"), "pool");
  EXPECT_EQ(call_class_of("cudnnConvolutionBiasActivationForward"), "conv");
  EXPECT_EQ(call_class_of("cudnnTransformTensor"), "reorder");
  EXPECT_EQ(call_class_of("cublasLtMatmul"), "gemm");
  EXPECT_EQ(call_class_of("cublasSgemm"), "gemm");
  EXPECT_EQ(call_class_of("aten::conv2d"), "other");
  EXPECT_EQ(expected_call_class("Conv"), "conv");
  EXPECT_EQ(expected_call_class("GlobalAveragePool"), "pool");
  EXPECT_EQ(expected_call_class("Flatten"), "");
}

TEST(FrameworkInefficiency, ParsesOneDnnAndCudnnAttributes) {
  Builder b;
  size_t grouped =
      b.lib("onednn::convolution", 0, 10,
            {{"impl", "jit_dw:avx2"}, {"shapes", "src:[1,32,8,8] weights:[32,1,1,3,3] dst:[1,32,8,8]"}});
  size_t cudnn = b.lib("cudnnConvolutionBiasActivationForward", 20, 30,
                       {{"x.shape", "1x3x16x16"},
                        {"x.strides", "768x1x48x3"},
                        {"x.dtype", "float16"},
                        {"w.shape", "8x3x3x3"},
                        {"w.format", "NHWC"},
                        {"y.shape", "1x8x16x16"},
                        {"conv.pads", "1x1"},
                        {"conv.strides", "1x1"},
                        {"conv.groups", "1"},
                        {"algorithm", "6"},
                        {"activation.mode", "1"}});
  size_t broken = b.lib("onednn::convolution", 40, 50, {{"shapes", "src:[1,x] dst:[1,2"}});
  CallParams g = parse_call(b.trace, grouped);
  EXPECT_EQ(g.library, "onednn");
  EXPECT_EQ(g.groups, 32);
  EXPECT_EQ(g.weights, (Shape{32, 1, 3, 3}));  // G x O/G x I/G x KH x KW folded to ONNX's form
  EXPECT_EQ(g.algorithm, "jit_dw:avx2");
  CallParams c = parse_call(b.trace, cudnn);
  EXPECT_EQ(c.dtype, "f16");
  EXPECT_EQ(c.layout, "nhwc");
  EXPECT_EQ(c.weights_layout, "nhwc");
  EXPECT_EQ(c.pads, (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(c.algorithm, "winograd");
  EXPECT_EQ(c.post_ops, "relu");
  CallParams x = parse_call(b.trace, broken);  // malformed: not recorded, never a wrong value
  EXPECT_TRUE(x.src.empty());
  EXPECT_TRUE(x.dst.empty());
}

// The oneDNN tracer's descriptor attributes, in oneDNN's verbose notation (as recorded from
// PyTorch 1.13 / oneDNN 2.6): data type, format tags, post-ops, problem descriptor, prop kind.
TEST(FrameworkInefficiency, ParsesOneDnnDescriptorAttributes) {
  Builder b;
  size_t conv = b.lib("onednn::convolution", 0, 10,
                      {{"impl", "jit:avx512_core"},
                       {"prop_kind", "forward_training"},
                       {"shapes", "src:[1,512,7,7] weights:[512,512,3,3] dst:[1,512,7,7]"},
                       {"dtype", "f32"},
                       {"formats",
                        "src_f32::blocked:aBcd16b:f0 wei_f32::blocked:ABcd16b16a:f0 bia_undef::undef::f0 "
                        "dst_f32::blocked:aBcd16b:f0"},
                       {"attrs", "attr-scratchpad:user attr-post-ops:eltwise_relu "},
                       {"desc", "mb1_ic512oc512_ih7oh7kh3sh2dh0ph1_iw7ow7kw3sw2dw1pw0"}});
  size_t grouped = b.lib("onednn::convolution", 20, 30,
                         {{"shapes", "src:[1,32,8,8] weights:[32,1,1,3,3] dst:[1,32,8,8]"},
                          {"desc", "g32mb1_ic32oc32_ih8oh8kh3sh1dh0ph1_iw8ow8kw3sw1dw0pw1"},
                          {"attrs", "attr-scratchpad:user "}});
  size_t reorder = b.lib("onednn::reorder", 40, 50,
                         {{"shapes", "src:[1,64,56,56] dst:[1,64,56,56]"},
                          {"formats", "src_f32::blocked:abcd:f0 dst_f32::blocked:aBcd16b:f0"}});
  CallParams c = parse_call(b.trace, conv);
  EXPECT_EQ(c.dtype, "f32");
  EXPECT_EQ(c.prop_kind, "forward_training");
  EXPECT_EQ(c.layout, "blocked:aBcd16b");
  EXPECT_EQ(c.weights_layout, "blocked:ABcd16b16a");
  EXPECT_EQ(c.post_ops, "relu");
  EXPECT_EQ(c.strides, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(c.pads, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(c.dilations, (std::vector<int64_t>{1, 2}));  // oneDNN's dilation 0 is ONNX's 1
  EXPECT_EQ(c.window, (std::vector<int64_t>{3, 3}));
  CallParams g = parse_call(b.trace, grouped);
  EXPECT_EQ(g.groups, 32);
  EXPECT_EQ(g.post_ops, "none");
  EXPECT_TRUE(g.layout.empty());  // no formats recorded
  EXPECT_EQ(parse_call(b.trace, reorder).conversion, "abcd -> aBcd16b");
}

// CPU: chain_net as PyTorch+oneDNN might run it.
//  conv1: src reorder (5) + weights reorder (4) + conv (30, best implementation) + dst reorder (6)
//  conv2: input padded outside (18x18), a different implementation (gemm:jit), 50 ns vs bound 20
//  batch_norm (no ONNX layer) runs onednn::batch_normalization (7); a reorder outside every op (3)
TEST(FrameworkInefficiency, CpuReordersPaddingAlgorithmAndExtraCalls) {
  LayerModel m = chain_net();
  const uint32_t conv1 = nth(m, "Conv", 0), conv2 = nth(m, "Conv", 1);
  const Layer &c1 = m.layers[conv1], &c2 = m.layers[conv2];
  Builder b;
  b.add("predict", Level::kModel, SpanKind::kSpan, 0, 1000);
  b.op("aten::conv2d", 10, 110);
  b.op("aten::_convolution", 12, 108);
  b.lib("onednn::reorder", 20, 25,
        {{"impl", "jit:uni"}, {"shapes", onednn_shapes(c1.input_shapes[0], {}, c1.input_shapes[0])}});
  b.lib("onednn::reorder", 26, 30,
        {{"impl", "jit:uni"}, {"shapes", onednn_shapes(c1.weight_shapes[0], {}, c1.weight_shapes[0])}});
  b.lib("onednn::convolution", 31, 61,
        {{"impl", "brgconv:avx512_core"},
         {"shapes", onednn_shapes(c1.input_shapes[0], c1.weight_shapes[0], c1.output_shapes[0])}});
  b.lib("onednn::reorder", 62, 68,
        {{"impl", "jit:uni"}, {"shapes", onednn_shapes(c1.output_shapes[0], {}, c1.output_shapes[0])}});
  b.op("aten::relu_", 120, 140);
  b.op("aten::batch_norm", 150, 200);
  b.lib("onednn::batch_normalization", 160, 167, {{"shapes", "src:[1,8,16,16] dst:[1,8,16,16]"}});
  b.lib("onednn::reorder", 202, 205, {{"shapes", "src:[1,8,16,16] dst:[1,8,16,16]"}});  // between ops
  b.op("aten::conv2d", 210, 410);
  Shape padded = c2.input_shapes[0];
  padded[2] += 2;
  padded[3] += 2;
  b.lib("onednn::convolution", 220, 270,
        {{"impl", "gemm:jit"}, {"shapes", onednn_shapes(padded, c2.weight_shapes[0], c2.output_shapes[0])}});
  b.op("aten::relu_", 420, 440);
  b.op("aten::adaptive_avg_pool2d", 450, 500);
  b.op("aten::flatten", 510, 515);
  b.op("aten::linear", 520, 600);

  TraceComparison cmp;
  std::string error;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  const InefficiencyFindings& f = cmp.inefficiency;
  EXPECT_TRUE(f.has_library_spans);
  EXPECT_FALSE(f.has_device_spans);
  ASSERT_EQ(f.layers.size(), 6u);
  EXPECT_EQ(f.layers[0].layer, conv1);
  ASSERT_EQ(f.layers[0].calls.size(), 4u);
  EXPECT_EQ(f.layers[0].main_call, 2);
  EXPECT_DOUBLE_EQ(f.layers[0].outside_calls_ns, 100 - (5 + 4 + 30 + 6));

  LatencyIndex index;
  ModelEstimate e = estimate(m, index, "cpu", 20, "direct", "brgconv:avx512_core");
  InefficiencyReport r = analyze_inefficiencies(m, e, f);
  // conv1: one deviation per reorder, costed at the reorder's time; no parameter of the call deviates.
  const ParameterDeviation* src = find(r, conv1, "src layout");
  const ParameterDeviation* weights = find(r, conv1, "weights layout");
  const ParameterDeviation* dst = find(r, conv1, "dst layout");
  ASSERT_TRUE(src && weights && dst);
  EXPECT_DOUBLE_EQ(src->cost_ns, 5);
  EXPECT_DOUBLE_EQ(weights->cost_ns, 4);
  EXPECT_EQ(weights->observed, "reordered at every call");
  EXPECT_DOUBLE_EQ(dst->cost_ns, 6);
  EXPECT_EQ(find(r, conv1, "algorithm"), nullptr);
  EXPECT_EQ(find(r, conv1, "padding"), nullptr);
  // conv2: padded input and another implementation share the call's excess (50 - 20).
  const ParameterDeviation* pad = find(r, conv2, "padding");
  const ParameterDeviation* algo = find(r, conv2, "algorithm");
  ASSERT_TRUE(pad && algo);
  EXPECT_NE(pad->observed.find("1x8x16x16 -> 1x8x18x18"), std::string::npos) << pad->observed;
  EXPECT_DOUBLE_EQ(pad->cost_ns, 30);
  EXPECT_TRUE(pad->shared_cost);
  EXPECT_EQ(algo->observed, "gemm:jit");
  EXPECT_EQ(algo->expected, "direct (brgconv:avx512_core)");

  const LayerInefficiency* l1 = find_layer(r, conv1);
  const LayerInefficiency* l2 = find_layer(r, conv2);
  ASSERT_TRUE(l1 && l2);
  EXPECT_DOUBLE_EQ(l1->reorder_ns, 15);
  EXPECT_DOUBLE_EQ(l1->outside_ns, 55);
  EXPECT_DOUBLE_EQ(l1->overhead_ns(), 70);
  EXPECT_DOUBLE_EQ(l2->deviation_excess_ns, 30);
  EXPECT_DOUBLE_EQ(l2->outside_ns, 150);
  EXPECT_DOUBLE_EQ(l2->overhead_ns(), 180);
  EXPECT_EQ(r.layers[0].layer, conv2);  // ranked by overhead
  EXPECT_EQ(r.deviating_layers, 2u);
  // Extra calls: 3 reorders in conv1, batch_norm's primitive, and the reorder between ops.
  EXPECT_DOUBLE_EQ(r.reorder_ns, 15);
  EXPECT_DOUBLE_EQ(r.extra_outside_layers_ns, 7 + 3);
  size_t in_bn = 0;
  for (const ExtraWork& w : f.extras) in_bn += w.owner == "aten::batch_norm";
  EXPECT_EQ(in_bn, 1u);

  // The tables as `strata lowerbound --trace` prints them.
  auto tables = comparison_tables(m, e, cmp, 10);
  ASSERT_EQ(tables.size(), 7u);
  EXPECT_EQ(tables[4].name, "parameter_deviations");
  EXPECT_EQ(tables[5].name, "extra_calls");
  EXPECT_EQ(tables[6].name, "framework_inefficiency");
  ASSERT_FALSE(tables[4].rows.empty());
  EXPECT_EQ(std::get<std::string>(tables[4].rows[0][3].value), "padding");  // largest cost first
  // extra_calls: onednn::reorder (4 calls, 18 ns) ranks first; a TOTAL row closes the table.
  ASSERT_GE(tables[5].rows.size(), 3u);
  EXPECT_EQ(std::get<std::string>(tables[5].rows[0][1].value), "onednn::reorder");
  EXPECT_EQ(std::get<int64_t>(tables[5].rows[0][4].value), 4);
  EXPECT_EQ(std::get<std::string>(tables[5].rows.back()[0].value), "TOTAL");
  EXPECT_DOUBLE_EQ(std::get<double>(tables[5].rows.back()[6].value), (15 + 7 + 3) / 1e3);
  EXPECT_EQ(std::get<std::string>(tables[6].rows[0][1].value), c2.name);
  EXPECT_EQ(std::get<std::string>(tables[6].rows.back()[0].value), "TOTAL");
}

// GPU: conv1 runs cudnnConvolutionForward in fp16 on NHWC input with implicit_gemm (bound: f32 NCHW,
// implicit_precomp_gemm 20 ns) and converts its input inside the call; around it the framework
// launches a pad kernel and a memset and waits on an event. ReLU runs PyTorch's own kernel.
TEST(FrameworkInefficiency, GpuParametersAndDeviceWorkBetweenCalls) {
  LayerModel m = chain_net();
  const uint32_t conv1 = nth(m, "Conv", 0), relu1 = nth(m, "Relu", 0);
  const Layer& c1 = m.layers[conv1];
  auto x = [](const Shape& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) out += (i ? "x" : "") + std::to_string(s[i]);
    return out;
  };
  Builder b;
  b.add("predict", Level::kModel, SpanKind::kSpan, 0, 1000);
  b.op("aten::conv2d", 10, 110);
  b.launch("cudaLaunchKernel", "image_2d_pad_constant_kernel", 1, 12, 200, 208);
  b.launch("cudaMemsetAsync", "memset", 2, 16, 209, 212, ActivityType::kMemset);
  b.add("cudaStreamWaitEvent", Level::kRuntimeApi, SpanKind::kSpan, 20, 22);
  const Shape& in = c1.input_shapes[0];
  std::string nhwc_strides = std::to_string(in[1] * in[2] * in[3]) + "x1x" + std::to_string(in[3] * in[1]) +
                             "x" + std::to_string(in[1]);
  b.lib("cudnnConvolutionForward", 30, 60,
        {{"x.shape", x(in)},
         {"x.strides", nhwc_strides},
         {"x.dtype", "float16"},
         {"w.shape", x(c1.weight_shapes[0])},
         {"w.format", "NCHW"},
         {"y.shape", x(c1.output_shapes[0])},
         {"conv.pads", "1x1"},
         {"conv.strides", "1x1"},
         {"conv.dilations", "1x1"},
         {"conv.groups", "1"},
         {"algorithm", "0"}});
  b.launch("cudaLaunchKernel", "nchwToNhwcKernel", 3, 32, 213, 218);
  b.launch("cudaLaunchKernel", "implicit_convolve_hgemm", 4, 40, 220, 260);
  b.op("aten::relu_", 120, 140);
  b.launch("cudaLaunchKernel", "vectorized_elementwise_kernel", 5, 122, 261, 265);
  b.op("aten::conv2d", 210, 410);
  b.op("aten::relu_", 420, 440);
  b.op("aten::adaptive_avg_pool2d", 450, 500);
  b.op("aten::flatten", 510, 515);
  b.op("aten::linear", 520, 600);

  TraceComparison cmp;
  std::string error;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  const InefficiencyFindings& f = cmp.inefficiency;
  EXPECT_TRUE(f.has_device_spans);
  ASSERT_FALSE(f.layers.empty());
  ASSERT_EQ(f.layers[0].calls.size(), 1u);
  EXPECT_DOUBLE_EQ(f.layers[0].calls[0].device_ns, 5 + 40);
  ASSERT_EQ(f.layers[0].calls[0].layout_kernels.size(), 1u);

  LatencyIndex index;
  ModelEstimate e = estimate(m, index, "cuda", 20, "implicit_precomp_gemm", "");
  InefficiencyReport r = analyze_inefficiencies(m, e, f);
  for (const char* p : {"data type", "layout", "algorithm", "layout (inside the call)"}) {
    const ParameterDeviation* d = find(r, conv1, p);
    ASSERT_TRUE(d) << p;
    EXPECT_DOUBLE_EQ(d->cost_ns, 45 - 20) << p;
    EXPECT_TRUE(d->shared_cost);
  }
  EXPECT_EQ(find(r, conv1, "data type")->observed, "f16");
  EXPECT_EQ(find(r, conv1, "layout")->observed, "nhwc");
  EXPECT_EQ(find(r, conv1, "algorithm")->observed, "implicit_gemm");
  EXPECT_EQ(find(r, conv1, "padding"), nullptr);
  EXPECT_EQ(find(r, conv1, "weights layout"), nullptr);
  const LayerInefficiency* l1 = find_layer(r, conv1);
  ASSERT_TRUE(l1);
  EXPECT_DOUBLE_EQ(l1->main_call_ns, 45);
  EXPECT_DOUBLE_EQ(l1->extra_ns, 8 + 3 + 2);  // pad kernel, memset, stream wait
  EXPECT_DOUBLE_EQ(l1->outside_ns, 0);        // host gaps are not costs on a GPU run
  EXPECT_DOUBLE_EQ(l1->overhead_ns(), 13 + 25);
  // ReLU made no library call: its own kernel is its work, not extra.
  for (const ExtraWork& w : f.extras) EXPECT_NE(w.layer, static_cast<int32_t>(relu1)) << w.name;
  ASSERT_EQ(f.extras.size(), 3u);
  // Device work is categorized by its activity type (the memset), not by its name.
  std::map<std::string, std::string> category;
  for (const ExtraWork& w : f.extras) category[w.name] = w.category;
  EXPECT_EQ(category["memset"], "memset");
}

TEST(FrameworkInefficiency, LayerLevelTraceGivesEmptyFindingsAndSaysWhy) {
  LayerModel m = chain_net();
  Builder b;
  b.add("predict", Level::kModel, SpanKind::kSpan, 0, 1000);
  b.op("aten::conv2d", 10, 110);
  b.op("aten::relu_", 120, 140);
  TraceComparison cmp;
  std::string error;
  ASSERT_TRUE(compare_with_trace(m, b.trace, &cmp, &error)) << error;
  EXPECT_FALSE(cmp.inefficiency.has_library_spans);
  EXPECT_TRUE(cmp.inefficiency.extras.empty());
  LatencyIndex index;
  ModelEstimate e = estimate(m, index, "cpu", 20, "direct", "");
  auto tables = inefficiency_tables(m, e, cmp.inefficiency, cmp.end_to_end_ns, 10);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_TRUE(tables[0].rows.empty());
  EXPECT_NE(tables[0].notes[0].find("--level library"), std::string::npos);
}

// A real trace: PyTorch (Debian) resnet18, batch 1, `strata record --level library` (see
// tests/lowerbound/data/README.md). Checks structure, not timings.
TEST(FrameworkInefficiency, RealResnet18Trace) {
  // Not *.strata: the repository ignores that extension (recorded output).
  const std::string path = data("resnet18_cpu_library.trace");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "fixture missing: " << path;
  LayerModel m;
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("resnet18.onnx"), &m, &error)) << error;
  trace::Trace trace;
  ASSERT_TRUE(trace::load_trace(path, &trace, &error)) << error;
  TraceComparison cmp;
  ASSERT_TRUE(compare_with_trace(m, trace, &cmp, &error)) << error;
  const InefficiencyFindings& f = cmp.inefficiency;
  ASSERT_TRUE(f.has_library_spans);
  size_t convs = 0, convs_with_call = 0;
  for (const LayerCalls& lc : f.layers) {
    if (m.layers[lc.layer].op_type != "Conv") continue;
    ++convs;
    if (lc.main_call < 0) continue;
    ++convs_with_call;
    // The shapes oneDNN was given are the layer's: PyTorch pads inside the call.
    const CallParams& p = lc.calls[static_cast<size_t>(lc.main_call)].params;
    EXPECT_EQ(p.src, m.layers[lc.layer].input_shapes[0]) << m.layers[lc.layer].name;
    EXPECT_EQ(p.dst, m.layers[lc.layer].output_shapes[0]) << m.layers[lc.layer].name;
  }
  EXPECT_EQ(convs, 20u);
  EXPECT_EQ(convs_with_call, 20u);
  LatencyIndex index;
  ModelEstimate e = estimate(m, index, "cpu", 1000, "direct", "");
  InefficiencyReport r = analyze_inefficiencies(m, e, f);
  EXPECT_EQ(r.layers.size(), f.layers.size());
  // PyTorch 1.13's mkldnn convolution on plain NCHW tensors: every conv reorders its weights into
  // oneDNN's blocked format at every call, runs on a blocked src (reordered in, except the 3-channel
  // first conv) and reorders dst back to NCHW; and it asks for forward_training, not inference.
  size_t weights = 0, src = 0, dst = 0, training = 0, blocked = 0;
  for (const ParameterDeviation& d : r.deviations) {
    weights += d.parameter == "weights layout";
    src += d.parameter == "src layout";
    dst += d.parameter == "dst layout";
    training += d.parameter == "propagation kind" && d.observed == "forward_training";
    blocked += d.parameter == "layout" && d.observed.rfind("blocked:", 0) == 0;
  }
  EXPECT_EQ(weights, 20u);
  EXPECT_EQ(src, 19u);
  EXPECT_EQ(dst, 20u);
  EXPECT_EQ(training, 20u);
  EXPECT_EQ(blocked, 19u);
  // Nothing else is extra: every reorder sits inside a conv op, nothing runs between ops.
  for (const ExtraWork& w : f.extras) {
    EXPECT_EQ(w.category, "reorder") << w.name;
    EXPECT_GE(w.layer, 0) << w.name;
  }
  EXPECT_EQ(f.extras.size(), 59u);
  auto tables = inefficiency_tables(m, e, f, cmp.end_to_end_ns, 10);
  ASSERT_EQ(tables.size(), 3u);
  EXPECT_FALSE(tables[2].rows.empty());
}

}  // namespace
}  // namespace strata::lowerbound
