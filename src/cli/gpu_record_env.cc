#include "cli/gpu_record_env.h"

#include <dlfcn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
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
      if (old != nullptr && *old != '\0') value.append(":").append(old);
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

namespace {

// Runs in the child: the driver's answer as one line, empty when a GPU is usable.
std::string probe_driver() {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (cuda == nullptr) {
    const char* error = dlerror();
    return std::string("no NVIDIA driver (") + (error != nullptr ? error : "libcuda.so.1 not found") + ")";
  }
  using InitFn = int (*)(unsigned);
  using CountFn = int (*)(int*);
  auto init = reinterpret_cast<InitFn>(dlsym(cuda, "cuInit"));
  auto count = reinterpret_cast<CountFn>(dlsym(cuda, "cuDeviceGetCount"));
  if (init == nullptr || count == nullptr) return "libcuda.so.1 lacks cuInit/cuDeviceGetCount";
  if (int r = init(0); r != 0)
    return "the NVIDIA driver does not initialize (cuInit error " + std::to_string(r) + "): no usable GPU";
  int devices = 0;
  if (count(&devices) != 0 || devices == 0) return "the NVIDIA driver sees no GPU";
  return "";
}

}  // namespace

std::optional<std::string> gpu_unavailable_reason() {
  int fds[2];
  if (pipe(fds) != 0) return std::nullopt;  // cannot tell: let the collector speak for itself
  pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return std::nullopt;
  }
  if (child == 0) {
    close(fds[0]);
    std::string answer = probe_driver();
    ssize_t ignored = write(fds[1], answer.data(), answer.size());
    (void)ignored;
    _exit(0);
  }
  close(fds[1]);
  std::string answer;
  char buf[512];
  for (ssize_t n; (n = read(fds[0], buf, sizeof(buf))) != 0;) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) break;
    answer.append(buf, static_cast<size_t>(n));
  }
  close(fds[0]);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status))
    return "probing the NVIDIA driver crashed (signal " + std::to_string(WTERMSIG(status)) + ")";
  if (answer.empty()) return std::nullopt;
  return answer;
}

std::optional<std::string> gpu_outcome_note(const trace::TraceSummary& summary, int level) {
  if (level < static_cast<int>(Level::kRuntimeApi) || summary.record.get("gpu.unavailable"))
    return std::nullopt;
  for (const auto& [span_level, count] : summary.spans_per_level)
    if (span_level >= static_cast<uint8_t>(Level::kRuntimeApi) &&
        span_level <= static_cast<uint8_t>(Level::kDevice) && count > 0)
      return std::nullopt;
  return "no CUDA API call or GPU activity was recorded: the program did not use CUDA, or the driver never "
         "loaded the collector (CUDA_INJECTION64_PATH)";
}

}  // namespace strata::cli
