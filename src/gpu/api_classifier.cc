#include "gpu/api_classifier.h"

#include "core/kernel_names.h"

namespace strata::gpu {
namespace {

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

ApiClass classify_runtime(std::string_view n) {
  if (starts_with(n, "cudaLaunch") || starts_with(n, "cudaGraphLaunch")) return ApiClass::kLaunch;
  if (starts_with(n, "cudaMemcpy")) return ApiClass::kMemcpy;
  if (starts_with(n, "cudaMemset")) return ApiClass::kMemset;
  if (starts_with(n, "cudaDeviceSynchronize") || starts_with(n, "cudaStreamSynchronize") ||
      starts_with(n, "cudaEventSynchronize") || starts_with(n, "cudaStreamWaitEvent") ||
      starts_with(n, "cudaThreadSynchronize"))
    return ApiClass::kSync;
  if (starts_with(n, "cudaMalloc") || starts_with(n, "cudaHostAlloc")) return ApiClass::kAlloc;
  if (starts_with(n, "cudaFree")) return ApiClass::kFree;
  if (starts_with(n, "cudaDeviceReset") || starts_with(n, "cudaThreadExit")) return ApiClass::kDeviceReset;
  return ApiClass::kIgnored;
}

ApiClass classify_driver(std::string_view n) {
  // Driver calls are traced for programs that use the driver API directly; when the runtime calls
  // the driver underneath, the collector skips the nested call (see CuptiCollector).
  if (starts_with(n, "cuLaunch") || starts_with(n, "cuGraphLaunch")) return ApiClass::kLaunch;
  if (starts_with(n, "cuMemcpy")) return ApiClass::kMemcpy;
  if (starts_with(n, "cuMemset")) return ApiClass::kMemset;
  if (starts_with(n, "cuCtxSynchronize") || starts_with(n, "cuStreamSynchronize") ||
      starts_with(n, "cuEventSynchronize") || starts_with(n, "cuStreamWaitEvent"))
    return ApiClass::kSync;
  if (starts_with(n, "cuMemAlloc") || starts_with(n, "cuMemHostAlloc")) return ApiClass::kAlloc;
  if (starts_with(n, "cuMemFree")) return ApiClass::kFree;
  if (starts_with(n, "cuCtxDestroy") || starts_with(n, "cuDevicePrimaryCtxReset"))
    return ApiClass::kDeviceReset;
  if (is_tma_descriptor_call(n)) return ApiClass::kTmaDescriptor;
  return ApiClass::kIgnored;
}

}  // namespace

ApiClass classify_api(ApiDomain domain, std::string_view name) {
  return domain == ApiDomain::kRuntime ? classify_runtime(name) : classify_driver(name);
}

bool produces_device_work(ApiClass c) {
  return c == ApiClass::kLaunch || c == ApiClass::kMemcpy || c == ApiClass::kMemset;
}

const char* api_class_name(ApiClass c) {
  switch (c) {
    case ApiClass::kLaunch:
      return "launch";
    case ApiClass::kMemcpy:
      return "memcpy";
    case ApiClass::kMemset:
      return "memset";
    case ApiClass::kSync:
      return "sync";
    case ApiClass::kAlloc:
      return "alloc";
    case ApiClass::kFree:
      return "free";
    case ApiClass::kDeviceReset:
      return "device_reset";
    case ApiClass::kTmaDescriptor:
      return "tma_descriptor";
    default:
      return "ignored";
  }
}

}  // namespace strata::gpu
