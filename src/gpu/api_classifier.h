// Which CUDA runtime/driver API calls the collector traces, decided from the call's name so the
// choice covers every versioned variant (cudaLaunchKernel_ptsz, cuLaunchKernelEx, ...) that CUPTI
// lists, without a hand-kept table of callback ids.
#pragma once

#include <string_view>

namespace strata::gpu {

enum class ApiClass {
  kIgnored,        // not traced (attribute queries, error strings, ...)
  kLaunch,         // enqueues a kernel (incl. cooperative, Ex, graph launch)
  kMemcpy,         // enqueues a copy
  kMemset,         // enqueues a memset
  kSync,           // waits for the device
  kAlloc,          // allocates device/host memory
  kFree,           // frees it
  kDeviceReset,    // destroys the context: activity must be flushed first
  kTmaDescriptor,  // builds a Hopper TMA descriptor on the host (cuTensorMapEncode*): no device work
};

enum class ApiDomain { kRuntime, kDriver };

ApiClass classify_api(ApiDomain domain, std::string_view name);
// Launch, copy and memset calls produce device activity: their span is a launch (kind) carrying the
// CUPTI correlation id.
bool produces_device_work(ApiClass c);
const char* api_class_name(ApiClass c);

}  // namespace strata::gpu
