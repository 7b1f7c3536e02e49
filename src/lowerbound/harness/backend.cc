#include "lowerbound/harness/backend.h"

#include <algorithm>
#include <cstdlib>
#include <dnnl.hpp>
#include <fstream>
#include <thread>

#include "lowerbound/harness/onednn_ops.h"

namespace strata::lowerbound {
namespace {

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown-cpu";
}

}  // namespace

bool measure_case(const std::string& backend, const BenchCase& c, const MeasureOptions& options,
                  Measurement* out, std::string* implementation, std::string* why) {
  if (backend == "cuda") return cuda_measure_case(c, options, out, implementation, why);
  std::string no_control;  // run_benchmarks checked the runtime once and stops when it cannot be set
  set_library_threads(options.threads, &no_control);
  onednn::Prepared prepared;
  if (!onednn::prepare(c, &prepared, why)) return false;
  *implementation = prepared.implementation;
  *out = measure_calls([&] { prepared.run(); }, options);
  return true;
}

std::string system_key(const std::string& backend, int threads, std::string* why) {
  if (backend == "cuda") return cuda_system_key(why);
  const dnnl_version_t* v = dnnl_version();
  return "cpu=" + cpu_model() + "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|omp_threads=" + std::to_string(std::max(1, threads)) + "|onednn=" + std::to_string(v->major) +
         "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
}

}  // namespace strata::lowerbound
