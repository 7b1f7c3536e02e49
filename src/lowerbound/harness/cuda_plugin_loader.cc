// Loads the CUDA backend plugin (libstrata_lowerbound_cuda.so, next to libstrata.so in lib/) on
// first use. Failing to load it is an error message, not a crash: the CPU backend works without it.
#include <dlfcn.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <mutex>

#include "core/env_vars.h"
#include "lowerbound/harness/backend.h"
#include "strata_install_layout.h"

namespace strata::lowerbound {
namespace {

using MeasureFn = bool (*)(const BenchCase*, const MeasureOptions*, Measurement*, std::string*, std::string*);
using SystemKeyFn = void (*)(std::string*, std::string*);

struct Plugin {
  MeasureFn measure = nullptr;
  SystemKeyFn system_key = nullptr;
  std::string error;
};

std::string plugin_path() {
  if (const char* env = std::getenv(strata::env::kLowerboundCudaPlugin); env && *env) return env;
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "libstrata_lowerbound_cuda.so";
  std::string dir(exe, static_cast<size_t>(n));
  dir.resize(dir.find_last_of('/'));
  return dir + "/" STRATA_LIBDIR_FROM_BINDIR "/libstrata_lowerbound_cuda.so";
}

const Plugin& plugin() {
  static Plugin p;
  static std::once_flag once;
  std::call_once(once, [] {
    std::string path = plugin_path();
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* err = dlerror();
      p.error = "cannot load the CUDA backend " + path + ": " + (err ? err : "unknown error") +
                " (build with the CUDA toolkit installed, or set STRATA_LOWERBOUND_CUDA_PLUGIN)";
      return;
    }
    p.measure = reinterpret_cast<MeasureFn>(dlsym(handle, "strata_lowerbound_cuda_measure"));
    p.system_key = reinterpret_cast<SystemKeyFn>(dlsym(handle, "strata_lowerbound_cuda_system_key"));
    if (!p.measure || !p.system_key) p.error = path + ": not a Strata CUDA backend plugin (symbols missing)";
  });
  return p;
}

}  // namespace

bool cuda_backend_compiled() { return plugin().error.empty(); }

bool cuda_measure_case(const BenchCase& c, const MeasureOptions& options, Measurement* out,
                       std::string* implementation, std::string* why) {
  const Plugin& p = plugin();
  if (!p.error.empty()) {
    *why = p.error;
    return false;
  }
  return p.measure(&c, &options, out, implementation, why);
}

std::string cuda_system_key(std::string* why) {
  const Plugin& p = plugin();
  if (!p.error.empty()) {
    *why = p.error;
    return "";
  }
  std::string key;
  p.system_key(&key, why);
  return key;
}

}  // namespace strata::lowerbound
