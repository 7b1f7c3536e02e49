#include "cli/gpu_record_env.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/level.h"

namespace strata::cli {
namespace {

std::string sibling(const std::string& runtime_library, const char* name) {
  std::string path = (std::filesystem::path(runtime_library).parent_path() / name).string();
  return access(path.c_str(), R_OK) == 0 ? path : "";
}

void set_injection(const char* variable, const std::string& library, const char* what) {
  const char* old = std::getenv(variable);
  if (old != nullptr && *old != '\0' && library != old) {
    std::fprintf(
        stderr, "strata record: %s is already set to %s; %s is not recorded (unset it to let Strata trace)\n",
        variable, old, what);
    return;
  }
  setenv(variable, library.c_str(), 1);
}

void missing(const char* library, const char* what) {
  std::fprintf(
      stderr,
      "strata record: %s not found next to libstrata.so; %s is not recorded (build Strata with the CUDA "
      "toolkit, STRATA_WITH_CUDA=ON)\n",
      library, what);
}

}  // namespace

void add_gpu_record_env(int level, const std::string& runtime_library) {
  if (level >= static_cast<int>(Level::kLayer)) {
    std::string nvtx = sibling(runtime_library, "libstrata_nvtx.so");
    // Layer level is the default for framework runs: stay quiet when NVTX support is not built.
    if (!nvtx.empty()) set_injection("NVTX_INJECTION64_PATH", nvtx, "NVTX");
  }
  if (level >= static_cast<int>(Level::kLibrary)) {
    std::string interposer = sibling(runtime_library, "libstrata_cudnn.so");
    if (!interposer.empty()) {
      const char* old = std::getenv("LD_PRELOAD");
      std::string value = interposer;
      if (old != nullptr && *old != '\0') value += ":" + std::string(old);
      setenv("LD_PRELOAD", value.c_str(), 1);
    } else if (level >= static_cast<int>(Level::kRuntimeApi)) {
      missing("libstrata_cudnn.so", "cuDNN/cuBLAS");
    }
  }
  if (level >= static_cast<int>(Level::kRuntimeApi)) {
    std::string cupti = sibling(runtime_library, "libstrata_cupti.so");
    if (!cupti.empty())
      set_injection("CUDA_INJECTION64_PATH", cupti, "the CUDA API and GPU activity");
    else
      missing("libstrata_cupti.so", "the CUDA API and GPU activity");
  }
}

}  // namespace strata::cli
