// Kernel time as device busy time (issue 12): kernels overlapping on two streams count once, kernel
// work after the evaluation's span is named, and per-layer kernel time over the host-side layer time
// is explained, never a silent share above 100%.
#include <gtest/gtest.h>

#include "analysis_test_util.h"
#include "trace/trace_loader.h"

namespace strata::testing {
namespace {

constexpr int64_t kMs = 1'000'000;

// One evaluation (predict 0-10 ms) with one layer (0-2 ms host side) that launches three kernels:
// on stream 1 at 1-6 ms, on stream 2 at 2-7 ms (overlapping), and on stream 1 at 9-12 ms (running
// past the predict span: not awaited).
trace::Trace async_gpu_trace() {
  trace::Trace t;
  trace::Process p;
  p.pid = 7;
  t.add_process(p);
  auto add = [&](uint64_t id, int64_t start, int64_t end, const char* name, Level level, SpanKind kind,
                 uint64_t correlation = 0, uint32_t stream = UINT32_MAX) {
    SpanRecord s;
    s.span_id = id;
    s.start_ns = start;
    s.end_ns = end;
    s.name = t.strings.intern(name);
    s.level = static_cast<uint8_t>(level);
    s.kind = static_cast<uint8_t>(kind);
    s.tid = 1;
    s.correlation_id = correlation;
    if (stream != UINT32_MAX) s.stream = stream, s.device = 0, s.tid = 0;
    t.add_span(s);
  };
  add(1, 0, 10 * kMs, "predict", Level::kModel, SpanKind::kSpan);
  add(2, 0, 2 * kMs, "aten::conv2d", Level::kLayer, SpanKind::kSpan);
  add(3, kMs / 10, kMs / 5, "cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, 11);
  add(4, kMs / 4, kMs / 3, "cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, 12);
  add(5, kMs / 2, 6 * kMs / 10, "cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, 13);
  add(6, 1 * kMs, 6 * kMs, "conv_a", Level::kDevice, SpanKind::kExecution, 11, 1);
  add(7, 2 * kMs, 7 * kMs, "conv_b", Level::kDevice, SpanKind::kExecution, 12, 2);
  add(8, 9 * kMs, 12 * kMs, "conv_c", Level::kDevice, SpanKind::kExecution, 13, 1);
  trace::sort_spans(&t);
  return t;
}

TEST(KernelBusy, OverlappingKernelsCountOnceAndLateOnesAreNamed) {
  trace::Trace t = async_gpu_trace();
  auto run = run_analysis(t, "kernels_by_model");
  const auto& table = run.table();
  ASSERT_EQ(table.rows.size(), 1u);
  // Inside 0-10 ms: 1-7 ms (two streams, once) and 9-10 ms: 7 ms busy; durations add to 13 ms.
  EXPECT_NEAR(num(table, 0, "kernel_ms"), 7, 1e-9);
  EXPECT_NEAR(num(table, 0, "kernel_sum_ms"), 13, 1e-9);
  EXPECT_NEAR(num(table, 0, "kernel_pct"), 70, 1e-9);
  bool named = false;
  for (const std::string& n : table.notes) named = named || n.find("2.0000 ms of kernel time") != std::string::npos;
  EXPECT_TRUE(named);

  auto split = run_analysis(t, "layer_device_split");
  const auto& s = split.table();
  ASSERT_EQ(s.rows.size(), 1u);
  // The layer's kernels keep the device busy 1-7 and 9-12 ms: 9 ms, against 2 ms on the host.
  EXPECT_NEAR(num(s, 0, "kernel_ms"), 9, 1e-9);
  EXPECT_NEAR(num(s, 0, "kernel_pct"), 450, 1e-9);
  EXPECT_NEAR(num(s, 0, "non_kernel_ms"), 0, 1e-9);
  bool explained = false;
  for (const std::string& n : s.notes) explained = explained || n.find("device work is asynchronous") != std::string::npos;
  EXPECT_TRUE(explained);
}

}  // namespace
}  // namespace strata::testing
