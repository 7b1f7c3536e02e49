// ActivityType values are written into trace files: these tests pin every value, name and group so
// a renumbering (or a reused number) fails here before it reaches a file.
#include "core/activity_type.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <set>
#include <string>

#include "core/span_record.h"
#include "strata/strata.h"

namespace strata {
namespace {

struct Pinned {
  ActivityType type;
  int value;
  const char* name;
};

// The file-format contract (docs/trace-format.md): add rows, never change one.
constexpr Pinned kPinned[] = {
    {ActivityType::kUnknown, 0, "unknown"},
    {ActivityType::kKernel, 1, "kernel"},
    {ActivityType::kMemcpyHtoD, 2, "memcpy_htod"},
    {ActivityType::kMemcpyDtoH, 3, "memcpy_dtoh"},
    {ActivityType::kMemcpyDtoD, 4, "memcpy_dtod"},
    {ActivityType::kMemcpyHtoH, 5, "memcpy_htoh"},
    {ActivityType::kMemcpyPtoP, 6, "memcpy_ptop"},
    {ActivityType::kMemcpyOther, 7, "memcpy"},
    {ActivityType::kMemset, 8, "memset"},
    {ActivityType::kSync, 9, "sync"},
    {ActivityType::kCollective, 10, "collective"},
    {ActivityType::kGraph, 11, "graph"},
    {ActivityType::kDeviceRange, 12, "device_range"},
    {ActivityType::kMemoryEvent, 13, "memory_event"},
    {ActivityType::kOverhead, 14, "overhead"},
    {ActivityType::kRuntimeCall, 40, "runtime_call"},
    {ActivityType::kDriverCall, 41, "driver_call"},
    {ActivityType::kLibraryCall, 42, "library_call"},
    {ActivityType::kCpuOp, 60, "cpu_op"},
    {ActivityType::kTensorCopy, 61, "tensor_copy"},
    {ActivityType::kPythonFunction, 62, "python_function"},
    {ActivityType::kAnnotation, 63, "annotation"},
    {ActivityType::kCounter, 64, "counter"},
    {ActivityType::kCpuSample, 80, "cpu_sample"},
    {ActivityType::kGpuPcSample, 81, "gpu_pc_sample"},
};

TEST(ActivityType, ValuesAndNamesArePinned) {
  for (const Pinned& p : kPinned) {
    EXPECT_EQ(static_cast<int>(p.type), p.value) << p.name;
    EXPECT_EQ(activity_name(p.type), p.name);
    EXPECT_EQ(parse_activity(p.name), p.type) << p.name;
    EXPECT_EQ(parse_activity(std::to_string(p.value)), p.type);
    EXPECT_TRUE(is_known_activity(static_cast<uint8_t>(p.value)));
  }
  // Exactly the pinned values are known; every other byte (a newer writer's) reads as activity(N).
  std::set<int> pinned;
  for (const Pinned& p : kPinned) pinned.insert(p.value);
  for (int v = 0; v < 256; ++v) {
    EXPECT_EQ(is_known_activity(static_cast<uint8_t>(v)), pinned.count(v) == 1) << v;
    if (!pinned.count(v)) {
      EXPECT_EQ(activity_name(static_cast<uint8_t>(v)), "activity(" + std::to_string(v) + ")");
    }
  }
  EXPECT_FALSE(parse_activity("kernels"));
  EXPECT_FALSE(parse_activity("256"));
  EXPECT_FALSE(parse_activity(""));
}

TEST(ActivityType, RecordByteAndCHeaderAgree) {
  EXPECT_EQ(sizeof(SpanRecord), 64u);
  EXPECT_EQ(offsetof(SpanRecord, activity), 62u);
  SpanRecord r;
  EXPECT_EQ(r.activity_type(), ActivityType::kUnknown);  // what a format 1.0 file reads as
  EXPECT_EQ(STRATA_ACTIVITY_KERNEL, 1);
  EXPECT_EQ(STRATA_ACTIVITY_MEMCPY_HTOD, 2);
  EXPECT_EQ(STRATA_ACTIVITY_MEMSET, 8);
  EXPECT_EQ(STRATA_ACTIVITY_LIBRARY_CALL, 42);
  EXPECT_EQ(STRATA_ACTIVITY_CPU_OP, 60);
  EXPECT_EQ(STRATA_ACTIVITY_TENSOR_COPY, 61);
  EXPECT_EQ(STRATA_ACTIVITY_ANNOTATION, 63);
}

TEST(ActivityType, Groups) {
  for (const Pinned& p : kPinned) {
    const int v = p.value;
    EXPECT_EQ(is_memcpy(p.type), v >= 2 && v <= 7) << p.name;
    EXPECT_EQ(is_memory_transfer(p.type), v >= 2 && v <= 8) << p.name;
    EXPECT_EQ(is_host_call(p.type), v >= 40 && v <= 42) << p.name;
  }
}

TEST(ActivityType, CopyDirectionCodes) {
  // CUPTI (memcpy_kind_name), Kineto ("Memcpy HtoD (...)"), ROCm (args.kind), TF2 ("MemcpyH2D").
  const std::pair<const char*, ActivityType> cases[] = {
      {"HtoD", ActivityType::kMemcpyHtoD}, {"h2d", ActivityType::kMemcpyHtoD}, {"HtoA", ActivityType::kMemcpyHtoD},
      {"DtoH", ActivityType::kMemcpyDtoH}, {"D2H", ActivityType::kMemcpyDtoH}, {"AtoH", ActivityType::kMemcpyDtoH},
      {"DtoD", ActivityType::kMemcpyDtoD}, {"D2D", ActivityType::kMemcpyDtoD}, {"AtoA", ActivityType::kMemcpyDtoD},
      {"AtoD", ActivityType::kMemcpyDtoD}, {"DtoA", ActivityType::kMemcpyDtoD}, {"HtoH", ActivityType::kMemcpyHtoH},
      {"PtoP", ActivityType::kMemcpyPtoP}, {"P2P", ActivityType::kMemcpyPtoP}, {"unknown", ActivityType::kMemcpyOther},
      {"", ActivityType::kMemcpyOther},    {"HtoDx", ActivityType::kMemcpyOther},
  };
  for (const auto& [code, type] : cases) EXPECT_EQ(memcpy_activity(code), type) << code;
}

TEST(ActivityType, KernelsAndFrameworkOps) {
  EXPECT_EQ(kernel_activity("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8"), ActivityType::kCollective);
  EXPECT_EQ(kernel_activity("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), ActivityType::kCollective);
  EXPECT_EQ(kernel_activity("ncclAllReduceRingLLKernel_sum_f32"), ActivityType::kCollective);
  EXPECT_EQ(kernel_activity("volta_sgemm_128x64_nn"), ActivityType::kKernel);
  EXPECT_EQ(kernel_activity("void at::native::vectorized_elementwise_kernel<4, nccl_like>"), ActivityType::kKernel);
  for (const char* op : {"aten::copy_", "aten::to", "aten::_to_copy", "aten::clone", "aten::contiguous"})
    EXPECT_EQ(framework_op_activity(op), ActivityType::kTensorCopy) << op;
  for (const char* op : {"aten::conv2d", "aten::copy", "aten::to_dense", "aten::", "copy_", "", "aten::clone_"})
    EXPECT_EQ(framework_op_activity(op), ActivityType::kCpuOp) << op;
}

}  // namespace
}  // namespace strata
