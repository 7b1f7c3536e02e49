// The fallback when perf_event is refused (permissions, a seccomp filter, a container): a CPU-time
// timer per thread (timer_create on the thread's CPU clock, signal directed to that thread), whose
// handler copies the registers and the top of the stack into the thread's own lock-free buffer
// (single producer: the thread; single consumer: the sampling thread, which unwinds). If
// timer_create is refused too, setitimer(ITIMER_PROF): one process-wide CPU-time timer, the
// signal landing on whichever thread is running. Either way the kernel checks CPU-time timers at
// its tick (HZ, 250 here), so a thread gets at most HZ samples per second; a sample stands for
// every period that elapsed (1 + the timer's overrun count) so counts stay proportional to CPU time.
// In-process only.
#pragma once

#include <signal.h>
#include <time.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "sample/sample_types.h"

namespace strata::sample {

struct TimerConfig {
  int hz = 999;
  uint32_t stack_bytes = 16384;  // copied per sample (frame-pointer walk or DWARF unwinding here)
  bool force_itimer = false;     // tests: skip timer_create
  int wake_fd = -1;              // an eventfd the handler writes to after each sample (or -1)
  std::vector<uint32_t> skip_tids;
};

class TimerSampler {
 public:
  TimerSampler() = default;
  ~TimerSampler();
  bool start(const TimerConfig& config);
  // New threads get a buffer (and a timer); timers of threads that exited are deleted.
  void scan_threads();
  // Hands every buffered sample to `sink` (oldest first per thread).
  size_t read(const std::function<void(const RawSample&)>& sink);
  void stop();
  const std::string& error() const { return error_; }
  std::string mode() const;
  uint64_t lost(int cause) const;
  uint64_t period_ns() const { return period_ns_; }

  struct ThreadBuffer;

 private:
  bool add_thread(uint32_t tid);
  TimerConfig config_;
  uint64_t period_ns_ = 0;
  bool itimer_ = false;
  bool started_ = false;
  int signal_ = 0;
  struct sigaction previous_ {};
  std::set<uint32_t> skip_;
  std::map<uint32_t, timer_t> timers_;
  std::vector<uint8_t> scratch_;
  std::string error_;
};

}  // namespace strata::sample
