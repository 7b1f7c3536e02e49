#include "lowerbound/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dnnl.hpp>
#include <fstream>
#include <thread>

#include "lowerbound/onednn_ops.h"

namespace strata::lowerbound {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double quantile(std::vector<double> sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(pos);
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - static_cast<double>(lo));
}

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

Measurement measure_calls(const std::function<void()>& call, const MeasureOptions& options) {
  Measurement m;
  int64_t t0 = now_ns();
  call();  // warm-up: first-touch pages, JIT caches
  int64_t once = std::max<int64_t>(1, now_ns() - t0);
  m.iterations =
      static_cast<int>(std::clamp<int64_t>(options.min_repetition_ns / once, 1, options.max_iterations));
  for (int r = 0; r < options.repetitions; ++r) {
    int64_t start = now_ns();
    for (int i = 0; i < m.iterations; ++i) call();
    m.per_call_ns.push_back(static_cast<double>(now_ns() - start) / m.iterations);
  }
  std::vector<double> sorted = m.per_call_ns;
  std::sort(sorted.begin(), sorted.end());
  m.repetitions = options.repetitions;
  m.median_ns = quantile(sorted, 0.5);
  m.spread_ns = quantile(sorted, 0.75) - quantile(sorted, 0.25);
  return m;
}

bool measure_case(const std::string& backend, const BenchCase& c, const MeasureOptions& options,
                  Measurement* out, std::string* implementation, std::string* why) {
  if (backend == "cuda") return cuda_measure_case(c, options, out, implementation, why);
  onednn::Prepared prepared;
  if (!onednn::prepare(c, &prepared, why)) return false;
  *implementation = prepared.implementation;
  *out = measure_calls([&] { prepared.run(); }, options);
  return true;
}

std::string system_key(const std::string& backend, std::string* why) {
  if (backend == "cuda") return cuda_system_key(why);
  const dnnl_version_t* v = dnnl_version();
  const char* omp = std::getenv("OMP_NUM_THREADS");
  return "cpu=" + cpu_model() + "|cores=" + std::to_string(std::thread::hardware_concurrency()) +
         "|omp_threads=" + (omp && *omp ? std::string(omp) : std::string("default")) +
         "|onednn=" + std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
         std::to_string(v->patch);
}

}  // namespace strata::lowerbound
