#include "lowerbound/harness/measure.h"

#include <omp.h>
#include <sys/resource.h>
#include <time.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <dnnl.hpp>
#include <fstream>
#include <thread>

namespace strata::lowerbound {
namespace {

int64_t wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int64_t thread_cpu_ns() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Involuntary context switches of every thread of this process so far.
long preemptions() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_nivcsw;
}

// Calls per repetition from warm calls: batches of 1, 2, 4, ... calls (doubling while a batch lasts
// under a quarter of a repetition), at least two batches and half a repetition in all; the fastest
// batch's per-call time (a batch the scheduler interrupted reads slow).
int calibrate(const std::function<void()>& call, const MeasureOptions& options) {
  const int cap = std::max(1, options.max_iterations);
  double fastest = 0;
  int64_t calibration_ns = 0;
  int batch = 1, batches = 0;
  while (batches < 2 || calibration_ns * 2 < options.min_repetition_ns) {
    int64_t start = wall_ns();
    for (int i = 0; i < batch; ++i) call();
    int64_t elapsed = std::max<int64_t>(1, wall_ns() - start);
    double per_call = static_cast<double>(elapsed) / batch;
    if (batches == 0 || per_call < fastest) fastest = per_call;
    calibration_ns += elapsed;
    ++batches;
    if (batch >= cap) break;  // the cap decides the iteration count anyway
    if (elapsed * 4 < options.min_repetition_ns) batch = std::min(batch * 2, cap);
  }
  return iterations_for(fastest, options);
}

}  // namespace

Measurement measure_calls(const std::function<void()>& call, const MeasureOptions& options) {
  Measurement m;
  call();  // cold call: first-touch pages, JIT caches; its time says nothing about the warm calls
  m.iterations = calibrate(call, options);
  const bool one_thread = options.threads <= 1;
  m.timer = one_thread ? "thread_cpu" : "wall";
  const int wanted = std::max(1, options.repetitions);
  const int budget = options.max_repetitions > 0 ? options.max_repetitions : 6 * wanted;
  for (int r = 0; r < budget && static_cast<int>(m.per_call_ns.size()) < wanted; ++r) {
    const long switches = preemptions();
    const int64_t wall0 = wall_ns(), cpu0 = thread_cpu_ns();
    for (int i = 0; i < m.iterations; ++i) call();
    const int64_t cpu = thread_cpu_ns() - cpu0, wall = wall_ns() - wall0;
    const bool disturbed = preemptions() != switches;
    ++m.runs;
    m.disturbed += disturbed;
    if (one_thread)
      m.per_call_ns.push_back(static_cast<double>(cpu) / m.iterations);
    else if (!disturbed)
      m.per_call_ns.push_back(static_cast<double>(wall) / m.iterations);
  }
  assess(&m, options);
  return m;
}

int default_threads() {
  const char* env = std::getenv("OMP_NUM_THREADS");
  if (env && *env) {
    int n = std::atoi(env);  // "4" or "4,2" (nested levels): the first
    if (n > 0) return n;
  }
  return 1;
}

bool set_library_threads(int threads, std::string* why) {
  const dnnl_version_t* v = dnnl_version();
  if (v->cpu_runtime != DNNL_RUNTIME_OMP) {
    *why = "oneDNN here does not use OpenMP (cpu_runtime " + std::to_string(v->cpu_runtime) +
           "): the benchmark's thread count cannot be set";
    return false;
  }
  omp_set_num_threads(std::max(1, threads));
  return true;
}

std::string MachineLoad::text() const {
  char buf[160];
  std::snprintf(buf, sizeof buf, "load average %.2f on %d cores, %d runnable tasks", load_avg, cores,
                runnable);
  return buf;
}

MachineLoad machine_load() {
  MachineLoad l;
  l.cores = static_cast<int>(std::thread::hardware_concurrency());
  std::ifstream avg("/proc/loadavg");
  if (!(avg >> l.load_avg)) l.load_avg = -1;
  std::ifstream stat("/proc/stat");
  std::string key;
  while (stat >> key) {
    if (key == "procs_running") {
      stat >> l.runnable;
      break;
    }
    stat.ignore(1 << 20, '\n');
  }
  return l;
}

}  // namespace strata::lowerbound
