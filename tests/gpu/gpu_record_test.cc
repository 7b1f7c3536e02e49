// End to end without a GPU: NVTX ranges from a real NVTX v3 program and cuDNN/cuBLAS parameters from
// calls into the real libraries (which fail without a GPU, after the interposer recorded them),
// both recorded through `strata record`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <map>
#include <string>

#include "../test_util.h"
#include "core/level.h"
#include "trace/trace.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

const std::string kBin = std::string(STRATA_BINARY_DIR) + "/bin";

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string attr_text(const trace::Trace& t, size_t span, std::string_view key) {
  auto a = t.find_attr(span, key);
  if (!a) return "<missing>";
  switch (static_cast<AttrType>(a->type)) {
    case AttrType::kString:
      return std::string(t.strings.get(static_cast<uint32_t>(a->value.u)));
    case AttrType::kInt:
      return std::to_string(a->value.i);
    default:
      return std::to_string(a->value.d);
  }
}

std::vector<size_t> spans_named(const trace::Trace& t, std::string_view name) {
  std::vector<size_t> out;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == name) out.push_back(i);
  return out;
}

TEST(GpuRecord, NvtxRangesDomainsAndMarksBecomeLayerSpans) {
  testing::TempDir dir;
  std::string out = dir.file("nvtx.strata"), err = dir.file("stderr.txt");
  ASSERT_EQ(run(kBin + "/strata record --quiet --level layer -o " + out + " -- " + kBin +
                "/nvtx_demo > /dev/null 2> " + err),
            0)
      << testing::read_file(err);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;

  auto forward = spans_named(t, "model.forward");
  ASSERT_EQ(forward.size(), 1u);
  const SpanRecord& fwd = t.spans[forward[0]];
  EXPECT_EQ(fwd.level, static_cast<uint8_t>(Level::kLayer));
  EXPECT_EQ(attr_text(t, forward[0], "source"), "nvtx");
  for (const char* layer : {"layer0", "layer1", "layer2"}) {
    auto l = spans_named(t, layer);
    ASSERT_EQ(l.size(), 1u) << layer;
    EXPECT_EQ(t.spans[l[0]].parent_id, fwd.span_id) << layer;  // push/pop nesting kept
  }
  // PyTorch emit_nvtx names: one op name, the call's details as attributes.
  auto relu = spans_named(t, "aten::relu");
  ASSERT_EQ(relu.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(attr_text(t, relu[i], "sequence_nr"), std::to_string(10 + i));
    EXPECT_EQ(attr_text(t, relu[i], "op_id"), std::to_string(20 + i));
    EXPECT_EQ(attr_text(t, relu[i], "shapes"), "[[8, 64], []]");
    EXPECT_EQ(attr_text(t, relu[i], "input_op_ids"), "[(0,-1)]");
  }
  auto reg = spans_named(t, "registered.range");
  ASSERT_EQ(reg.size(), 1u);
  EXPECT_EQ(attr_text(t, reg[0], "nvtx.domain"), "demo.domain");
  EXPECT_EQ(attr_text(t, reg[0], "nvtx.category"), "7");
  EXPECT_EQ(attr_text(t, reg[0], "nvtx.payload"), "42");
  auto async = spans_named(t, "async.range");
  ASSERT_EQ(async.size(), 1u);
  EXPECT_GT(t.spans[async[0]].end_ns, t.spans[async[0]].start_ns);  // ended on another thread
  EXPECT_EQ(t.spans[async[0]].flags & kSpanFlagUnfinished, 0);
  auto mark = spans_named(t, "checkpoint");
  ASSERT_EQ(mark.size(), 1u);
  EXPECT_EQ(t.spans[mark[0]].kind, static_cast<uint8_t>(SpanKind::kInstant));
  // The extra pop is reported, not hidden.
  EXPECT_NE(testing::read_file(err).find("1 pops without a pushed range"), std::string::npos)
      << testing::read_file(err);
}

TEST(GpuRecord, NvtxIsOffBelowLayerLevel) {
  testing::TempDir dir;
  std::string out = dir.file("model.strata");
  ASSERT_EQ(run(kBin + "/strata record --quiet --level model -o " + out + " -- " + kBin +
                "/nvtx_demo > /dev/null 2>&1"),
            0);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;
  EXPECT_TRUE(spans_named(t, "layer0").empty());
}

TEST(GpuRecord, CudnnAndCublasParametersAreRecorded) {
  testing::TempDir dir;
  std::string out = dir.file("lib.strata"), log = dir.file("out.txt");
  // Under the ASan CI run, cuDNN/cuBLAS keep internal allocations until exit: not ours to report.
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string env = "ASAN_OPTIONS=" + std::string(asan != nullptr ? asan : "") + ":detect_leaks=0 ";
  ASSERT_EQ(run(env + kBin + "/strata record --quiet --level library -o " + out + " -- " + kBin +
                "/cudnn_params_demo > " + log + " 2>&1"),
            0)
      << testing::read_file(log);
  std::string printed = testing::read_file(log);
  ASSERT_NE(printed.find("descriptors created"), std::string::npos) << printed;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;

  auto conv = spans_named(t, "cudnnConvolutionForward");
  ASSERT_EQ(conv.size(), 1u) << printed;
  size_t c = conv[0];
  EXPECT_EQ(t.spans[c].level, static_cast<uint8_t>(Level::kLibrary));
  EXPECT_EQ(attr_text(t, c, "library"), "cudnn");
  EXPECT_EQ(attr_text(t, c, "x.shape"), "8x64x56x56");
  EXPECT_EQ(attr_text(t, c, "x.strides"), "200704x3136x56x1");
  EXPECT_EQ(attr_text(t, c, "x.dtype"), "float32");
  EXPECT_EQ(attr_text(t, c, "w.shape"), "128x32x3x3");
  EXPECT_EQ(attr_text(t, c, "y.shape"), "8x128x28x28");
  EXPECT_EQ(attr_text(t, c, "conv.pads"), "1x1");
  EXPECT_EQ(attr_text(t, c, "conv.strides"), "2x2");
  EXPECT_EQ(attr_text(t, c, "conv.dilations"), "1x1");
  EXPECT_EQ(attr_text(t, c, "conv.groups"), "2");
  EXPECT_EQ(attr_text(t, c, "conv.math_type"), "1");  // CUDNN_TENSOR_OP_MATH
  EXPECT_EQ(attr_text(t, c, "algorithm"), "1");       // IMPLICIT_PRECOMP_GEMM
  EXPECT_EQ(attr_text(t, c, "workspace_bytes"), "4096");
  EXPECT_NE(attr_text(t, c, "status"), "0");  // no GPU: the real call failed, and that is recorded

  auto gemm = spans_named(t, "cublasSgemm");
  ASSERT_EQ(gemm.size(), 1u);
  EXPECT_EQ(attr_text(t, gemm[0], "m"), "512");
  EXPECT_EQ(attr_text(t, gemm[0], "n"), "256");
  EXPECT_EQ(attr_text(t, gemm[0], "k"), "1024");
  EXPECT_EQ(attr_text(t, gemm[0], "transa"), "T");
  EXPECT_EQ(attr_text(t, gemm[0], "transb"), "N");
  EXPECT_EQ(attr_text(t, gemm[0], "a.dtype"), "float32");
  EXPECT_NE(attr_text(t, gemm[0], "status"), "0");

  auto lt = spans_named(t, "cublasLtMatmul");
  ASSERT_EQ(lt.size(), 1u);
  EXPECT_EQ(attr_text(t, lt[0], "m"), "64");
  EXPECT_EQ(attr_text(t, lt[0], "n"), "48");
  EXPECT_EQ(attr_text(t, lt[0], "k"), "96");
  EXPECT_EQ(attr_text(t, lt[0], "transa"), "T");
  EXPECT_EQ(attr_text(t, lt[0], "a.dtype"), "float16");
  EXPECT_EQ(attr_text(t, lt[0], "compute_type"), "77");  // CUBLAS_COMPUTE_32F_FAST_TF32
}

// PyTorch's cuDNN and cuBLAS are dependencies of an extension that CPython loaded with RTLD_LOCAL: the
// preloaded wrappers are called, but RTLD_NEXT cannot see the real libraries. Seen on an H100 with
// PyTorch 2.11 (every cudnnBackendExecute answered "real function not found", convolutions raised);
// the wrappers must reach the real functions there too.
TEST(GpuRecord, CallsFromALocallyLoadedModuleReachTheRealLibraries) {
  testing::TempDir dir;
  std::string out = dir.file("local.strata"), log = dir.file("out.txt");
  const char* asan = std::getenv("ASAN_OPTIONS");
  std::string env = "ASAN_OPTIONS=" + std::string(asan != nullptr ? asan : "") + ":detect_leaks=0 ";
  ASSERT_EQ(run(env + kBin + "/strata record --quiet --level library -o " + out + " -- " + kBin +
                "/dlopen_local_runner " + STRATA_BINARY_DIR + "/lib/libcudnn_params_demo_module.so > " + log +
                " 2>&1"),
            0)
      << testing::read_file(log);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;
  for (const char* name : {"cudnnConvolutionForward", "cublasSgemm", "cublasLtMatmul"}) {
    auto spans = spans_named(t, name);
    ASSERT_EQ(spans.size(), 1u) << name << "\n" << testing::read_file(log);
    EXPECT_EQ(attr_text(t, spans[0], "error"), "<missing>")
        << name;  // the real function was found and called
    EXPECT_NE(attr_text(t, spans[0], "status"), "<missing>")
        << name;  // its (failing: no GPU) status recorded
  }
  EXPECT_EQ(attr_text(t, spans_named(t, "cudnnConvolutionForward")[0], "x.shape"), "8x64x56x56");
}

TEST(GpuRecord, RealCuptiErrorLeavesProgramRunningUntraced) {
  // No GPU/driver here: CUPTI's real subscribe fails. Loaded as the driver would load it.
  testing::TempDir dir;
  std::string out = dir.file("probe.strata"), err = dir.file("stderr.txt"), printed = dir.file("out.txt");
  ASSERT_EQ(
      run(kBin + "/strata record --quiet --level device -o " + out + " -- " + kBin + "/cupti_init_probe " +
          STRATA_BINARY_DIR + "/lib/libstrata_cupti.so > " + printed + " 2> " + err),
      0)
      << testing::read_file(err);
  EXPECT_NE(testing::read_file(printed).find("program still running"), std::string::npos);
  std::string errors = testing::read_file(err);
  // One line from the collector; `record` itself may say once, before running, that this machine has
  // no usable GPU (gpu_unavailable_reason).
  size_t collector_lines = 0;
  for (size_t at = 0; (at = errors.find("strata: ", at)) != std::string::npos; ++at)
    collector_lines += at == 0 || errors[at - 1] == '\n';
  EXPECT_EQ(collector_lines, 1u) << errors;
  EXPECT_NE(errors.find("strata: CUPTI cuptiSubscribe failed: "), std::string::npos) << errors;
  EXPECT_NE(errors.find("runs without GPU tracing"), std::string::npos) << errors;
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;
  EXPECT_TRUE(spans_named(t, "cupti.session").empty());
}

}  // namespace
}  // namespace strata
