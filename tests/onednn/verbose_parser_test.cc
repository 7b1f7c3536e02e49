// The oneDNN verbose parser on real lines. Lines marked "real" were printed by Debian 12's libdnnl
// 2.6.3 (ONEDNN_VERBOSE=1 ONEDNN_VERBOSE_TIMESTAMP=1, AVX-512 machine) running Debian's PyTorch
// (resnet18, mkldnn-tensor pooling/relu) and the probe in tests/onednn. The others follow the
// layouts in oneDNN's sources at the tags named (no v3 library on this machine; inner product,
// matmul and batch norm do not run through oneDNN in Debian's PyTorch), with field contents as
// that version prints them (v3 md strings "src:f32::...").
#include "onednn/verbose_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace strata::onednn {
namespace {

// Real: resnet18 conv1 (batch 1, 224x224), timestamps on.
constexpr const char* kV26Conv =
    "onednn_verbose,1795313340574.656982,exec,cpu,convolution,jit:avx512_core,forward_training,"
    "src_f32::blocked:abcd:f0 wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0,"
    "attr-scratchpad:user ,alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,"
    "46.469\n";

TEST(VerboseParser, V26ExecLineWithTimestamp) {
  VerboseLine v = parse_verbose_line(kV26Conv);
  ASSERT_EQ(v.event, VerboseEvent::kExec);
  EXPECT_EQ(v.marker, "onednn_verbose");
  EXPECT_TRUE(v.version.empty());
  EXPECT_TRUE(v.component.empty());
  EXPECT_EQ(v.operation, "exec");
  ASSERT_TRUE(v.has_timestamp);
  EXPECT_EQ(v.timestamp_ns, 1795313340574656982);  // exact: no trip through a double
  EXPECT_EQ(v.engine, "cpu");
  EXPECT_EQ(v.primitive, "convolution");
  EXPECT_EQ(v.impl, "jit:avx512_core");
  EXPECT_EQ(v.prop_kind, "forward_training");
  EXPECT_EQ(v.mds,
            "src_f32::blocked:abcd:f0 wei_f32::blocked:Acdb16a:f0 bia_undef::undef::f0 dst_f32::blocked:aBcd16b:f0");
  EXPECT_EQ(v.attrs, "attr-scratchpad:user ");
  EXPECT_EQ(v.aux, "alg:convolution_direct");
  EXPECT_EQ(v.desc, "mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3");
  EXPECT_DOUBLE_EQ(v.duration_ms, 46.469);
  EXPECT_EQ(first_dtype(v.mds), "f32");
  std::string shapes;
  ASSERT_TRUE(shapes_from_desc(v.primitive, v.prop_kind, v.desc, &shapes));
  EXPECT_EQ(shapes, "src:[1,3,224,224] weights:[64,3,7,7] dst:[1,64,112,112]");
}

TEST(VerboseParser, V26WithoutTimestampAndPostOps) {
  // Real, timestamps off.
  VerboseLine v = parse_verbose_line(
      "onednn_verbose,exec,cpu,reorder,simple:any,undef,src_f32::blocked:abcd:f0 dst_f32::blocked:abcd:f0,"
      "attr-scratchpad:user ,,1x64x8x8,0.00805664");
  ASSERT_EQ(v.event, VerboseEvent::kExec);
  EXPECT_FALSE(v.has_timestamp);
  EXPECT_EQ(v.primitive, "reorder");
  EXPECT_EQ(v.aux, "");
  EXPECT_DOUBLE_EQ(v.duration_ms, 0.00805664);
  // v2.6 layout, post-op attribute.
  VerboseLine w = parse_verbose_line(
      "onednn_verbose,exec,cpu,convolution,jit:avx2,forward_inference,src_f32::blocked:aBcd8b:f0 "
      "wei_f32::blocked:ABcd8b8a:f0 bia_f32::blocked:a:f0 dst_f32::blocked:aBcd8b:f0,attr-post-ops:eltwise_relu ,"
      "alg:convolution_direct,mb1_ic64oc64_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1,0.412109");
  ASSERT_EQ(w.event, VerboseEvent::kExec);
  EXPECT_EQ(w.attrs, "attr-post-ops:eltwise_relu ");
  EXPECT_DOUBLE_EQ(w.duration_ms, 0.412109);
}

TEST(VerboseParser, V26OtherPrimitivesAndShapes) {
  struct Case {
    const char* line;
    const char* primitive;
    const char* shapes;  // "" when the descriptor does not name every tensor
  };
  const Case cases[] = {
      // Real (resnet18's weight and output reorders, mkldnn-tensor max/avg pooling and ReLU).
      {"onednn_verbose,1795313340574.194092,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 "
       "dst_f32::blocked:Acdb16a:f0,attr-scratchpad:user ,,64x3x7x7,0.0368652",
       "reorder", "src:[64,3,7,7] dst:[64,3,7,7]"},
      {"onednn_verbose,1795313340621.527100,exec,cpu,reorder,jit:blk,undef,src_f32::blocked:aBcd16b:f0 "
       "dst_f32::blocked:abcd:f0,attr-scratchpad:user ,,1x64x112x112,1.81885",
       "reorder", "src:[1,64,112,112] dst:[1,64,112,112]"},
      {"onednn_verbose,1795313362688.917969,exec,cpu,pooling_v2,jit:avx512_core,forward_inference,"
       "src_f32::blocked:abcd:f0 dst_f32::blocked:abcd:f0 ws_undef::undef::f0,attr-scratchpad:user ,"
       "alg:pooling_max,mb1ic64_ih112oh56kh3sh2dh0ph1_iw112ow56kw3sw2dw0pw1,1.05713",
       "pooling_v2", "src:[1,64,112,112] dst:[1,64,56,56]"},
      {"onednn_verbose,1795313362700.718994,exec,cpu,pooling_v2,jit:avx512_core,forward_training,"
       "src_f32::blocked:abcd:f0 dst_f32::blocked:abcd:f0 ws_undef::undef::f0,attr-scratchpad:user ,"
       "alg:pooling_avg_include_padding,mb1ic64_ih112oh56kh2sh2dh0ph0_iw112ow56kw2sw2dw0pw0,0.783936",
       "pooling_v2", "src:[1,64,112,112] dst:[1,64,56,56]"},
      {"onednn_verbose,1795313362701.889893,exec,cpu,eltwise,jit:avx512_core,forward_training,"
       "data_f32::blocked:abcd:f0 diff_undef::undef::f0,attr-scratchpad:user ,alg:eltwise_relu alpha:0 beta:0,"
       "1x64x112x112,0.867188",
       "eltwise", "src:[1,64,112,112] dst:[1,64,112,112]"},
      // v2.6 layout.
      {"onednn_verbose,exec,cpu,inner_product,gemm:jit,forward_inference,src_f32::blocked:ab:f0 "
       "wei_f32::blocked:ab:f0 bia_f32::blocked:a:f0 dst_f32::blocked:ab:f0,,,mb1ic512oc1000,0.101074",
       "inner_product", "src:[1,512] weights:[1000,512] dst:[1,1000]"},
      {"onednn_verbose,exec,cpu,matmul,gemm:jit,undef,src_f32::blocked:abc:f0 wei_f32::blocked:abc:f0 "
       "dst_f32::blocked:abc:f0,,,2x3x4:2x4x5:2x3x5,0.0129395",
       "matmul", "src:[2,3,4] weights:[2,4,5] dst:[2,3,5]"},
      {"onednn_verbose,exec,cpu,batch_normalization,bnorm_jit:avx2,forward_inference,data_f32::blocked:aBcd8b:f0 "
       "diff_undef::undef::f0,,flags:GS,mb1ic64ih112iw112,0.081543",
       "batch_normalization", ""},
  };
  for (const Case& c : cases) {
    VerboseLine v = parse_verbose_line(c.line);
    ASSERT_EQ(v.event, VerboseEvent::kExec) << c.line;
    EXPECT_EQ(v.primitive, c.primitive);
    std::string shapes;
    EXPECT_EQ(shapes_from_desc(v.primitive, v.prop_kind, v.desc, &shapes), *c.shapes != '\0') << c.line;
    EXPECT_EQ(shapes, c.shapes) << c.line;
    EXPECT_EQ(first_dtype(v.mds), "f32") << c.line;
  }
}

TEST(VerboseParser, GroupedBackwardAnd3dConvolutionShapes) {
  std::string s;
  ASSERT_TRUE(shapes_from_desc("convolution", "forward_training",
                               "g32mb2_ic32oc32_ih56oh56kh3sh1dh0ph1_iw56ow56kw3sw1dw0pw1", &s));
  EXPECT_EQ(s, "src:[2,32,56,56] weights:[32,1,1,3,3] dst:[2,32,56,56]");
  ASSERT_TRUE(shapes_from_desc("convolution", "backward_data",
                               "mb1_ic64oc128_ih56oh28kh3sh2dh0ph1_iw56ow28kw3sw2dw0pw1", &s));
  EXPECT_EQ(s, "diff_src:[1,64,56,56] weights:[128,64,3,3] diff_dst:[1,128,28,28]");
  ASSERT_TRUE(shapes_from_desc("convolution", "backward_weights",
                               "mb1_ic64oc128_ih56oh28kh3sh2dh0ph1_iw56ow28kw3sw2dw0pw1", &s));
  EXPECT_EQ(s, "src:[1,64,56,56] diff_weights:[128,64,3,3] diff_dst:[1,128,28,28]");
  ASSERT_TRUE(shapes_from_desc("convolution", "forward_inference",
                               "mb1_ic4oc8_id9od7kd3sd1dd0pd0_ih9oh7kh3sh1dh0ph0_iw9ow7kw3sw1dw0pw0", &s));
  EXPECT_EQ(s, "src:[1,4,9,9,9] weights:[8,4,3,3,3] dst:[1,8,7,7,7]");
  // Groups that do not divide the channels: not a descriptor oneDNN prints; no shapes.
  EXPECT_FALSE(shapes_from_desc("convolution", "forward_inference", "g3mb1_ic4oc8_iw9ow7kw3sw1dw0pw0", &s));
  EXPECT_EQ(s, "");
  // v3.x matmul descriptor names only src and weights; dst follows (batch dims broadcast).
  ASSERT_TRUE(shapes_from_desc("matmul", "undef", "1x128x64:4x64x32", &s));
  EXPECT_EQ(s, "src:[1,128,64] weights:[4,64,32] dst:[4,128,32]");
  EXPECT_FALSE(shapes_from_desc("matmul", "undef", "*x64:64x32", &s));  // runtime dims
}

TEST(VerboseParser, V33ComponentAndV36VersionLayouts) {
  // v3.3 - v3.5: component after the timestamp.
  VerboseLine a = parse_verbose_line(
      "onednn_verbose,1700000000000.500000,primitive,exec,cpu,convolution,brg_conv_fwd:avx512_core,"
      "forward_training,src:f32::blocked:acdb::f0 wei:f32::blocked:Acdb16a::f0 bia:f32::blocked:a::f0 "
      "dst:f32::blocked:acdb::f0,,alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,"
      "0.690918\n");
  ASSERT_EQ(a.event, VerboseEvent::kExec);
  EXPECT_EQ(a.component, "primitive");
  EXPECT_EQ(a.timestamp_ns, 1700000000000500000);
  EXPECT_EQ(a.impl, "brg_conv_fwd:avx512_core");
  EXPECT_EQ(first_dtype(a.mds), "f32");
  // v3.6+: "v1" after the marker, then the timestamp.
  VerboseLine b = parse_verbose_line(
      "onednn_verbose,v1,1700000000001.250000,primitive,exec,cpu,reorder,jit:uni,undef,"
      "src:f32::blocked:abcd::f0 dst:bf16::blocked:acdb::f0,attr-scales:src0:0:f32,,1x3x224x224,0.0249023");
  ASSERT_EQ(b.event, VerboseEvent::kExec);
  EXPECT_EQ(b.version, "v1");
  EXPECT_EQ(b.component, "primitive");
  EXPECT_EQ(b.timestamp_ns, 1700000000001250000);
  EXPECT_EQ(b.primitive, "reorder");
  EXPECT_EQ(b.attrs, "attr-scales:src0:0:f32");
  EXPECT_EQ(b.desc, "1x3x224x224");
  // v3.6+ without timestamp.
  VerboseLine c = parse_verbose_line(
      "onednn_verbose,v1,primitive,exec,cpu,eltwise,jit:avx512_core,forward_inference,"
      "data:f32::blocked:abcd::f0 diff:undef::undef:::,,alg:eltwise_relu alpha:0 beta:0,1x64x56x56,0.01");
  ASSERT_EQ(c.event, VerboseEvent::kExec);
  EXPECT_FALSE(c.has_timestamp);
  EXPECT_EQ(c.primitive, "eltwise");
}

TEST(VerboseParser, OlderMarkers) {
  EXPECT_EQ(parse_verbose_line("dnnl_verbose,exec,cpu,reorder,simple:any,undef,src_f32::blocked:ab:f0 "
                               "dst_f32::blocked:ba:f0,,,4x5,0.01")
                .event,
            VerboseEvent::kExec);
  EXPECT_EQ(parse_verbose_line("mkldnn_verbose,exec,reorder,simple:any,undef,in:f32_nchw out:f32_nChw8c,"
                               "num:1,1x3x4x4,0.01")
                .event,
            VerboseEvent::kMalformed);  // v0.x had fewer fields: recognized, counted, not a span
}

TEST(VerboseParser, NonExecLinesAreClassified) {
  // Real v2.6.3 header lines.
  EXPECT_EQ(parse_verbose_line("onednn_verbose,info,oneDNN v2.6.3 (commit N/A)").event, VerboseEvent::kInfo);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,info,cpu,isa:Intel AVX-512 with Intel DL Boost and bfloat16 support")
                .event,
            VerboseEvent::kInfo);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,info,cpu,runtime:OpenMP,nthr:2").event, VerboseEvent::kInfo);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,info,prim_template:timestamp,operation,engine,primitive,"
                               "implementation,prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,"
                               "exec_time")
                .event,
            VerboseEvent::kInfo);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,v1,primitive,info,template:operation,engine,primitive").event,
            VerboseEvent::kInfo);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,1700000000000.000000,create:cache_miss,cpu,convolution,"
                               "jit:avx2,forward_inference,src_f32::blocked:abcd:f0,,alg:convolution_direct,"
                               "mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,12.5")
                .event,
            VerboseEvent::kCreate);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,v1,primitive,create:cache_hit,cpu,reorder,jit:uni,undef,,,,1x2,0.1")
                .event,
            VerboseEvent::kCreate);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,v1,graph,exec,cpu,100002,sdp,matmul;softmax;matmul,,,0.5").event,
            VerboseEvent::kOther);
  EXPECT_EQ(parse_verbose_line("onednn_verbose,v1,primitive,error,cpu,convolution,unsupported").event,
            VerboseEvent::kOther);
  EXPECT_EQ(parse_verbose_line("hello, world").event, VerboseEvent::kNotVerbose);
  EXPECT_EQ(parse_verbose_line("").event, VerboseEvent::kNotVerbose);
  EXPECT_EQ(parse_verbose_line("onednn_verbosex,exec").event, VerboseEvent::kNotVerbose);
}

TEST(VerboseParser, MalformedLinesAreCountedByCause) {
  struct Case {
    const char* line;
    Malformed cause;
  };
  const Case cases[] = {
      {"onednn_verbose", Malformed::kNoOperation},
      {"onednn_verbose,", Malformed::kNoOperation},
      {"onednn_verbose,12x.5,exec,cpu", Malformed::kBadTimestamp},
      {"onednn_verbose,99999999999999999.0,exec,cpu", Malformed::kBadTimestamp},
      {"onednn_verbose,1.,exec,cpu", Malformed::kBadTimestamp},
      {"onednn_verbose,exec,cpu,convolution,jit:avx2", Malformed::kTooFewFields},
      {"onednn_verbose,exec,cpu,,jit,forward,,,,desc,0.1", Malformed::kEmptyPrimitive},
      {"onednn_verbose,exec,cpu,reorder,jit,undef,,,,1x2,", Malformed::kBadDuration},
      {"onednn_verbose,exec,cpu,reorder,jit,undef,,,,1x2,-1", Malformed::kBadDuration},
      {"onednn_verbose,exec,cpu,reorder,jit,undef,,,,1x2,nan", Malformed::kBadDuration},
      {"onednn_verbose,exec,cpu,reorder,jit,undef,,,,1x2,0.5ms", Malformed::kBadDuration},
  };
  VerboseStats stats;
  for (const Case& c : cases) {
    VerboseLine v = parse_verbose_line(c.line);
    EXPECT_EQ(v.event, VerboseEvent::kMalformed) << c.line;
    EXPECT_EQ(v.malformed, c.cause) << c.line << " -> " << malformed_name(v.malformed);
    stats.count(v);
  }
  stats.count(parse_verbose_line(kV26Conv));
  stats.count(parse_verbose_line("user output"));
  EXPECT_EQ(stats.lines, std::size(cases) + 2);
  EXPECT_EQ(stats.exec, 1u);
  EXPECT_EQ(stats.not_verbose, 1u);
  EXPECT_EQ(stats.malformed_total(), std::size(cases));
  EXPECT_EQ(stats.malformed[static_cast<size_t>(Malformed::kBadDuration)], 4u);
}

TEST(VerboseParser, ExtraCommasBelongToAttributes) {
  VerboseLine v = parse_verbose_line(
      "onednn_verbose,exec,cpu,convolution,jit:avx2,forward_inference,src_f32::blocked:abcd:f0,"
      "attr-a:1,attr-b:2,alg:convolution_direct,mb1_ic3oc64_ih224oh112kh7sh2dh0ph3_iw224ow112kw7sw2dw0pw3,0.5");
  ASSERT_EQ(v.event, VerboseEvent::kExec);
  EXPECT_EQ(v.attrs, "attr-a:1,attr-b:2");
  EXPECT_EQ(v.aux, "alg:convolution_direct");
}

TEST(VerboseParser, PlacementUsesTheTimestampOnTheMonotonicClock) {
  VerboseLine v = parse_verbose_line(kV26Conv);  // TS 1795313340574.656982 ms, 46.469 ms
  const int64_t offset = 1'795'000'000'000'000'000;  // realtime - monotonic
  const int64_t start_mono = v.timestamp_ns - offset;
  const int64_t arrival = start_mono + 46'469'000 + 3'000;  // 3 us of oneDNN formatting after the end
  Placement p = place_execution(v, arrival, arrival + offset);
  EXPECT_TRUE(p.from_timestamp);
  EXPECT_EQ(p.start_ns, start_mono);
  EXPECT_EQ(p.end_ns, start_mono + 46'469'000);
  // The realtime clock was stepped by a second since oneDNN read it: the arrival time decides.
  Placement q = place_execution(v, arrival, arrival + offset + 1'000'000'000);
  EXPECT_FALSE(q.from_timestamp);
  EXPECT_EQ(q.end_ns, arrival);
  EXPECT_EQ(q.start_ns, arrival - 46'469'000);
  // No timestamp: ends on arrival.
  VerboseLine w = parse_verbose_line(
      "onednn_verbose,exec,cpu,reorder,jit:uni,undef,src_f32::blocked:abcd:f0 dst_f32::blocked:aBcd8b:f0,,,"
      "1x64x56x56,0.0351562");
  Placement r = place_execution(w, 5'000'000, 123);
  EXPECT_FALSE(r.from_timestamp);
  EXPECT_EQ(r.end_ns, 5'000'000);
  EXPECT_EQ(r.start_ns, 5'000'000 - 35'156);
}

TEST(LineAssembler, JoinsTheTwoHalvesOfTheV2TemplateHeader) {
  LineAssembler a;
  std::vector<std::string> lines;
  auto collect = [&](std::string_view l) { lines.emplace_back(l); };
  a.feed("onednn_verbose,info,prim_template:", collect);
  EXPECT_TRUE(a.pending());
  EXPECT_TRUE(lines.empty());
  a.feed("timestamp,operation,engine\n", collect);
  EXPECT_FALSE(a.pending());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "onednn_verbose,info,prim_template:timestamp,operation,engine");
  a.feed("a\nb\n\nc", collect);
  EXPECT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[1], "a");
  EXPECT_EQ(lines[3], "");
  EXPECT_EQ(a.take_pending(), "c");
  EXPECT_FALSE(a.pending());
}

TEST(LineAssembler, GivesUpOnAnEndlessLine) {
  LineAssembler a;
  size_t calls = 0, bytes = 0;
  std::string chunk(4096, 'x');
  for (int i = 0; i < 40; ++i)
    a.feed(chunk, [&](std::string_view l) {
      ++calls;
      bytes += l.size();
    });
  EXPECT_GE(calls, 2u);
  EXPECT_EQ(bytes + a.take_pending().size(), 40u * 4096u);
}

}  // namespace
}  // namespace strata::onednn
