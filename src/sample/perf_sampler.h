// perf_event sampling of one process's threads, read from memory-mapped ring buffers (no signal and
// no lock in the sampled threads: the kernel writes each sample into the ring of the CPU it ran on).
//
// One event per (thread, CPU) for every thread that exists when sampling starts, with `inherit` and
// `inherit_thread`: threads those create later are sampled from their first instruction, into the
// same per-CPU rings (a per-task event with inherit cannot be memory-mapped, a per-CPU one can; the
// events of one CPU share its ring through PERF_EVENT_IOC_SET_OUTPUT). Forked processes are not
// followed (they sample themselves when their own session starts). Samples are timestamped on
// CLOCK_MONOTONIC, the trace's clock.
//
// Used in-process (libstrata_sample.so, pid = the process itself) and by `strata attach` (another
// process, from the outside).
#pragma once

#include <poll.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "sample/sample_types.h"

namespace strata::sample {

struct PerfConfig {
  int pid = 0;
  std::vector<uint32_t> skip_tids;  // threads not to sample (the recorder's own)
  int hz = 999;
  bool dwarf = false;               // registers + a copy of the user stack instead of the kernel callchain
  uint32_t stack_bytes = 16384;     // copied per sample with dwarf (at most 65528)
  bool wakeup_each_sample = false;  // poll() wakes at every sample (to read Python stacks at once)
  uint64_t sigtrap_tag =
      0;                  // != 0: each task-clock sample also sends SIGTRAP to its thread (python_signal.h)
  size_t ring_pages = 0;  // data pages per CPU ring (power of two; 0: by mode)
  bool hardware_events = true;  // sample cycles/instructions/cache and branch misses too, where a PMU exists
};

class PerfSink {
 public:
  virtual ~PerfSink() = default;
  virtual void on_sample(const RawSample& sample) = 0;
  virtual void on_mmap(uint32_t pid, uint64_t address, uint64_t length, uint64_t pgoff, std::string_view path,
                       std::string_view build_id, int64_t time_ns) = 0;
};

class PerfSampler {
 public:
  PerfSampler() = default;
  ~PerfSampler();
  PerfSampler(const PerfSampler&) = delete;
  PerfSampler& operator=(const PerfSampler&) = delete;

  // Opens and enables the events. False when perf_event is refused (error() says why, errno_value()
  // holds the errno: EACCES/EPERM for permissions or a seccomp filter, ENOSYS, ENOENT ...).
  bool start(const PerfConfig& config);
  // Reads every ring; returns the number of records read.
  size_t read(PerfSink& sink);
  // Descriptors to poll for new data (one per CPU ring).
  const std::vector<pollfd>& poll_fds() const { return poll_fds_; }
  // True once every sampled thread has exited (the rings hang up).
  bool target_gone();
  void stop();
  // Closes the descriptors and unmaps the rings without reading them (a forked child's copy).
  void abandon();

  const std::string& error() const { return error_; }
  int errno_value() const { return errno_; }
  // "perf_event task-clock 999 Hz, frame pointers, user and kernel time" and similar.
  std::string mode() const;
  const std::vector<std::string>& event_names() const { return event_names_; }
  uint64_t period_ns() const { return period_ns_; }
  bool user_only() const { return user_only_; }
  // Why hardware events are absent ("no hardware PMU (cycles: ENOENT)"), or "" when sampled.
  const std::string& pmu_note() const { return pmu_note_; }
  uint64_t lost(int cause) const { return lost_[cause]; }

 private:
  struct Ring {
    int fd = -1;
    void* base = nullptr;
    size_t map_bytes = 0;
    size_t data_bytes = 0;
  };
  bool open_all(const std::vector<uint32_t>& tids, const std::vector<int>& cpus);
  int open_event(int event, uint32_t tid, int cpu);
  void handle(const char* record, size_t size, PerfSink& sink);
  // The records of `r` from its tail up to `head`: only the MMAP2 ones (`mappings`), or all others.
  size_t walk(const Ring& r, uint64_t head, bool mappings, PerfSink& sink);
  void handle_sample(const char* p, const char* end, PerfSink& sink);

  PerfConfig config_;
  std::vector<int> cpus_;
  std::vector<std::vector<uint64_t>> attrs_;  // raw perf_event_attr bytes per event
  std::vector<std::string> event_names_;
  std::vector<int> event_fds_;
  std::vector<Ring> rings_;  // one per CPU
  std::map<int, size_t> ring_of_cpu_;
  std::vector<pollfd> poll_fds_;
  std::map<uint64_t, std::pair<uint32_t, uint32_t>> event_of_id_;  // kernel event id -> (event, root tid)
  std::set<uint32_t> roots_;
  std::set<uint32_t> skip_;
  std::map<uint64_t, int64_t> throttled_since_;
  std::vector<char> scratch_;
  std::vector<uint64_t> heads_;  // read()'s snapshot of the rings' heads
  std::string error_;
  std::string pmu_note_;
  int errno_ = 0;
  uint64_t period_ns_ = 0;
  bool user_only_ = false;
  uint64_t lost_[kLossCount] = {};
};

// Online CPUs ("0-3,6" in /sys/devices/system/cpu/online).
std::vector<int> online_cpus();
// Thread ids of a process (/proc/PID/task).
std::vector<uint32_t> list_threads(int pid);

}  // namespace strata::sample
