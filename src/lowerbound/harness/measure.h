// Timing one prepared call, robust to a shared, loaded machine (issue 12.2). Setup is never timed;
// the first call is a cold call and is not timed either; the iteration count per repetition is
// calibrated on warm calls so a repetition lasts at least `min_repetition_ns`. Then repetitions run
// until `repetitions` usable ones are collected:
//  - one library thread (the framework's default on this machine): each repetition is timed by the
//    calling thread's CPU clock, which does not advance while the thread waits for a CPU, so time
//    other processes take is not counted; every repetition is usable;
//  - several threads: by the wall clock, and a repetition during which any thread of this process
//    was preempted (an involuntary context switch, getrusage) is discarded: a parallel call waits at
//    its barrier for a descheduled thread, which is how a 5 us ReLU read as 8 ms.
// The estimate is the median of the usable repetitions with their interquartile range; it is stable
// when enough repetitions were usable and the range is within `max_spread` of the median. An
// unstable measurement is re-measured by the caller (bench_runner) or not stored.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace strata::lowerbound {

struct MeasureOptions {
  int repetitions = 10;  // usable repetitions wanted (an interquartile range of fewer is itself noisy)
  int64_t min_repetition_ns = 2'000'000;
  int max_iterations = 1000;
  int threads = 1;           // library threads (OpenMP): the framework run's count
  double max_spread = 0.10;  // interquartile range / median above this: unstable
  int attempts = 3;          // measurements of a case before it is given up (bench_runner)
  // Repetitions run to collect `repetitions` usable ones; 0: 6 x repetitions.
  int max_repetitions = 0;
};

struct Measurement {
  double median_ns = 0;             // per call, median over the usable repetitions
  double spread_ns = 0;             // interquartile range over them
  int repetitions = 0;              // usable repetitions
  int iterations = 0;               // calls per repetition
  std::vector<double> per_call_ns;  // one value per usable repetition
  // Quality.
  std::string timer;           // thread_cpu, wall, cuda_graph, cuda_events
  int runs = 0;                // repetitions run (usable + discarded)
  int disturbed = 0;           // repetitions during which a thread of this process was preempted
  double relative_spread = 0;  // spread / median
  bool stable = false;         // enough usable repetitions, spread within max_spread
  std::string why_unstable;    // when not stable, one line: what was seen
};

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

// Fills median, spread, repetitions, relative_spread, stable and why_unstable from per_call_ns.
// Inline: the CUDA plugin uses it too.
inline void assess(Measurement* m, const MeasureOptions& options) {
  RepetitionStats s = summarize_repetitions(m->per_call_ns);
  m->median_ns = s.median_ns;
  m->spread_ns = s.spread_ns;
  m->repetitions = static_cast<int>(m->per_call_ns.size());
  m->relative_spread = s.median_ns > 0 ? s.spread_ns / s.median_ns : 0;
  const int wanted = std::max(1, options.repetitions);
  auto percent = [](double f) { return std::to_string(static_cast<int>(std::lround(f * 100))) + "%"; };
  if (m->repetitions < wanted) {
    m->stable = false;
    m->why_unstable = std::to_string(m->repetitions) + " of " + std::to_string(wanted) +
                      " repetitions undisturbed (" + std::to_string(m->disturbed) + " preempted)";
  } else if (!(s.median_ns > 0)) {
    m->stable = false;
    m->why_unstable = "median is 0";
  } else if (m->relative_spread > options.max_spread) {
    m->stable = false;
    m->why_unstable = "spread " + percent(m->relative_spread) + " of the median (limit " +
                      percent(options.max_spread) + ")";
  } else {
    m->stable = true;
    m->why_unstable.clear();
  }
}

// Calls per repetition for a call of `warm_call_ns`: enough for `min_repetition_ns`, at least 1, at
// most `max_iterations`.
inline int iterations_for(double warm_call_ns, const MeasureOptions& options) {
  const int cap = std::max(1, options.max_iterations);
  if (!(warm_call_ns > 0)) return cap;
  double needed = std::ceil(static_cast<double>(options.min_repetition_ns) / warm_call_ns);
  return static_cast<int>(std::clamp(needed, 1.0, static_cast<double>(cap)));
}

// Times `call` (already set up) as described above. Shared by every CPU backend.
Measurement measure_calls(const std::function<void()>& call, const MeasureOptions& options);

// The library thread count when neither --threads nor the framework's is known: $OMP_NUM_THREADS
// (its first number) when set, else 1 (Debian's PyTorch here: torch.get_num_threads() == 1).
int default_threads();

// Sets the OpenMP thread count oneDNN runs with (this thread's and its parallel regions'); false with
// `why` when oneDNN here does not use OpenMP, so the count cannot be controlled.
bool set_library_threads(int threads, std::string* why);

// What else runs on the machine: the 1-minute load average and the cores, for the notes and the rows.
struct MachineLoad {
  double load_avg = -1;  // /proc/loadavg, -1 when unreadable
  int cores = 0;
  int runnable = -1;  // runnable tasks now (procs_running in /proc/stat), this one included
  std::string text() const;
};
MachineLoad machine_load();

}  // namespace strata::lowerbound
