// The iterations analysis on constructed traces: stream classification, metrics, and the diagnosis
// verdicts (host-bound, copy-bound, device-bound) for CPU-style and GPU-style traces.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/iterations/iterations_analysis.h"
#include "core/activity_type.h"
#include "core/level.h"
#include "trace/span_tree.h"

namespace strata::analysis::iterations {
namespace {

// Types a generated span as the importers and tracers do on the way in (the classifier reads the
// activity type, never names): device copies and memsets by their CUPTI-style names, kernels, and
// PyTorch's tensor-copy ops on threads.
uint8_t activity_of(std::string_view name, bool device) {
  if (!device) return static_cast<uint8_t>(framework_op_activity(name));
  if (name.rfind("Memcpy ", 0) == 0) return static_cast<uint8_t>(memcpy_activity(name.substr(7, 4)));
  if (name.rfind("Memset", 0) == 0) return static_cast<uint8_t>(ActivityType::kMemset);
  return static_cast<uint8_t>(kernel_activity(name));
}

struct Builder {
  trace::Trace trace;
  uint64_t next_id = 1;
  Builder() {
    trace::Process p;
    p.pid = 42;
    trace.add_process(p);
  }
  size_t span(std::string_view name, Level level, int64_t start, int64_t end, uint32_t tid, uint32_t stream = kNoStream,
              int64_t bytes = -1) {
    SpanRecord s;
    s.span_id = next_id++;
    s.name = trace.strings.intern(name);
    s.start_ns = start;
    s.end_ns = end;
    s.tid = tid;
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(level == Level::kDevice ? SpanKind::kExecution : SpanKind::kSpan);
    s.activity = activity_of(name, level == Level::kDevice);
    if (stream != kNoStream) {
      s.stream = stream;
      s.device = 0;
    }
    std::vector<AttrRecord> attrs;
    if (bytes >= 0) attrs.push_back(trace.int_attr("bytes", bytes));
    return trace.add_span(s, attrs);
  }
};

const std::vector<std::string> kCycle = {"aten::zero_", "aten::linear", "aten::relu", "aten::linear",
                                         "aten::cross_entropy_loss", "autograd::backward", "aten::add_"};

// CPU trace: `n` iterations of kCycle on thread 1 (op 100 us, gap 5 us), an optional host pause
// or host copy (aten::clone, bytes) before every iteration, an eval pass after every 5th.
trace::Trace cpu_trace(int n, int64_t pause_ns, int64_t copy_ns) {
  Builder b;
  int64_t t = 1'000'000;
  b.span("aten::randn", Level::kLayer, t, t + 50'000, 1);
  t += 80'000;
  for (int it = 0; it < n; ++it) {
    t += pause_ns;
    if (copy_ns > 0) {
      b.span("aten::clone", Level::kLayer, t, t + copy_ns, 1, kNoStream, 64 << 20);
      t += copy_ns + 2'000;
    }
    t += 20'000;
    for (const auto& op : kCycle) {
      b.span(op, Level::kLayer, t, t + 100'000, 1);
      t += 105'000;
    }
    if ((it + 1) % 5 == 0) {
      b.span("aten::linear", Level::kLayer, t, t + 50'000, 1);
      b.span("aten::argmax", Level::kLayer, t + 55'000, t + 60'000, 1);
      t += 65'000;
    }
  }
  return std::move(b.trace);
}

IterationsReport run(const trace::Trace& trace, IterationsOptions options = {}) {
  IterationsReport report;
  std::string error;
  EXPECT_TRUE(run_iterations(trace, options, &report, &error)) << error;
  return report;
}

TEST(IterationsAnalysis, CpuLoopFoundWithEvalFlagged) {
  const auto trace = cpu_trace(20, 0, 0);
  const auto r = run(trace);
  EXPECT_FALSE(r.classes.device_trace);
  ASSERT_EQ(r.metrics.iterations.size(), 20u);
  EXPECT_TRUE(r.mining.detected);
  for (const auto& it : r.metrics.iterations) EXPECT_EQ(it.flagged(), (it.index + 1) % 5 == 0) << it.index;
  EXPECT_EQ(trace.name(trace.spans[r.metrics.sequence_spans[r.metrics.iterations[0].first_op]]), "aten::zero_");
  EXPECT_GT(r.mining.confidence, 0.9);
}

TEST(IterationsAnalysis, HostPauseBetweenIterationsIsHostBound) {
  const auto r = run(cpu_trace(20, 3'000'000, 0));
  ASSERT_EQ(r.metrics.iterations.size(), 20u);
  ASSERT_FALSE(r.diagnoses.empty());
  EXPECT_EQ(r.diagnoses[0].verdict, Verdict::kHostBound);
  EXPECT_LT(r.metrics.loops[0].avg_overlap, 0.05);
  EXPECT_GT(r.metrics.loops[0].mean_interval_ns, 10 * r.metrics.loops[0].avg_op_gap_ns);
  EXPECT_FALSE(r.diagnoses[0].next_step.empty());
}

TEST(IterationsAnalysis, OversizedHostCopyIsCopyBound) {
  const auto r = run(cpu_trace(20, 0, 3'000'000));
  ASSERT_EQ(r.metrics.iterations.size(), 20u);
  EXPECT_EQ(r.diagnoses[0].verdict, Verdict::kCopyBound);
  EXPECT_GT(r.metrics.loops[0].avg_overlap, 0.9);
  EXPECT_NEAR(r.metrics.loops[0].avg_copy_bytes, 64 << 20, 1);
  // The copy is in the interval, so it is one of the spans listed there.
  ASSERT_FALSE(r.diagnoses[0].gap_spans.empty());
  EXPECT_EQ(r.diagnoses[0].gap_spans[0].name, "aten::clone");
}

TEST(IterationsAnalysis, TightLoopIsNotHostOrCopyBound) {
  const auto r = run(cpu_trace(20, 0, 0));
  EXPECT_EQ(r.diagnoses[0].verdict, Verdict::kDeviceBound);
}

// GPU trace: 12 kernels (no shorter period) on stream 7, H2D copies (with bytes) on stream 14 before each iteration,
// D2H on 15, one memset on 20.
trace::Trace gpu_trace(int n, int64_t h2d_ns) {
  Builder b;
  int64_t t = 0;
  b.span("Memset (Device)", Level::kDevice, t, t + 1000, 0, 20);
  t += 10'000;
  for (int it = 0; it < n; ++it) {
    b.span("Memcpy HtoD (Pageable -> Device)", Level::kDevice, t, t + h2d_ns, 0, 14, 8 << 20);
    t += h2d_ns + 5'000;
    static const char* kKernels[] = {"volta_sgemm_128x64_nn", "elementwise_kernel", "reduce_kernel",
                                     "volta_sgemm_128x64_nn", "softmax_kernel",     "elementwise_kernel",
                                     "volta_sgemm_64x64_nt",  "reduce_kernel",      "elementwise_kernel",
                                     "multi_tensor_apply",    "add_kernel",         "fill_kernel"};
    for (int k = 0; k < 12; ++k) {
      b.span(kKernels[k], Level::kDevice, t, t + 20'000, 0, 7);
      t += 21'000;
    }
    b.span("Memcpy DtoH (Device -> Pageable)", Level::kDevice, t, t + 2'000, 0, 15, 4);
    t += 3'000;
  }
  return std::move(b.trace);
}

TEST(IterationsAnalysis, GpuStreamsClassifiedByContent) {
  const auto trace = gpu_trace(10, 10'000);
  const auto r = run(trace);
  ASSERT_TRUE(r.classes.device_trace);
  std::map<uint32_t, std::pair<TrackRole, CopyDirection>> roles;
  for (const auto& t : r.classes.tracks) roles[t.key.stream_or_tid] = {t.role, t.copy_direction};
  EXPECT_EQ(roles[7].first, TrackRole::kMain);
  EXPECT_EQ(roles[14], std::make_pair(TrackRole::kCopy, CopyDirection::kHostToDevice));
  EXPECT_EQ(roles[15], std::make_pair(TrackRole::kCopy, CopyDirection::kDeviceToHost));
  EXPECT_EQ(roles[20].first, TrackRole::kAssist);
  EXPECT_EQ(r.metrics.iterations.size(), 10u);
}

// The activity type decides, not the name: Nsight Systems names copies "[CUDA memcpy
// Host-to-Device]" (no "HtoD" to match), and a kernel may carry "memcpy" and "htod" in its name.
// Name matching took the first for compute and the second for a copy.
TEST(IterationsAnalysis, TracksClassifiedByActivityTypeNotByName) {
  auto trace = gpu_trace(10, 10'000);
  const uint32_t nsys_copy = trace.strings.intern("[CUDA memcpy Host-to-Device]");
  const uint32_t copy_named_kernel = trace.strings.intern("fused_memcpy_htod_gather_kernel");
  for (SpanRecord& s : trace.spans) {
    if (s.stream == 14) s.name = nsys_copy;  // still typed kMemcpyHtoD, as the nsys reader types it
    if (s.stream == 7 && trace.name(s) == "add_kernel") s.name = copy_named_kernel;  // still kKernel
  }
  const auto r = run(trace);
  ASSERT_TRUE(r.classes.device_trace);
  for (const auto& t : r.classes.tracks) {
    if (t.key.stream_or_tid == 14) {
      EXPECT_EQ(t.role, TrackRole::kCopy);
      EXPECT_EQ(t.copy_direction, CopyDirection::kHostToDevice);
    }
    if (t.key.stream_or_tid == 7) {
      EXPECT_EQ(t.role, TrackRole::kMain);
      EXPECT_EQ(t.compute_ops, 120u);
      EXPECT_EQ(t.copies[static_cast<int>(CopyDirection::kHostToDevice)], 0u);
    }
  }
  EXPECT_EQ(r.metrics.iterations.size(), 10u);
}

TEST(IterationsAnalysis, LargeHostToDeviceCopiesAreCopyBound) {
  const auto r = run(gpu_trace(10, 2'000'000));
  ASSERT_EQ(r.metrics.iterations.size(), 10u);
  EXPECT_EQ(r.diagnoses[0].verdict, Verdict::kCopyBound);
  EXPECT_GT(r.metrics.loops[0].avg_overlap, 0.9);
  EXPECT_NEAR(r.metrics.loops[0].avg_copy_bytes, 8 << 20, 1);
}

TEST(IterationsAnalysis, GivenCountAndStreamOverride) {
  const auto trace = gpu_trace(10, 10'000);
  IterationsOptions o;
  o.miner.iterations = 10;
  o.classify.stream = "device:0/stream:7";
  const auto r = run(trace, o);
  EXPECT_FALSE(r.mining.detected);
  EXPECT_EQ(r.metrics.iterations.size(), 10u);
  o.classify.stream = "stream:99";
  IterationsReport bad;
  std::string error;
  EXPECT_FALSE(run_iterations(trace, o, &bad, &error));
  EXPECT_NE(error.find("stream:99"), std::string::npos);
}

TEST(IterationsAnalysis, EmptyOrNonIterativeTraceGivesOneLineError) {
  Builder b;
  IterationsReport r;
  std::string error;
  EXPECT_FALSE(run_iterations(b.trace, {}, &r, &error));
  EXPECT_NE(error.find("--level"), std::string::npos) << error;
  for (int i = 0; i < 6; ++i) b.span("op" + std::to_string(i), Level::kLayer, i * 10, i * 10 + 5, 1);
  EXPECT_FALSE(run_iterations(b.trace, {}, &r, &error));
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(IterationsAnalysis, RegisteredAndRendersTables) {
  const auto trace = cpu_trace(10, 0, 0);
  const analysis::Analysis* a = analysis::find_analysis("iterations");
  ASSERT_NE(a, nullptr);
  const auto tree = trace::build_span_tree(trace);
  analysis::Params params;
  const auto result = a->run({trace, tree, params});
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  ASSERT_EQ(result.tables.size(), 5u);
  EXPECT_EQ(result.tables[0].name, "iterations_summary");
  EXPECT_EQ(result.tables[1].rows.size(), 10u);
  params.set("iterations", "x");
  EXPECT_TRUE(a->run({trace, tree, params}).missing_input.has_value());
}

TEST(IterationsAnalysis, IterationSpansAddedAtIterationLevel) {
  auto trace = cpu_trace(10, 0, 0);
  const auto r = run(trace);
  const size_t before = trace.spans.size();
  EXPECT_EQ(add_iteration_spans(&trace, r), 10u);
  ASSERT_EQ(trace.spans.size(), before + 10);
  EXPECT_EQ(trace.spans.back().level, static_cast<uint8_t>(Level::kIteration));
  EXPECT_EQ(trace.name(trace.spans.back()), "iteration");
  EXPECT_TRUE(trace.find_attr(trace.spans.size() - 1, "flagged").has_value());
}

}  // namespace
}  // namespace strata::analysis::iterations
