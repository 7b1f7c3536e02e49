// Memory attributes of framework ops and the memory counter tracks: the keys every producer (the
// PyTorch layer tracer, the Kineto importer) writes and the analyses read. Definitions in
// docs/memory.md; torch.profiler's columns in brackets.
#pragma once

#include <string>
#include <string_view>

namespace strata::memory_keys {

// Per op (layer span). Bytes of every allocator the producer saw, on the op's thread, while it ran.
// Gross allocated, nested ops included.
inline constexpr std::string_view kAllocBytes = "alloc_bytes";
// Freed, nested ops included.
inline constexpr std::string_view kFreedBytes = "freed_bytes";
// alloc - freed [torch.profiler "CPU Mem"].
inline constexpr std::string_view kNetAllocBytes = "net_alloc_bytes";
// alloc - freed while no nested op was running ["Self CPU Mem"].
inline constexpr std::string_view kSelfNetAllocBytes = "self_net_alloc_bytes";
// Highest (alloc - freed) reached since the op began: what it needed on top of what was live.
inline constexpr std::string_view kPeakAllocBytes = "peak_alloc_bytes";
// Highest live level of the allocator right after one of the op's allocations.
inline constexpr std::string_view kPeakLiveBytes = "peak_live_bytes";
// The part on an accelerator (Kineto imports: CUDA/HIP allocations) carries this prefix
// ("device_alloc_bytes", "device_net_alloc_bytes", ...); the unprefixed keys count every device.
inline constexpr std::string_view kDevicePrefix = "device_";

// Memory timeline: counter records (SpanKind::kCounter, metric "value" = live bytes) per allocator
// and device, named by counter_name(); the two strings are also attributes of each record.
inline constexpr std::string_view kCounterAllocator = "allocator";
inline constexpr std::string_view kCounterDevice = "device";
inline constexpr std::string_view kCounterPrefix = "allocated memory (";

inline std::string counter_name(std::string_view allocator, std::string_view device) {
  std::string name(kCounterPrefix);
  name.append(allocator).append(", ").append(device).append(")");
  return name;
}

}  // namespace strata::memory_keys
