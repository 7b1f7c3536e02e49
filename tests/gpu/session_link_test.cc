// The collector writing into a real recording session: after loading the trace, a kernel's parent
// is its launch (by correlation id) and the launch's parent is the layer span that was open on the
// launching thread (by id), so the kernel is attributed to its layer without any time matching.
#include <gtest/gtest.h>

#include "../test_util.h"
#include "collect/runtime.h"
#include "core/attr_keys.h"
#include "core/level.h"
#include "fake_cupti.h"
#include "gpu/cupti_collector.h"
#include "gpu/span_sink.h"
#include "strata/strata.h"
#include "trace/span_tree.h"
#include "trace/trace_loader.h"

namespace strata::gpu {
namespace {

TEST(SessionLink, KernelAttributedToLayerThroughLaunch) {
  strata::testing::TempDir dir;
  std::string path = dir.file("gpu.strata");
  collect::SessionConfig config;
  config.path = path;
  config.level = static_cast<int>(Level::kDevice);
  ASSERT_TRUE(collect::start_recording(config));

  testing::FakeCupti api;
  api.names[{CUPTI_CB_DOMAIN_RUNTIME_API, 211}] = "cudaLaunchKernel";
  SessionSink sink;
  CollectorOptions options;
  options.quiet = true;
  CuptiCollector collector(&api, &sink, options);
  ASSERT_TRUE(collector.start());

  strata_span_id layer = strata_span_begin("conv1", STRATA_LEVEL_LAYER);
  ASSERT_NE(layer, 0u);
  uint64_t storage = 0;
  int status = 0;
  CUpti_CallbackData call{};
  call.functionName = "cudaLaunchKernel";
  call.symbolName = "implicit_gemm";
  call.correlationId = 501;
  call.correlationData = &storage;
  call.functionReturnValue = &status;
  call.callbackSite = CUPTI_API_ENTER;
  collector.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &call);
  call.callbackSite = CUPTI_API_EXIT;
  collector.on_callback(CUPTI_CB_DOMAIN_RUNTIME_API, 211, &call);
  strata_span_end(layer);
  ASSERT_EQ(api.pushed, (std::vector<uint64_t>{layer}));

  // The device ran the kernel later, outside the layer's time: only ids can attribute it.
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = layer;
  e.correlationId = 501;
  api.queue(e);
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  int64_t now = collect::monotonic_ns();
  k.start = static_cast<uint64_t>(now + 1'000'000);
  k.end = static_cast<uint64_t>(now + 2'000'000);
  k.correlationId = 501;
  k.streamId = 7;
  k.name = "implicit_gemm";
  api.queue(k);
  collector.stop();
  collect::stop_recording();

  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error)) << error;
  trace::SpanTree tree = trace::build_span_tree(t);
  int kernel = -1, launch = -1, layer_index = -1;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    std::string_view n = t.name(t.spans[i]);
    if (n == "implicit_gemm" && t.spans[i].kind == static_cast<uint8_t>(SpanKind::kExecution))
      kernel = static_cast<int>(i);
    if (n == "cudaLaunchKernel") launch = static_cast<int>(i);
    if (n == "conv1") layer_index = static_cast<int>(i);
  }
  ASSERT_GE(kernel, 0);
  ASSERT_GE(launch, 0);
  ASSERT_GE(layer_index, 0);
  EXPECT_EQ(tree.parent(kernel), launch);
  EXPECT_EQ(tree.parent(launch), layer_index);
  EXPECT_FALSE(tree.reconstructed(kernel));
  EXPECT_EQ(tree.ancestor_at_level(t, kernel, static_cast<uint8_t>(Level::kLayer)), layer_index);
  auto ext = t.find_attr(kernel, attr_keys::kIssuingSpanId);
  ASSERT_TRUE(ext.has_value());
  EXPECT_EQ(static_cast<uint64_t>(ext->value.i), layer);
}

}  // namespace
}  // namespace strata::gpu
