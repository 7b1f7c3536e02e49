#include "core/activity_type.h"

#include <array>
#include <cctype>
#include <charconv>
#include <utility>

namespace strata {
namespace {

constexpr std::array<std::pair<ActivityType, std::string_view>, 25> kNames{{
    {ActivityType::kUnknown, "unknown"},
    {ActivityType::kKernel, "kernel"},
    {ActivityType::kMemcpyHtoD, "memcpy_htod"},
    {ActivityType::kMemcpyDtoH, "memcpy_dtoh"},
    {ActivityType::kMemcpyDtoD, "memcpy_dtod"},
    {ActivityType::kMemcpyHtoH, "memcpy_htoh"},
    {ActivityType::kMemcpyPtoP, "memcpy_ptop"},
    {ActivityType::kMemcpyOther, "memcpy"},
    {ActivityType::kMemset, "memset"},
    {ActivityType::kSync, "sync"},
    {ActivityType::kCollective, "collective"},
    {ActivityType::kGraph, "graph"},
    {ActivityType::kDeviceRange, "device_range"},
    {ActivityType::kMemoryEvent, "memory_event"},
    {ActivityType::kOverhead, "overhead"},
    {ActivityType::kRuntimeCall, "runtime_call"},
    {ActivityType::kDriverCall, "driver_call"},
    {ActivityType::kLibraryCall, "library_call"},
    {ActivityType::kCpuOp, "cpu_op"},
    {ActivityType::kTensorCopy, "tensor_copy"},
    {ActivityType::kPythonFunction, "python_function"},
    {ActivityType::kAnnotation, "annotation"},
    {ActivityType::kCounter, "counter"},
    {ActivityType::kCpuSample, "cpu_sample"},
    {ActivityType::kGpuPcSample, "gpu_pc_sample"},
}};

char lower(char c) { return static_cast<char>(std::tolower(static_cast<unsigned char>(c))); }

bool equals_ci(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (lower(a[i]) != lower(b[i])) return false;
  return true;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && equals_ci(text.substr(0, prefix.size()), prefix);
}

}  // namespace

std::string activity_name(uint8_t value) {
  for (const auto& [type, name] : kNames)
    if (static_cast<uint8_t>(type) == value) return std::string(name);
  return "activity(" + std::to_string(value) + ")";
}

static_assert(std::size(kKnownActivityValues) == kNames.size() && [] {
  for (size_t i = 0; i < kNames.size(); ++i)
    if (static_cast<uint8_t>(kNames[i].first) != kKnownActivityValues[i]) return false;
  return true;
}(), "kKnownActivityValues (activity_type.h) and kNames list different values");

std::optional<ActivityType> parse_activity(std::string_view text) {
  for (const auto& [type, name] : kNames)
    if (name == text) return type;
  unsigned value = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec == std::errc() && ptr == text.data() + text.size() && !text.empty() && value < 256)
    return static_cast<ActivityType>(value);
  return std::nullopt;
}

ActivityType memcpy_activity(std::string_view code) {
  // "A" (a CUDA array) lives in device memory.
  struct Code {
    std::string_view text;
    ActivityType type;
  };
  static constexpr Code kCodes[] = {
      {"htod", ActivityType::kMemcpyHtoD}, {"h2d", ActivityType::kMemcpyHtoD}, {"htoa", ActivityType::kMemcpyHtoD},
      {"dtoh", ActivityType::kMemcpyDtoH}, {"d2h", ActivityType::kMemcpyDtoH}, {"atoh", ActivityType::kMemcpyDtoH},
      {"dtod", ActivityType::kMemcpyDtoD}, {"d2d", ActivityType::kMemcpyDtoD}, {"atoa", ActivityType::kMemcpyDtoD},
      {"atod", ActivityType::kMemcpyDtoD}, {"dtoa", ActivityType::kMemcpyDtoD}, {"htoh", ActivityType::kMemcpyHtoH},
      {"h2h", ActivityType::kMemcpyHtoH},  {"ptop", ActivityType::kMemcpyPtoP}, {"p2p", ActivityType::kMemcpyPtoP},
  };
  for (const Code& c : kCodes)
    if (equals_ci(code, c.text)) return c.type;
  return ActivityType::kMemcpyOther;
}

ActivityType kernel_activity(std::string_view name) {
  // Device kernels of NCCL ("ncclKernel_SendRecv_...", "ncclDevKernel_...", older NCCL's
  // "ncclAllReduceRingLLKernel_...") and RCCL.
  if (starts_with_ci(name, "nccl") || starts_with_ci(name, "rccl"))
    return ActivityType::kCollective;
  return ActivityType::kKernel;
}

ActivityType framework_op_activity(std::string_view name) {
  constexpr std::string_view kAten = "aten::";
  if (name.size() <= kAten.size() || name.substr(0, kAten.size()) != kAten) return ActivityType::kCpuOp;
  std::string_view op = name.substr(kAten.size());
  if (op == "copy_" || op == "to" || op == "_to_copy" || op == "clone" || op == "contiguous")
    return ActivityType::kTensorCopy;
  return ActivityType::kCpuOp;
}

}  // namespace strata
