// The CUDA backend (cuDNN + cuBLAS) as a plugin, libstrata_lowerbound_cuda.so, built only when the
// CUDA toolkit is found at configure time. `strata` loads it with dlopen on first use
// (cuda_plugin_loader.cc), so the tool still starts on machines without CUDA libraries. The calls
// themselves are cuda_ops.h (shared with `strata bench generate --backend cuda`).
#include <algorithm>

#include "lowerbound/harness/backend.h"
#include "lowerbound/harness/cuda_ops.h"

namespace strata::lowerbound {

namespace {

// "" when a device is usable, else why not (cudart's own reason: no driver, no device, ...).
std::string no_device_reason() {
  int devices = 0;
  cudaError_t status = cudaGetDeviceCount(&devices);
  if (status == cudaSuccess && devices > 0) return "";
  return std::string("no CUDA device on this machine (cudaGetDeviceCount: ") +
         (status == cudaSuccess ? "0 devices" : cudaGetErrorString(status)) + ")";
}

bool measure_impl(const BenchCase& c, const MeasureOptions& options, Measurement* out,
                  std::string* implementation, std::string* why) {
  if (std::string reason = no_device_reason(); !reason.empty()) {
    *why = reason;
    return false;
  }
  cuda::Prepared prepared;
  if (!cuda::prepare(c, &prepared, why)) return false;
  *implementation = prepared.implementation;
  // Calibration on warm launches (time_launches runs an untimed one first): the fastest of three
  // single launches, so one disturbed launch does not shrink the repetitions to one call.
  std::vector<double> warm;
  if (!cuda::time_launches(&prepared, 3, 1, &warm, why)) return false;
  int iterations = iterations_for(*std::min_element(warm.begin(), warm.end()), options);
  Measurement m;
  std::string method;
  if (!cuda::time_launches(&prepared, options.repetitions, iterations, &m.per_call_ns, why, &method))
    return false;
  m.iterations = iterations;
  m.runs = static_cast<int>(m.per_call_ns.size());
  // cuda_graph: GPU time of the calls replayed from a CUDA graph (no host work between them);
  // cuda_events: the calls enqueued one by one (the library could not be captured).
  m.timer = method;
  assess(&m, options);
  *out = std::move(m);
  return true;
}

std::string system_key_impl(std::string* why) {
  if (std::string reason = no_device_reason(); !reason.empty()) {
    *why = reason + "; run `strata bench run --backend cuda` where a GPU is available";
    return "";
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  int cublas_version = 0;
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) == CUBLAS_STATUS_SUCCESS) {
    cublasGetVersion(h, &cublas_version);
    cublasDestroy(h);
  }
  return std::string("gpu=") + prop.name + "|sm=" + std::to_string(prop.major) + std::to_string(prop.minor) +
         "|driver=" + std::to_string(driver) + "|cudart=" + std::to_string(runtime) +
         "|cudnn=" + std::to_string(cudnnGetVersion()) + "|cublas=" + std::to_string(cublas_version);
}

}  // namespace

}  // namespace strata::lowerbound

extern "C" __attribute__((visibility("default"))) bool strata_lowerbound_cuda_measure(
    const strata::lowerbound::BenchCase* c, const strata::lowerbound::MeasureOptions* options,
    strata::lowerbound::Measurement* out, std::string* implementation, std::string* why) {
  return strata::lowerbound::measure_impl(*c, *options, out, implementation, why);
}

extern "C" __attribute__((visibility("default"))) void strata_lowerbound_cuda_system_key(std::string* key,
                                                                                         std::string* why) {
  *key = strata::lowerbound::system_key_impl(why);
}
