// Running one BenchCase on a backend: setup (primitive creation, memory allocation) is done first and
// never timed; then `repetitions` timed repetitions of `iterations` calls each, the iteration count
// calibrated so one repetition lasts at least `min_repetition_ns`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowerbound/bench_case.h"

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

// Times `call` (already set up). Shared by every backend.
Measurement measure_calls(const std::function<void()>& call, const MeasureOptions& options);

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
