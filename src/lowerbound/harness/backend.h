// Running one BenchCase on a backend: setup (primitive creation, memory allocation) is done first and
// never timed; then `repetitions` timed repetitions of `iterations` calls each, the iteration count
// calibrated on warm calls so one repetition lasts at least `min_repetition_ns`.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowerbound/harness/bench_case.h"

namespace strata::lowerbound {

struct MeasureOptions {
  int repetitions = 5;
  int64_t min_repetition_ns = 2'000'000;
  int max_iterations = 1000;
};

struct Measurement {
  double median_ns = 0;  // per call, median over repetitions
  double spread_ns = 0;  // interquartile range over repetitions
  int repetitions = 0;
  int iterations = 0;
  std::vector<double> per_call_ns;  // one value per repetition
};

// Times `call` (already set up). Shared by every backend. The first call is a cold call (first-touch
// pages, JIT-compiled kernels, caches) and is never timed; the iteration count comes from warm calls
// in doubling batches, the fastest batch's per-call time (a batch the scheduler interrupted on a
// shared machine reads slow, so the fastest is the least disturbed).
Measurement measure_calls(const std::function<void()>& call, const MeasureOptions& options);

// Median and interquartile range of per-call times, quantiles interpolated linearly between order
// statistics (q at position q * (n - 1) of the sorted values). Both 0 for no values. Inline: the CUDA
// plugin (a separate shared object) uses it too.
struct RepetitionStats {
  double median_ns = 0;
  double spread_ns = 0;  // third quartile minus first
};
inline RepetitionStats summarize_repetitions(std::vector<double> per_call_ns) {
  std::sort(per_call_ns.begin(), per_call_ns.end());
  auto quantile = [&](double q) {
    if (per_call_ns.empty()) return 0.0;
    double pos = q * static_cast<double>(per_call_ns.size() - 1);
    size_t lo = static_cast<size_t>(pos), hi = std::min(lo + 1, per_call_ns.size() - 1);
    return per_call_ns[lo] + (per_call_ns[hi] - per_call_ns[lo]) * (pos - static_cast<double>(lo));
  };
  return {quantile(0.5), quantile(0.75) - quantile(0.25)};
}

// Calls per repetition for a call of `warm_call_ns`: enough for `min_repetition_ns`, at least 1, at
// most `max_iterations`.
inline int iterations_for(double warm_call_ns, const MeasureOptions& options) {
  const int cap = std::max(1, options.max_iterations);
  if (!(warm_call_ns > 0)) return cap;
  double needed = std::ceil(static_cast<double>(options.min_repetition_ns) / warm_call_ns);
  return static_cast<int>(std::clamp(needed, 1.0, static_cast<double>(cap)));
}

// Sets up and times one case. False with `why` when the backend has no implementation for it.
bool measure_case(const std::string& backend, const BenchCase& c, const MeasureOptions& options,
                  Measurement* out, std::string* implementation, std::string* why);

// System key for the performance database: processor or GPU model, driver and library versions.
// Empty with `why` when the backend cannot run here (e.g. cuda without a device).
std::string system_key(const std::string& backend, std::string* why);

// Compiled-in CUDA backend (cuDNN + cuBLAS); false in a build without the CUDA toolkit.
bool cuda_backend_compiled();
bool cuda_measure_case(const BenchCase& c, const MeasureOptions& options, Measurement* out,
                       std::string* implementation, std::string* why);
std::string cuda_system_key(std::string* why);

}  // namespace strata::lowerbound
