// Per-kernel metrics through the Range Profiler seam: request parsing, metric evaluation, pairing of
// ranges with kernels, and the collector path (profiler started at the first launch, decoded at stop).
#include "gpu/gpu_metrics.h"

#include <gtest/gtest.h>

#include <map>

#include "fake_cupti.h"
#include "gpu/cupti_collector.h"

namespace strata::gpu {
namespace {

using testing::FakeCupti;
using testing::RecordingSink;

double metric(const testing::RecordedSpan& s, const std::string& key) {
  const auto* a = s.attr(key);
  if (a == nullptr || a->type != AttrType::kMetric) return -1;
  return a->d;
}

TEST(GpuMetrics, ParsesRequestsAndRejectsUnknownNames) {
  MetricRequest r;
  std::string error;
  ASSERT_TRUE(parse_metric_request("flops,dram,occupancy", &r, &error)) << error;
  EXPECT_EQ(r.metrics.size(), 6u);
  ASSERT_TRUE(parse_metric_request("dram_read,dram,dram_read", &r, &error));
  EXPECT_EQ(r.metrics, (std::vector<GpuMetric>{GpuMetric::kDramRead, GpuMetric::kDramWrite}));
  EXPECT_FALSE(parse_metric_request("flops,ipc", &r, &error));
  EXPECT_NE(error.find("'ipc'"), std::string::npos) << error;
  EXPECT_NE(error.find("occupancy"), std::string::npos) << error;  // lists the known names
}

TEST(GpuMetrics, EvaluatesFlopsBytesAndOccupancy) {
  MetricRequest r;
  std::string error;
  ASSERT_TRUE(parse_metric_request("flops_sp,flops_dp,dram,occupancy", &r, &error));
  std::vector<std::string> raw = raw_metric_names(r);
  ASSERT_EQ(raw.size(), 9u);
  EXPECT_EQ(raw[0], "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum");
  // fadd, fmul, ffma, dadd, dmul, dfma, dram read, dram write, occupancy
  std::vector<double> values = {10, 20, 30, 1, 2, 3, 4096, 1024, 62.5};
  auto out = evaluate_metrics(r, values);
  std::map<std::string, double> m(out.begin(), out.end());
  EXPECT_DOUBLE_EQ(m["flops_sp"], 10 + 20 + 2 * 30);
  EXPECT_DOUBLE_EQ(m["flops_dp"], 1 + 2 + 2 * 3);
  EXPECT_DOUBLE_EQ(m["flops"], 90 + 9);
  EXPECT_DOUBLE_EQ(m["dram_read_bytes"], 4096);
  EXPECT_DOUBLE_EQ(m["dram_write_bytes"], 1024);
  EXPECT_DOUBLE_EQ(m["achieved_occupancy"], 62.5);
}

TEST(GpuMetrics, JoinerPairsRangesWithKernelsInOrderByName) {
  RecordingSink sink;
  MetricRequest r;
  std::string error;
  ASSERT_TRUE(parse_metric_request("dram_read", &r, &error));
  KernelMetricJoiner joiner(&sink, r);
  SpanRecord rec;
  AttrList attrs;
  std::string grid = "kernel";  // string attribute storage that dies before the emit
  attrs.add_string("category", grid);
  rec.correlation_id = 1;
  joiner.hold(rec, "gemm", attrs.view());
  rec.correlation_id = 2;
  joiner.hold(rec, "relu", attrs.view());
  rec.correlation_id = 3;
  joiner.hold(rec, "gemm", attrs.view());
  grid = "overwritten";
  EXPECT_TRUE(sink.spans.empty());  // held until ranges arrive
  joiner.add_ranges({{"gemm", {100}}, {"relu", {5}}});
  ASSERT_EQ(sink.spans.size(), 2u);
  EXPECT_EQ(sink.spans[0].record.correlation_id, 1u);
  EXPECT_DOUBLE_EQ(metric(sink.spans[0], "dram_read_bytes"), 100);
  EXPECT_EQ(sink.spans[0].string_attr("category"), "kernel");
  EXPECT_EQ(sink.spans[1].record.correlation_id, 2u);
  EXPECT_DOUBLE_EQ(metric(sink.spans[1], "dram_read_bytes"), 5);
  joiner.add_ranges({{"softmax", {1}}});
  joiner.finish();
  ASSERT_EQ(sink.spans.size(), 3u);  // the second gemm had no range: emitted without metrics
  EXPECT_EQ(sink.spans[2].record.correlation_id, 3u);
  EXPECT_EQ(sink.spans[2].attr("dram_read_bytes"), nullptr);
  EXPECT_EQ(joiner.kernels_with_metrics(), 2u);
  EXPECT_EQ(joiner.kernels_without_metrics(), 1u);
  EXPECT_EQ(joiner.ranges_without_kernel(), 1u);
}

class FakeProfiler : public RangeProfilerInterface {
 public:
  bool start(CUcontext context, const std::vector<std::string>& raw, std::string* error) override {
    ++starts;
    started_context = context;
    requested = raw;
    if (!start_ok) *error = "CUPTI range profiler: cuptiRangeProfilerEnable failed: fake";
    return start_ok;
  }
  bool stop_and_decode(std::vector<RangeValues>* out, uint64_t* dropped, std::string*) override {
    *out = ranges;
    *dropped = 0;
    return true;
  }
  int starts = 0;
  bool start_ok = true;
  CUcontext started_context = nullptr;
  std::vector<std::string> requested;
  std::vector<RangeValues> ranges;
};

void launch(CuptiCollector& c, CUcontext context, uint32_t correlation) {
  uint64_t storage = 0;
  int status = 0;
  CUpti_CallbackData d{};
  d.functionName = "cudaLaunchKernel";
  d.correlationId = correlation;
  d.correlationData = &storage;
  d.functionReturnValue = &status;
  d.context = context;
  d.callbackSite = CUPTI_API_ENTER;
  c.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 5, &d);
  d.callbackSite = CUPTI_API_EXIT;
  c.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 5, &d);
}

CUpti_ActivityKernel10 kernel(const char* name, uint32_t correlation) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 10;
  k.end = 20;
  k.correlationId = correlation;
  k.name = name;
  return k;
}

TEST(GpuMetrics, CollectorAttachesProfilerRangesToKernels) {
  FakeCupti api;
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, 5}] = "cudaLaunchKernel";
  FakeProfiler profiler;
  profiler.ranges = {{"gemm", {0, 0, 50, 1000, 0, 0}}};
  RecordingSink sink;
  CollectorOptions o;
  o.quiet = true;
  std::string error;
  ASSERT_TRUE(parse_metric_request("flops_sp,dram", &o.metrics, &error));
  o.profiler = &profiler;
  CuptiCollector c(&api, &sink, o);
  ASSERT_TRUE(c.start());
  auto* context = reinterpret_cast<CUcontext>(0x1000);
  launch(c, context, 1);
  launch(c, context, 2);
  EXPECT_EQ(profiler.starts, 1);  // once, at the first launch, on its context
  EXPECT_EQ(profiler.started_context, context);
  EXPECT_EQ(profiler.requested, raw_metric_names(o.metrics));
  api.queue(kernel("gemm", 1));
  api.queue(kernel("gemm", 2));
  c.flush();
  EXPECT_EQ(sink.find("gemm"), nullptr);  // held for metrics
  c.stop();
  std::vector<const testing::RecordedSpan*> gemms;
  for (const auto& s : sink.spans)
    if (s.name == "gemm") gemms.push_back(&s);
  ASSERT_EQ(gemms.size(), 2u);
  EXPECT_DOUBLE_EQ(metric(*gemms[0], "flops"), 100);
  EXPECT_DOUBLE_EQ(metric(*gemms[0], "dram_read_bytes"), 1000);
  EXPECT_EQ(gemms[1]->attr("flops"), nullptr);  // only one range came back
  const auto* stats = sink.find("cupti.stats");
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->int_attr("metrics.kernels_with_metrics"), 1);
  EXPECT_EQ(stats->int_attr("dropped.metrics_kernels_without_range"), 1);
}

TEST(GpuMetrics, ProfilerFailureKeepsKernelsWithoutMetrics) {
  FakeCupti api;
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, 5}] = "cudaLaunchKernel";
  FakeProfiler profiler;
  profiler.start_ok = false;
  RecordingSink sink;
  CollectorOptions o;
  o.quiet = true;
  std::string error;
  ASSERT_TRUE(parse_metric_request("occupancy", &o.metrics, &error));
  o.profiler = &profiler;
  CuptiCollector c(&api, &sink, o);
  ASSERT_TRUE(c.start());
  launch(c, reinterpret_cast<CUcontext>(0x1000), 1);
  launch(c, reinterpret_cast<CUcontext>(0x1000), 2);
  EXPECT_EQ(profiler.starts, 1);  // not retried on every launch
  api.queue(kernel("relu", 1));
  c.stop();
  const auto* relu = sink.find("relu");
  ASSERT_NE(relu, nullptr);
  EXPECT_EQ(relu->attr("achieved_occupancy"), nullptr);
  EXPECT_NE(sink.find("cupti.stats")->string_attr("metrics.error").find("cuptiRangeProfilerEnable"),
            std::string::npos);
}

}  // namespace
}  // namespace strata::gpu
