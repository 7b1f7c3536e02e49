// The sampling thread's work, for one sampled process: take samples from the source (perf_event
// rings, or the signal-timer fallback's buffers), unwind them (kernel callchain, or DWARF here),
// read the thread's Python stack and merge it into the native stack at the interpreter's evaluation
// frames, resolve every native frame to (mapping, file offset), intern frames and stacks, and hand
// the result to the writer as SampleBatch. Used in-process (libstrata_sample.so) and by `strata
// attach`; the writer side is SampleStore.
#pragma once

#include <poll.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/properties.h"
#include "sample/mappings.h"
#include "sample/perf_sampler.h"
#include "sample/python_reader.h"
#include "sample/sample_types.h"
#include "sample/timer_sampler.h"
#include "sample/unwinder.h"

namespace strata::sample {

struct CollectorConfig {
  int pid = 0;
  bool in_process = true;        // the fallback needs the sampled threads' signal handlers
  int hz = 999;
  bool dwarf = false;
  uint32_t stack_bytes = 16384;
  bool python = true;            // read CPython 3.11 frames
  std::string root;              // prefix for the process's files (attach to a container)
  std::vector<uint32_t> skip_tids;
  std::string force_fallback;    // "timer" or "itimer": do not try perf_event (tests, STRATA_SAMPLE_MODE)
};

class SampleCollector : public PerfSink {
 public:
  SampleCollector();
  ~SampleCollector() override;

  // Starts perf_event sampling, or in-process the timer fallback when perf_event is refused. False
  // (with *error) when no mode could start.
  bool start(const CollectorConfig& config, std::string* error);
  // Waits up to `timeout_ms` for samples, then processes everything available.
  void poll(int timeout_ms);
  // How long a sampling loop's poll() may wait when no sample comes: the fallback scans for new
  // threads every 10 ms; perf_event needs no scan, and each idle wake-up costs the process CPU.
  int idle_wait_ms() const { return timer_ ? 10 : 200; }
  // Ends a poll() waiting now or later at once (any thread: a stop need not wait idle_wait_ms()).
  void interrupt();
  // Moves out what was processed since the last call (definitions first).
  void take(SampleBatch* out);
  void stop();
  void abandon();  // a forked child's copy: release without reading
  bool target_gone();

  // Facts for the trace's SampleConfig chunk.
  format::Properties config_properties() const;
  std::string mode() const { return mode_; }
  const std::string& python_note() const { return python_note_; }
  uint64_t lost(int cause) const;
  uint64_t samples() const { return samples_; }
  // System calls the Python reader made (process_vm_readv), and the frames it took from data-stack
  // chunks or read one by one (docs/performance.md: the reader's cost per sample).
  uint64_t python_reads() const { return python_ ? python_->reads() : 0; }
  uint64_t python_frames_from_chunks() const { return python_ ? python_->frames_from_chunks() : 0; }
  uint64_t python_frames_read_singly() const { return python_ ? python_->frames_read_singly() : 0; }

  // PerfSink
  void on_sample(const RawSample& sample) override;
  void on_mmap(uint32_t pid, uint64_t address, uint64_t length, uint64_t pgoff, std::string_view path,
               std::string_view build_id, int64_t time_ns) override;

  // For tests and the fuzzer: process one raw sample as if a source delivered it.
  void process_for_testing(const RawSample& sample) { on_sample(sample); }
  MappingTable* mappings() { return mappings_.get(); }
  const std::vector<FrameDef>& all_frames_for_testing() const { return frame_log_; }

 private:
  uint32_t native_frame(uint64_t address, bool leaf);
  uint32_t python_frame(const PyFrameRef& f);
  uint32_t intern_stack(const std::vector<uint32_t>& frames);
  void note_thread(uint32_t tid);

  CollectorConfig config_;
  std::unique_ptr<MappingTable> mappings_;
  std::unique_ptr<Unwinder> unwinder_;
  std::unique_ptr<PythonReader> python_;
  std::unique_ptr<PerfSampler> perf_;
  std::unique_ptr<TimerSampler> timer_;
  int wake_fd_ = -1;
  int interrupt_fd_ = -1;
  std::string mode_;
  std::string python_note_;
  std::string refused_;  // why perf_event was not used
  std::vector<std::string> event_names_;
  uint64_t period_ns_ = 0;

  struct PairHash {
    size_t operator()(const std::pair<uint64_t, uint64_t>& k) const {
      return std::hash<uint64_t>()(k.first * 0x9E3779B97F4A7C15ull ^ k.second);
    }
  };
  struct VecHash {
    size_t operator()(const std::vector<uint32_t>& v) const {
      uint64_t h = 0xcbf29ce484222325ull;
      for (uint32_t x : v) h = (h ^ x) * 0x100000001b3ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, PairHash> native_frames_;
  std::unordered_map<std::pair<uint64_t, uint64_t>, uint32_t, PairHash> python_frames_;
  std::unordered_map<std::vector<uint32_t>, uint32_t, VecHash> stacks_;
  std::vector<std::pair<uint32_t, std::string>> thread_names_;
  std::unordered_map<uint32_t, bool> threads_seen_;
  uint32_t next_frame_ = 1, next_stack_ = 1;
  SampleBatch pending_;
  std::vector<FrameDef> frame_log_;  // tests only (kept when keep_frame_log_)
  bool keep_frame_log_ = false;
  // Scratch for one sample.
  std::vector<uint64_t> ips_;
  std::vector<PyFrameRef> py_;
  std::vector<uint32_t> frames_;
  std::vector<std::pair<size_t, size_t>> segments_;
  std::vector<size_t> eval_at_;
  std::vector<uint32_t> merged_;
  std::vector<pollfd> poll_fds_;
  struct PcSlot {
    uint64_t pc = 0, generation = 0;
    uint32_t frame = 0;
  };
  static constexpr int kPcCacheBits = 12;
  std::vector<PcSlot> pc_cache_ = std::vector<PcSlot>(size_t{1} << kPcCacheBits);
  uint64_t samples_ = 0;
  uint64_t lost_[kLossCount] = {};
  int64_t last_thread_scan_ns_ = 0;
};

}  // namespace strata::sample
