// The collector driven through the CUPTI seam: callback data -> launch spans, activity buffers ->
// execution spans, external correlation push/pop, drop accounting, and the CUPTI error path.
#include "gpu/cupti_collector.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "core/level.h"
#include "fake_cupti.h"

namespace strata::gpu {
namespace {

using testing::FakeCupti;
using testing::RecordingSink;

constexpr CUpti_CallbackId kLaunchId = 211;  // ids are whatever CUPTI names them; the fake decides
constexpr CUpti_CallbackId kGetDeviceId = 212;
constexpr CUpti_CallbackId kSyncId = 213;
constexpr CUpti_CallbackId kDriverLaunchId = 307;

void name_apis(FakeCupti& api) {
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, kLaunchId}] = "cudaLaunchKernel";
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, kGetDeviceId}] = "cudaGetDevice";
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, kSyncId}] = "cudaDeviceSynchronize";
  api.names[{CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunchId}] = "cuLaunchKernelEx";
}

CollectorOptions quiet_options() {
  CollectorOptions o;
  o.quiet = true;
  o.buffer_bytes = 4096;
  return o;
}

// One API call as CUPTI reports it: ENTER then EXIT with the same per-call storage.
struct ApiCall {
  CUpti_CallbackData data{};
  uint64_t storage = 0;
  int status = 0;
  ApiCall(const char* function, const char* symbol, uint32_t correlation) {
    data.functionName = function;
    data.symbolName = symbol;
    data.correlationId = correlation;
    data.correlationData = &storage;
    data.functionReturnValue = &status;
  }
  void enter(CuptiCollector& c, CUpti_CallbackDomain d, CUpti_CallbackId id) {
    data.callbackSite = CUPTI_API_ENTER;
    c.on_callback(d, id, &data);
  }
  void exit(CuptiCollector& c, CUpti_CallbackDomain d, CUpti_CallbackId id) {
    data.callbackSite = CUPTI_API_EXIT;
    c.on_callback(d, id, &data);
  }
};

TEST(CuptiCollector, EnablesOnlyTracedApisAndActivityKinds) {
  FakeCupti api;
  name_apis(api);
  RecordingSink sink;
  CuptiCollector c(&api, &sink, quiet_options());
  ASSERT_TRUE(c.start()) << c.error();
  std::vector<CUpti_CallbackId> ids;
  for (auto [d, id] : api.enabled_callbacks) ids.push_back(id);
  EXPECT_EQ(ids, (std::vector<CUpti_CallbackId>{kLaunchId, kSyncId, kDriverLaunchId}));  // not cudaGetDevice
  EXPECT_EQ(api.enabled_kinds.front(), CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  // Every kind but GRAPH_TRACE: graphs are traced node by node unless graph level is asked for.
  EXPECT_EQ(api.enabled_kinds.size(), 9u);
  EXPECT_EQ(std::count(api.enabled_kinds.begin(), api.enabled_kinds.end(), CUPTI_ACTIVITY_KIND_GRAPH_TRACE),
            0);
  EXPECT_STREQ(c.clock_source(), "cupti_timestamp_callback:CLOCK_MONOTONIC");
  ASSERT_NE(api.timestamp, nullptr);
  EXPECT_GT(api.timestamp(), 0u);
  ASSERT_NE(sink.find("cupti.session"), nullptr);
  EXPECT_EQ(sink.find("cupti.session")->string_attr("clock_source"),
            "cupti_timestamp_callback:CLOCK_MONOTONIC");
  c.stop();
}

// STRATA_CUDA_GRAPH_TRACE=graph: one GRAPH_TRACE record per launch (CUPTI then omits the nodes).
TEST(CuptiCollector, GraphLevelTracingEnablesGraphTraceAndSaysSo) {
  FakeCupti api;
  name_apis(api);
  RecordingSink sink;
  CollectorOptions o = quiet_options();
  o.graph_level = true;
  CuptiCollector c(&api, &sink, o);
  ASSERT_TRUE(c.start()) << c.error();
  EXPECT_EQ(api.enabled_kinds.size(), 10u);
  EXPECT_EQ(std::count(api.enabled_kinds.begin(), api.enabled_kinds.end(), CUPTI_ACTIVITY_KIND_GRAPH_TRACE),
            1);
  ASSERT_NE(sink.find("cupti.session"), nullptr);
  EXPECT_EQ(sink.find("cupti.session")->string_attr("cuda_graph_trace"), "graph");
  c.stop();
}

TEST(CuptiCollector, LaunchSpanCarriesCorrelationAndPushesEnclosingSpan) {
  FakeCupti api;
  name_apis(api);
  RecordingSink sink;
  sink.api_span = 0x1234;  // the layer span open on this thread
  CuptiCollector c(&api, &sink, quiet_options());
  ASSERT_TRUE(c.start());
  sink.spans.clear();

  ApiCall launch("cudaLaunchKernel", "_Z6kernelPf", 42);
  launch.enter(c, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunchId);
  EXPECT_EQ(api.pushed, (std::vector<uint64_t>{0x1234}));
  // The runtime's own driver call underneath is not a second launch.
  ApiCall nested("cuLaunchKernelEx", "_Z6kernelPf", 42);
  nested.enter(c, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunchId);
  nested.exit(c, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunchId);
  launch.exit(c, CUPTI_CB_DOMAIN_RUNTIME_API, kLaunchId);
  EXPECT_EQ(api.pops, 1);

  ApiCall ignored("cudaGetDevice", nullptr, 43);
  ignored.enter(c, CUPTI_CB_DOMAIN_RUNTIME_API, kGetDeviceId);
  ignored.exit(c, CUPTI_CB_DOMAIN_RUNTIME_API, kGetDeviceId);

  ApiCall sync("cudaDeviceSynchronize", nullptr, 44);
  sync.status = 700;  // cudaErrorIllegalAddress
  sync.enter(c, CUPTI_CB_DOMAIN_RUNTIME_API, kSyncId);
  sync.exit(c, CUPTI_CB_DOMAIN_RUNTIME_API, kSyncId);

  // A driver launch on its own (driver-API program) is traced.
  ApiCall direct("cuLaunchKernelEx", "_Z3foov", 45);
  direct.enter(c, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunchId);
  direct.exit(c, CUPTI_CB_DOMAIN_DRIVER_API, kDriverLaunchId);

  ASSERT_EQ(sink.spans.size(), 3u);
  const auto& l = sink.spans[0];
  EXPECT_EQ(l.name, "cudaLaunchKernel");
  EXPECT_EQ(l.record.kind, static_cast<uint8_t>(SpanKind::kLaunch));
  EXPECT_EQ(l.record.level, static_cast<uint8_t>(Level::kRuntimeApi));
  EXPECT_EQ(l.record.correlation_id, 42u);
  EXPECT_EQ(l.record.parent_id, 0x1234u);
  EXPECT_LE(l.record.start_ns, l.record.end_ns);
  EXPECT_GT(l.record.start_ns, 0);
  EXPECT_EQ(l.string_attr("kernel"), "_Z6kernelPf");
  EXPECT_EQ(l.attr("status"), nullptr);
  const auto& s = sink.spans[1];
  EXPECT_EQ(s.name, "cudaDeviceSynchronize");
  EXPECT_EQ(s.record.kind, static_cast<uint8_t>(SpanKind::kSpan));
  EXPECT_EQ(s.record.correlation_id, 0u);
  EXPECT_EQ(s.int_attr("status"), 700);
  EXPECT_EQ(sink.spans[2].record.activity_type(), ActivityType::kDriverCall);
  EXPECT_EQ(sink.spans[0].record.activity_type(), ActivityType::kRuntimeCall);
  EXPECT_EQ(sink.spans[0].string_attr(attr_keys::kApiClass), "launch");
  EXPECT_EQ(sink.spans[2].record.correlation_id, 45u);
  EXPECT_EQ(c.stats().nested_driver_calls, 1u);
  c.stop();
}

TEST(CuptiCollector, BuffersBecomeSpansAndDropsAreReported) {
  FakeCupti api;
  name_apis(api);
  api.dropped_per_buffer = 5;
  RecordingSink sink;
  CuptiCollector c(&api, &sink, quiet_options());
  ASSERT_TRUE(c.start());
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 0x99;
  e.correlationId = 42;
  api.queue(e);
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 100;
  k.end = 300;
  k.correlationId = 42;
  k.name = "relu_kernel";
  api.queue(k);
  c.flush();
  const auto* kernel = sink.find("relu_kernel");
  ASSERT_NE(kernel, nullptr);
  EXPECT_EQ(kernel->int_attr(attr_keys::kIssuingSpanId), 0x99);
  EXPECT_EQ(kernel->record.correlation_id, 42u);

  // A buffer whose walk fails half way: the loss is counted.
  api.queue(k);
  api.queue(k);
  api.walk_error_at = 1;
  c.flush();
  CollectorStats s = c.stats();
  EXPECT_EQ(s.buffers, 2u);
  EXPECT_EQ(s.cupti_dropped, 10u);
  EXPECT_EQ(s.record_errors, 1u);
  EXPECT_EQ(c.total_dropped(), 11u);
  c.stop();
  const auto* stats = sink.find("cupti.stats");
  ASSERT_NE(stats, nullptr);
  EXPECT_EQ(stats->int_attr("dropped.cupti_records"), 10);
  EXPECT_EQ(stats->int_attr("dropped.buffer_walk_errors"), 1);
  // The same counts reach the trace's drop accounting, not only the timeline.
  EXPECT_EQ(sink.drops.at("cupti_records"), 10u);
  EXPECT_EQ(sink.drops.at("cupti_buffer_walk_errors"), 1u);
  EXPECT_FALSE(sink.properties.at("cupti.clock_source").empty());
  EXPECT_EQ(stats->int_attr("activity_spans"), 2);
  EXPECT_EQ(api.unsubscribes, 1);
}

TEST(CuptiCollector, CuptiErrorLeavesProgramUntraced) {
  FakeCupti api;
  name_apis(api);
  api.subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  RecordingSink sink;
  CuptiCollector c(&api, &sink, quiet_options());
  EXPECT_FALSE(c.start());
  EXPECT_FALSE(c.running());
  EXPECT_NE(c.error().find("cuptiSubscribe"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("MULTIPLE_SUBSCRIBERS"), std::string::npos) << c.error();
  EXPECT_EQ(c.error().find('\n'), std::string::npos);  // one line
  EXPECT_TRUE(api.enabled_callbacks.empty());
  EXPECT_TRUE(api.enabled_kinds.empty());
  EXPECT_TRUE(sink.spans.empty());
  c.flush();  // harmless when not running
  c.stop();
  EXPECT_TRUE(sink.spans.empty());
}

TEST(CuptiCollector, MissingOptionalKindsAreListedRequiredKindFails) {
  FakeCupti api;
  api.failing_kinds[CUPTI_ACTIVITY_KIND_MEMORY2] = true;
  api.timestamp_result = CUPTI_ERROR_NOT_SUPPORTED;
  RecordingSink sink;
  CollectorOptions o = quiet_options();
  o.callbacks = false;
  CuptiCollector c(&api, &sink, o);
  ASSERT_TRUE(c.start());
  EXPECT_EQ(c.unsupported_kinds(), (std::vector<std::string>{"memory2"}));
  EXPECT_STREQ(c.clock_source(), "cupti_default");
  EXPECT_EQ(sink.find("cupti.session")->string_attr("unsupported_activity_kinds"), "memory2");
  c.stop();

  FakeCupti api2;
  api2.failing_kinds[CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL] = true;
  RecordingSink sink2;
  CuptiCollector c2(&api2, &sink2, o);
  EXPECT_FALSE(c2.start());
  EXPECT_NE(c2.error().find("CONCURRENT_KERNEL"), std::string::npos);
}

}  // namespace
}  // namespace strata::gpu
