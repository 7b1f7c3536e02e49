// The sampling thread's work, for one sampled process: take samples from the source (perf_event
// rings, or the signal-timer fallback's buffers), unwind them (kernel callchain, or DWARF here),
// read the thread's Python stack and merge it into the native stack at the interpreter's evaluation
// frames, resolve every native frame to (mapping, file offset), intern frames and stacks, and hand
// the result to the writer as SampleBatch. Used in-process (libstrata_sample.so) and by `strata
// attach`; the writer side is SampleStore.
#pragma once

#include <poll.h>

#include <deque>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/properties.h"
#include "sample/jit_map.h"
#include "sample/mappings.h"
#include "sample/perf_sampler.h"
#include "sample/python_reader.h"
#include "sample/sample_types.h"
#include "sample/timer_sampler.h"
#include "sample/unwinder.h"

namespace strata::sample {

struct CollectorConfig {
  int pid = 0;
  bool in_process = true;  // the fallback needs the sampled threads' signal handlers
  int hz = 999;
  bool dwarf = false;
  uint32_t stack_bytes = 16384;
  bool python = true;  // read CPython 3.11 frames
  std::string root;    // prefix for the process's files (attach to a container)
  std::vector<uint32_t> skip_tids;
  std::string force_fallback;  // "timer" or "itimer": do not try perf_event (tests, STRATA_SAMPLE_MODE)
  // Python stacks read in the sampled thread (perf_event sigtrap, python_signal.h) when possible;
  // false: by the sampling thread, woken at every sample (STRATA_SAMPLE_PYREAD=process).
  bool python_in_thread = true;
};

// Informational counters of the Python stack reads (published as stats "sample.python_*").
struct PythonReadCounters {
  bool available = false;  // a Python whose frames are read
  uint64_t reads = 0;      // process_vm_readv calls of the sampling thread's reader
  uint64_t frames_from_chunks = 0, frames_read_singly = 0, speculative_hits = 0;
  uint64_t code_objects = 0;       // distinct code objects named
  uint64_t codes_freed = 0;        // in-thread frames whose code object was freed before it was named
  uint64_t strings_malformed = 0;  // names refused as not text (the object changed while read)
  uint64_t records = 0;            // handler records written (in-thread)
  uint64_t records_paired = 0;     // samples that took a handler record (+ python_record losses: all samples)
  uint64_t records_unpaired = 0;   // handler records no sample claimed (its sample lost or late)
  uint64_t records_shared = 0;     // paired samples taken in the kernel that share a record
  uint64_t top_frames_popped = 0;  // top frames left out while being popped (in-thread)
  uint64_t truncated = 0;          // stacks deeper than the handler's bound
  uint64_t safe_reads = 0;         // handler reads of a top frame outside the data stack
  uint64_t ring_full = 0, no_ring = 0;         // handler records not written (their samples: python_record)
  uint64_t foreign_traps = 0;                  // SIGTRAPs handed to the program's disposition
  uint64_t deferred = 0;                       // samples that waited for their record
  uint64_t handler_ns = 0, handler_calls = 0;  // the SIGTRAP handler's own time and calls (in-thread)
  uint64_t reader_moved = 0;  // 1: moved out of the sampled threads (the program took SIGTRAP)
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
  // threads every 10 ms; perf_event needs no scan, and each idle wake-up costs the process CPU;
  // in-thread Python reads drain the threads' record rings every 50 ms (a ring holds ~600 ms of a 25-deep
  // stack at 999 Hz; each wake-up cost ~25 us of the sampling thread's CPU on this VM, 20 ms: ~1 us
  // a sample at 999 Hz).
  int idle_wait_ms() const { return timer_ ? 10 : in_thread_ ? 50 : 200; }
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
  // Samples whose native stack was cut at a caller address in no mapping (frame-pointer garbage).
  uint64_t stacks_cut_unmapped() const { return stacks_cut_unmapped_; }
  // Frames in generated code named from the process's perf map (jit_map.h).
  uint64_t jit_frames_named() const { return jit_frames_named_; }
  // Files the process's mappings or perf map name that were refused unopened (core/input_file.h:
  // not regular files, or too large), counted process-wide.
  static uint64_t files_refused();
  // System calls the Python reader made (process_vm_readv), and the frames it took from data-stack
  // chunks or read one by one (docs/performance.md: the reader's cost per sample).
  uint64_t python_reads() const { return python_ ? python_->reads() : 0; }
  uint64_t python_frames_from_chunks() const { return python_ ? python_->frames_from_chunks() : 0; }
  uint64_t python_frames_read_singly() const { return python_ ? python_->frames_read_singly() : 0; }
  PythonReadCounters python_counters() const;
  bool python_in_thread() const { return in_thread_; }
  // Bumped when mode() and config_properties() change after start (a move out of the threads).
  uint64_t config_generation() const { return config_generation_; }

  // PerfSink
  void on_sample(const RawSample& sample) override;
  void on_mmap(uint32_t pid, uint64_t address, uint64_t length, uint64_t pgoff, std::string_view path,
               std::string_view build_id, int64_t time_ns) override;

  // For tests and the fuzzer: process one raw sample as if a source delivered it.
  void process_for_testing(const RawSample& sample) { on_sample(sample); }
  MappingTable* mappings() { return mappings_.get(); }

 private:
  uint32_t native_frame(uint64_t address, bool leaf, bool* unmapped = nullptr);
  // Native frames of a sample into ips_ (n) and frames_; returns the unwinding status.
  UnwindStatus unwind_native(const RawSample& s, uint32_t* n);
  // Merges py_ into frames_ at the interpreter's evaluation frames among ips_[0, n).
  void merge_python(uint32_t n);
  void emit(uint32_t tid, int64_t time_ns, uint32_t event, uint32_t weight, UnwindStatus status, bool merged,
            bool has_regs);
  // In-thread reads: the handler records of every thread, drained; a sample's record.
  struct PyRecord {
    int64_t time_ns = 0;
    uint32_t status = 0;
    bool used = false;
    uint32_t frames = 0;
    std::vector<uint8_t> bytes;  // the record as the handler wrote it (header, frames, strings)
  };
  void drain_records();
  PyRecord* record_for(uint32_t tid, int64_t time_ns, bool in_kernel);
  // Samples whose record may not be drained yet: kept with their native stack for the next poll.
  struct Deferred {
    uint32_t tid = 0, event = 0, weight = 1, n = 0;
    int64_t time_ns = 0;
    UnwindStatus status = UnwindStatus::kComplete;
    bool has_regs = false;
    std::vector<uint64_t> ips;
    std::vector<uint32_t> frames;
  };
  // Finishes a sample whose native part is in ips_/frames_: with its record's Python frames, or
  // deferred (false) when the record may still come.
  bool finish_in_thread(uint32_t tid, int64_t time_ns, uint32_t event, uint32_t weight, UnwindStatus status,
                        uint32_t n, bool has_regs, bool final);
  void retry_deferred(bool final);
  uint32_t python_frame(const PyFrameRef& f);
  // py_ids_[i] = python_frame(py_[i]), in order (the order new frames get their ids in).
  void intern_python_frames();
  // py_ and py_ids_ for a handler record (from the thread's last record when it is the same).
  void resolve_record(uint32_t tid, const PyRecord& record);
  uint32_t intern_stack(const std::vector<uint32_t>& frames);
  void note_thread(uint32_t tid);
  // The program installed its own SIGTRAP handler: reopen the events without sigtrap, read Python
  // stacks here from now on.
  void move_out_of_thread();

  CollectorConfig config_;
  std::unique_ptr<MappingTable> mappings_;
  std::unique_ptr<JitMap> jit_map_;  // names of code in anonymous executable memory
  std::unique_ptr<Unwinder> unwinder_;
  std::unique_ptr<PythonReader> python_;
  std::unique_ptr<PerfSampler> perf_;
  PerfConfig perf_config_;  // what perf_ was started with
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
  // Scratch for one sample.
  std::vector<uint64_t> ips_;
  std::vector<PyFrameRef> py_;
  std::vector<uint32_t> py_ids_;  // py_'s frame ids
  std::vector<uint32_t> frames_;
  std::vector<std::pair<size_t, size_t>> segments_;
  std::vector<size_t> eval_at_;
  std::vector<uint32_t> merged_;
  std::vector<pollfd> poll_fds_;
  struct PcSlot {
    uint64_t pc = 0, generation = 0;
    uint32_t frame = 0;     // kUnmappedCaller: a caller address in no mapping (not interned)
    bool unmapped = false;  // in no mapping
  };
  static constexpr uint32_t kUnmappedCaller = UINT32_MAX;
  static constexpr int kPcCacheBits = 12;
  std::vector<PcSlot> pc_cache_ = std::vector<PcSlot>(size_t{1} << kPcCacheBits);
  uint64_t samples_ = 0;
  uint64_t stacks_cut_unmapped_ = 0;
  uint64_t jit_frames_named_ = 0;
  uint64_t lost_[kLossCount] = {};
  bool in_thread_ = false;
  uint64_t reader_moved_ = 0;
  uint64_t config_generation_ = 0;
  std::string in_thread_refused_;
  std::unordered_map<uint32_t, std::deque<PyRecord>> records_;
  struct PyMemo {  // a thread's last resolved record (resolve_record())
    bool valid = false;
    uint64_t generation = 0;      // the reader's codes_generation() then
    std::vector<uint8_t> frames;  // the record's frames, as the handler wrote them
    std::vector<PyFrameRef> refs;
    std::vector<uint32_t> ids;
  };
  std::unordered_map<uint32_t, PyMemo> py_memo_;
  std::vector<std::vector<uint8_t>> spare_bytes_;  // buffers of used records, reused by drain_records()
  std::vector<Deferred> deferred_, deferred_next_;
  int64_t drained_at_ns_ = 0;
  uint64_t records_shared_ = 0;  // samples in the kernel that took a record another sample took
  uint64_t records_paired_ = 0, records_unpaired_ = 0, top_popped_ = 0, truncated_ = 0, deferred_count_ = 0;
  int64_t last_thread_scan_ns_ = 0;
};

}  // namespace strata::sample
