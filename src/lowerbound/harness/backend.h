// Running one BenchCase on a backend: setup (primitive creation, memory allocation) is done first and
// never timed; then the call is timed as measure.h describes (CPU) or with CUDA events (plugin).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lowerbound/harness/bench_case.h"
#include "lowerbound/harness/measure.h"

namespace strata::lowerbound {

// Sets up and times one case. False with `why` when the backend has no implementation for it.
bool measure_case(const std::string& backend, const BenchCase& c, const MeasureOptions& options,
                  Measurement* out, std::string* implementation, std::string* why);

// System key for the performance database: processor or GPU model, driver and library versions, and
// on the CPU the library thread count the rows were measured with ("omp_threads=N"). Empty with `why`
// when the backend cannot run here (e.g. cuda without a device).
std::string system_key(const std::string& backend, int threads, std::string* why);

// Compiled-in CUDA backend (cuDNN + cuBLAS); false in a build without the CUDA toolkit.
bool cuda_backend_compiled();
bool cuda_measure_case(const BenchCase& c, const MeasureOptions& options, Measurement* out,
                       std::string* implementation, std::string* why);
std::string cuda_system_key(std::string* why);

}  // namespace strata::lowerbound
