#include "lowerbound/harness/backend.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <dnnl.hpp>
#include <fstream>
#include <thread>

#include "lowerbound/harness/onednn_ops.h"

namespace strata::lowerbound {
namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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
  call();  // cold call: first-touch pages, JIT caches; its time says nothing about the warm calls
  // Calibration: batches of 1, 2, 4, ... warm calls (doubling while a batch lasts under a quarter of a
  // repetition), at least two batches and half a repetition in all.
  const int cap = std::max(1, options.max_iterations);
  double fastest = 0;
  int64_t calibration_ns = 0;
  int batch = 1, batches = 0;
  while (batches < 2 || calibration_ns * 2 < options.min_repetition_ns) {
    int64_t start = now_ns();
    for (int i = 0; i < batch; ++i) call();
    int64_t elapsed = std::max<int64_t>(1, now_ns() - start);
    double per_call = static_cast<double>(elapsed) / batch;
    if (batches == 0 || per_call < fastest) fastest = per_call;
    calibration_ns += elapsed;
    ++batches;
    if (batch >= cap) break;  // the cap decides the iteration count anyway
    if (elapsed * 4 < options.min_repetition_ns) batch = std::min(batch * 2, cap);
  }
  m.iterations = iterations_for(fastest, options);
  for (int r = 0; r < options.repetitions; ++r) {
    int64_t start = now_ns();
    for (int i = 0; i < m.iterations; ++i) call();
    m.per_call_ns.push_back(static_cast<double>(now_ns() - start) / m.iterations);
  }
  RepetitionStats stats = summarize_repetitions(m.per_call_ns);
  m.repetitions = options.repetitions;
  m.median_ns = stats.median_ns;
  m.spread_ns = stats.spread_ns;
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
