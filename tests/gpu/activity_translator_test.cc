// Fabricated CUPTI activity records -> spans with the right fields (no GPU needed).
#include "gpu/activity_translator.h"

#include <gtest/gtest.h>

#include "core/level.h"
#include "fake_cupti.h"

namespace strata::gpu {
namespace {

using testing::RecordingSink;

CUpti_ActivityKernel10 make_kernel(uint32_t correlation, uint64_t start, uint64_t end) {
  CUpti_ActivityKernel10 k{};
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = start;
  k.end = end;
  k.deviceId = 1;
  k.streamId = 7;
  k.contextId = 3;
  k.correlationId = correlation;
  k.gridX = 128;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 40;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 8192;
  k.name = "volta_sgemm_128x64_nn";
  return k;
}

template <typename T>
const CUpti_Activity* as_activity(const T& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

TEST(ActivityTranslator, KernelBecomesDeviceExecutionWithLaunchGeometry) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityKernel10 k = make_kernel(55, 1000, 5000);
  ASSERT_TRUE(t.translate(as_activity(k)));
  ASSERT_EQ(sink.spans.size(), 1u);
  const auto& s = sink.spans[0];
  EXPECT_EQ(s.name, "volta_sgemm_128x64_nn");
  EXPECT_EQ(s.record.start_ns, 1000);
  EXPECT_EQ(s.record.end_ns, 5000);
  EXPECT_EQ(s.record.device, 1);
  EXPECT_EQ(s.record.stream, 7u);
  EXPECT_EQ(s.record.correlation_id, 55u);
  EXPECT_EQ(s.record.parent_id, 0u);
  EXPECT_EQ(s.record.level, static_cast<uint8_t>(Level::kDevice));
  EXPECT_EQ(s.record.kind, static_cast<uint8_t>(SpanKind::kExecution));
  EXPECT_EQ(s.record.clock, static_cast<uint8_t>(ClockDomain::kMonotonic));
  EXPECT_EQ(s.int_attr("grid_x"), 128);
  EXPECT_EQ(s.int_attr("grid_y"), 2);
  EXPECT_EQ(s.int_attr("block_x"), 256);
  EXPECT_EQ(s.int_attr("registers_per_thread"), 40);
  EXPECT_EQ(s.int_attr("shared_memory_static"), 4096);
  EXPECT_EQ(s.int_attr("shared_memory_dynamic"), 8192);
  EXPECT_EQ(s.record.activity_type(), ActivityType::kKernel);
  EXPECT_EQ(s.attr("category"), nullptr);  // the activity type is the record's, not an attribute
  EXPECT_EQ(s.attr(attr_keys::kIssuingSpanId), nullptr);  // no external correlation seen
}

TEST(ActivityTranslator, CopiesMemsetsSyncsAndMemory) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityMemcpy6 m{};
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  m.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.flags = CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC;
  m.bytes = 1 << 20;
  m.start = 10;
  m.end = 20;
  m.streamId = 2;
  m.correlationId = 9;
  ASSERT_TRUE(t.translate(as_activity(m)));
  CUpti_ActivityMemset4 ms{};
  ms.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  ms.bytes = 512;
  ms.value = 0;
  ms.start = 30;
  ms.end = 31;
  ms.correlationId = 10;
  ASSERT_TRUE(t.translate(as_activity(ms)));
  CUpti_ActivitySynchronization2 sy{};
  sy.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
  sy.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sy.start = 40;
  sy.end = 90;
  sy.streamId = 2;
  ASSERT_TRUE(t.translate(as_activity(sy)));
  CUpti_ActivityMemory4 mem{};
  mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mem.bytes = 4096;
  mem.address = 0x7000;
  mem.timestamp = 5;
  mem.correlationId = 3;
  ASSERT_TRUE(t.translate(as_activity(mem)));
  CUpti_ActivityGraphTrace2 g{};
  g.kind = CUPTI_ACTIVITY_KIND_GRAPH_TRACE;
  g.graphId = 4;
  g.start = 100;
  g.end = 200;
  g.correlationId = 11;
  ASSERT_TRUE(t.translate(as_activity(g)));
  CUpti_ActivityOverhead3 o{};
  o.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  o.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  o.start = 1;
  o.end = 2;
  ASSERT_TRUE(t.translate(as_activity(o)));

  ASSERT_EQ(sink.spans.size(), 6u);
  const auto* copy = sink.find("memcpy HtoD");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ(copy->record.activity_type(), ActivityType::kMemcpyHtoD);
  EXPECT_EQ(copy->int_attr("bytes"), 1 << 20);
  EXPECT_EQ(copy->string_attr("src_kind"), "pinned");
  EXPECT_EQ(copy->int_attr("async"), 1);
  EXPECT_EQ(copy->record.correlation_id, 9u);
  const auto* set = sink.find("memset");
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->record.activity_type(), ActivityType::kMemset);
  EXPECT_EQ(set->int_attr("bytes"), 512);
  const auto* sync = sink.find("cudaStreamSynchronize");
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->record.end_ns - sync->record.start_ns, 50);
  EXPECT_EQ(sync->record.activity_type(), ActivityType::kSync);
  const auto* alloc = sink.find("memory.allocation");
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->record.kind, static_cast<uint8_t>(SpanKind::kInstant));
  EXPECT_EQ(alloc->record.correlation_id, 0u);
  EXPECT_EQ(alloc->int_attr("api_correlation_id"), 3);
  EXPECT_EQ(alloc->record.activity_type(), ActivityType::kMemoryEvent);
  const auto* graph = sink.find("cudaGraph");
  ASSERT_NE(graph, nullptr);
  EXPECT_EQ(graph->int_attr("graph_id"), 4);
  EXPECT_EQ(graph->record.activity_type(), ActivityType::kGraph);
  const auto* overhead = sink.find("overhead.cupti_buffer_flush");
  ASSERT_NE(overhead, nullptr);
  EXPECT_EQ(overhead->record.level, static_cast<uint8_t>(Level::kRuntimeApi));
  EXPECT_EQ(overhead->record.activity_type(), ActivityType::kOverhead);
}

// The copy kind of every CUPTI copy record becomes the span's activity type (a CUDA array is device
// memory); peer copies come as MEMCPY2 records; NCCL kernels are collectives.
TEST(ActivityTranslator, CopyKindsAndCollectivesBecomeActivityTypes) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  const std::pair<CUpti_ActivityMemcpyKind, ActivityType> kinds[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, ActivityType::kMemcpyHtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOA, ActivityType::kMemcpyHtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, ActivityType::kMemcpyDtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOH, ActivityType::kMemcpyDtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, ActivityType::kMemcpyDtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOA, ActivityType::kMemcpyDtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_ATOD, ActivityType::kMemcpyDtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOA, ActivityType::kMemcpyDtoD},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, ActivityType::kMemcpyHtoH},
      {CUPTI_ACTIVITY_MEMCPY_KIND_PTOP, ActivityType::kMemcpyPtoP},
      {CUPTI_ACTIVITY_MEMCPY_KIND_UNKNOWN, ActivityType::kMemcpyOther},
  };
  for (const auto& [kind, type] : kinds) {
    CUpti_ActivityMemcpy6 m{};
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = static_cast<uint8_t>(kind);
    m.start = 1;
    m.end = 2;
    ASSERT_TRUE(t.translate(as_activity(m)));
    EXPECT_EQ(sink.spans.back().record.activity_type(), type) << sink.spans.back().name;
  }
  CUpti_ActivityMemcpyPtoP4 p2p{};
  p2p.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  p2p.start = 3;
  p2p.end = 4;
  ASSERT_TRUE(t.translate(as_activity(p2p)));
  EXPECT_EQ(sink.spans.back().record.activity_type(), ActivityType::kMemcpyPtoP);
  CUpti_ActivityKernel10 nccl = make_kernel(1, 5, 6);
  nccl.name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  ASSERT_TRUE(t.translate(as_activity(nccl)));
  EXPECT_EQ(sink.spans.back().record.activity_type(), ActivityType::kCollective);
}

TEST(ActivityTranslator, ExternalCorrelationLinksKernelToStrataSpan) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  e.externalId = 0xABCDEF;
  e.correlationId = 77;
  EXPECT_TRUE(t.translate(as_activity(e)));
  EXPECT_TRUE(sink.spans.empty());  // a link, not a span
  CUpti_ActivityKernel10 k = make_kernel(77, 1, 2);
  ASSERT_TRUE(t.translate(as_activity(k)));
  CUpti_ActivityKernel10 other = make_kernel(78, 3, 4);
  ASSERT_TRUE(t.translate(as_activity(other)));
  EXPECT_EQ(sink.spans[0].int_attr(attr_keys::kIssuingSpanId), 0xABCDEF);
  EXPECT_EQ(sink.spans[0].record.parent_id, 0u);  // the launch span is the parent (by correlation)
  EXPECT_EQ(sink.spans[1].attr(attr_keys::kIssuingSpanId), nullptr);
  EXPECT_EQ(t.stats().external_links, 1u);

  // Without launch spans (callback API off) the external span becomes the explicit parent.
  RecordingSink direct;
  TranslatorOptions opts;
  opts.parent_is_external = true;
  ActivityTranslator t2(&direct, opts);
  t2.translate(as_activity(e));
  t2.translate(as_activity(k));
  EXPECT_EQ(direct.spans[0].record.parent_id, 0xABCDEFu);
}

// CUPTI gives the mangled symbol (as an H100 run with PyTorch 2.11 showed); the span carries the name
// Kineto and Nsight show. A name that does not demangle is kept as it is.
TEST(ActivityTranslator, KernelNamesAreDemangled) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityKernel10 k = make_kernel(1, 10, 20);
  // Two names from that run; the demangled forms are how Kineto's trace of the same program names them.
  k.name =
      "_ZN2at6native29vectorized_elementwise_kernelILi8EZNS0_25bfloat16_copy_kernel_cudaERNS_"
      "18TensorIteratorBaseEEUlfE_"
      "St5arrayIPcLm2EEEEviT0_T1_";
  ASSERT_TRUE(t.translate(as_activity(k)));
  k.name =
      "_ZN2at6native53_GLOBAL__N__21739cd4_20_layer_norm_kernel_cu_9c5ada8a28vectorized_layer_norm_"
      "kernelIffLb0EEEviT0_"
      "PKT_S6_S6_PS3_S7_PS4_";
  ASSERT_TRUE(t.translate(as_activity(k)));
  k.name = "_Znot_a_symbol";
  ASSERT_TRUE(t.translate(as_activity(k)));
  ASSERT_EQ(sink.spans.size(), 3u);
  EXPECT_EQ(sink.spans[0].name,
            "void at::native::vectorized_elementwise_kernel<8, at::native::bfloat16_copy_kernel_cuda(at::"
            "TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul> >(int, "
            "at::native::bfloat16_copy_kernel_"
            "cuda(at::TensorIteratorBase&)::{lambda(float)#1}, std::array<char*, 2ul>)");
  EXPECT_EQ(
      sink.spans[1].name,
      "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float, false>(int, float, "
      "float const*, float const*, float const*, float*, float*, float*)");
  EXPECT_EQ(sink.spans[2].name, "_Znot_a_symbol");
}

// A device record names the GPU for the roofline's peaks and says what it can do; it is no span.
TEST(ActivityTranslator, DeviceRecordBecomesDeviceProperties) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityDevice5 d{};
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";  // as CUPTI names the GPU of the validation run
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.numMultiprocessors = 132;
  d.coreClockRate = 1980000;
  d.globalMemoryBandwidth = 3352320000;
  d.globalMemorySize = 85520809984;
  d.l2CacheSize = 52428800;
  ASSERT_TRUE(t.translate(as_activity(d)));
  EXPECT_TRUE(sink.spans.empty());
  EXPECT_EQ(sink.properties.at("device.0.name"), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(sink.properties.at("device.0.compute_capability"), "9.0");
  EXPECT_EQ(sink.properties.at("device.0.sm_count"), "132");
  EXPECT_EQ(sink.properties.at("device.0.core_clock_khz"), "1980000");
  EXPECT_EQ(sink.properties.at("device.0.memory_bandwidth_kbps"), "3352320000");
  EXPECT_EQ(t.stats().unknown_kind, 0u);
}

TEST(ActivityTranslator, BadAndUnknownRecordsAreCountedNotEmitted) {
  RecordingSink sink;
  ActivityTranslator t(&sink, {});
  CUpti_ActivityKernel10 backwards = make_kernel(1, 500, 100);
  EXPECT_FALSE(t.translate(as_activity(backwards)));
  CUpti_ActivityKernel10 unknown_time = make_kernel(1, CUPTI_TIMESTAMP_UNKNOWN, 100);
  EXPECT_FALSE(t.translate(as_activity(unknown_time)));
  CUpti_ActivityKernel10 other_kind = make_kernel(1, 1, 2);
  other_kind.kind = CUPTI_ACTIVITY_KIND_PC_SAMPLING;
  EXPECT_FALSE(t.translate(as_activity(other_kind)));
  EXPECT_TRUE(sink.spans.empty());
  EXPECT_EQ(t.stats().records, 3u);
  EXPECT_EQ(t.stats().bad_timestamps, 2u);
  EXPECT_EQ(t.stats().unknown_kind, 1u);
}

TEST(ActivityTranslator, ExternalMapIsBounded) {
  RecordingSink sink;
  TranslatorOptions opts;
  opts.max_external_entries = 4;
  ActivityTranslator t(&sink, opts);
  CUpti_ActivityExternalCorrelation e{};
  e.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
  e.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  for (uint32_t i = 1; i <= 9; ++i) {
    e.correlationId = i;
    e.externalId = 100 + i;
    t.translate(as_activity(e));
  }
  EXPECT_EQ(t.stats().external_map_resets, 2u);
}

}  // namespace
}  // namespace strata::gpu
