// The collector's side of in-thread Python reads (python_signal.h): the handler records of every
// thread are drained at each poll (no wake-up per sample: the perf rings are read at their
// watermark or every idle_wait_ms()) and each perf sample takes the first unclaimed record of its
// thread at or after the sample's time, within kMaxRecordDelayNs. The rings of the CPUs are read
// one after the other, so one thread's samples do not arrive in time order: records are kept per
// thread in time order and claimed, not consumed in sequence.
#include <algorithm>

#include "sample/collector.h"

namespace strata::sample {

namespace {
// The handler runs when the thread next returns to user space after the overflow: microseconds,
// unless the thread is preempted in between (a loaded machine: milliseconds).
constexpr int64_t kMaxRecordDelayNs = 20'000'000;
// A sample taken in the kernel waits for the thread's return to user space: as long as the system
// call runs (os.urandom of 8 MiB: ~20-40 ms of kernel CPU), the user stack cannot change meanwhile.
constexpr int64_t kMaxKernelRecordDelayNs = 500'000'000;
// Records no sample claimed are dropped after this (their samples were lost: ring overflow).
constexpr int64_t kRecordKeepNs = 1'000'000'000;
constexpr size_t kMaxRecordsPerThread = 8192;
// Record buffers kept for reuse: more than one poll's records at 999 Hz on a few threads.
constexpr size_t kMaxSpareBuffers = 1024;
}  // namespace

void SampleCollector::drain_records() {
  PySignalRecorder::drain([this](const PySignalRecordHeader& h, const PySignalFrame* frames) {
    std::deque<PyRecord>& list = records_[h.tid];
    PyRecord r;
    r.time_ns = h.time_ns;
    r.status = h.status;
    // The whole record: frames, then the strings the handler copied (python_signal.h), into a
    // buffer of a record already used (a malloc and a free per sample otherwise).
    if (!spare_bytes_.empty()) {
      r.bytes = std::move(spare_bytes_.back());
      spare_bytes_.pop_back();
    }
    const auto* base = reinterpret_cast<const uint8_t*>(frames) - sizeof(PySignalRecordHeader);
    r.bytes.assign(base, base + h.bytes);
    r.frames = h.frames;
    list.push_back(std::move(r));
  });
  for (auto& [tid, list] : records_) {
    // A used record stays while a sample taken in the kernel before it may still come (another
    // CPU's ring, a deferred sample) and share it (record_for).
    const int64_t used_before = drained_at_ns_ - kMaxKernelRecordDelayNs;
    while (!list.empty() &&
           ((list.front().used && list.front().time_ns < used_before) ||
            list.front().time_ns < drained_at_ns_ - kRecordKeepNs || list.size() > kMaxRecordsPerThread)) {
      if (!list.front().used) ++records_unpaired_;
      if (spare_bytes_.size() < kMaxSpareBuffers) spare_bytes_.push_back(std::move(list.front().bytes));
      list.pop_front();
    }
  }
}

SampleCollector::PyRecord* SampleCollector::record_for(uint32_t tid, int64_t time_ns, bool in_kernel) {
  auto it = records_.find(tid);
  if (it == records_.end()) return nullptr;
  std::deque<PyRecord>& list = it->second;
  auto at = std::lower_bound(list.begin(), list.end(), time_ns,
                             [](const PyRecord& r, int64_t t) { return r.time_ns < t; });
  if (in_kernel && at != list.end() && at->time_ns - time_ns <= kMaxKernelRecordDelayNs) {
    // Taken while the thread ran in the kernel: its signal waits for the return to user space, and
    // every sample until then (a long system call: getrandom, page faults of a large allocation, a
    // pipe write) raises the same pending SIGTRAP again, so one handler call answers them all. The
    // thread ran no user code in between: the first record after the sample holds its Python stack
    // whether or not an earlier sample of the same stay in the kernel took it.
    if (at->used) ++records_shared_;
    at->used = true;
    return &*at;
  }
  for (; at != list.end() && at->time_ns - time_ns <= kMaxRecordDelayNs; ++at)
    if (!at->used) {
      at->used = true;
      return &*at;
    }
  return nullptr;
}

bool SampleCollector::finish_in_thread(uint32_t tid, int64_t time_ns, uint32_t event, uint32_t weight,
                                       UnwindStatus status, uint32_t n, bool has_regs, bool final) {
  const bool in_kernel = n > 0 && ips_[0] >= 0xffff800000000000ull;  // the leaf: a kernel address
  PyRecord* record = record_for(tid, time_ns, in_kernel);
  const int64_t window = in_kernel ? kMaxKernelRecordDelayNs : kMaxRecordDelayNs;
  if (record == nullptr && !final && time_ns > drained_at_ns_ - window) {
    // Its record may not be drained yet: wait for the next poll, with the native part done.
    Deferred d;
    d.tid = tid;
    d.event = event;
    d.weight = weight;
    d.n = n;
    d.time_ns = time_ns;
    d.status = status;
    d.has_regs = has_regs;
    d.ips.assign(ips_.begin(), ips_.begin() + n);
    d.frames = frames_;
    deferred_.push_back(std::move(d));
    ++deferred_count_;
    return false;
  }
  bool merged = false;
  if (record == nullptr) {
    ++lost_[kLossPythonRecord];
  } else {
    ++records_paired_;
    if (record->status & kPySignalTopPopped) ++top_popped_;
    if (record->status & kPySignalTruncated) ++truncated_;
    // A code freed before it was named keeps its place as "[code freed before it was named]" (counted
    // as sample.python_codes_freed); a walk that stopped early loses the outer frames.
    resolve_record(tid, *record);
    if (record->status & kPySignalBadFrame) ++lost_[kLossPythonStack];
    if (!py_.empty()) {
      merge_python(n);
      merged = true;
    }
  }
  emit(tid, time_ns, event, weight, status, merged, has_regs);
  return true;
}

// Consecutive samples of a thread mostly share their Python stack (the interpreter waits in one
// operator while its native leaf moves): a record whose frames are byte for byte the thread's last
// resolved record's takes that record's frames and frame ids, skipping the per-frame code and line
// lookups and the frame interning. Only records whose every code came from the reader's cache are
// kept (no string copies, no freed code), and only while that cache has dropped no code since.
void SampleCollector::resolve_record(uint32_t tid, const PyRecord& record) {
  const size_t header = sizeof(PySignalRecordHeader);
  const size_t frame_bytes =
      record.bytes.size() < header
          ? 0
          : std::min<size_t>(record.bytes.size() - header, size_t{record.frames} * sizeof(PySignalFrame));
  const uint8_t* frames = record.bytes.data() + (record.bytes.size() < header ? 0 : header);
  PyMemo& memo = py_memo_[tid];
  if (memo.valid && memo.generation == python_->codes_generation() && memo.frames.size() == frame_bytes &&
      std::equal(memo.frames.begin(), memo.frames.end(), frames)) {
    py_ = memo.refs;
    py_ids_ = memo.ids;
    return;
  }
  python_->resolve_signal_frames(record.bytes.data(), record.bytes.size(), &py_);
  intern_python_frames();
  memo.valid = python_->last_resolve_all_cached();
  if (memo.valid) {
    memo.generation = python_->codes_generation();
    memo.frames.assign(frames, frames + frame_bytes);
    memo.refs = py_;
    memo.ids = py_ids_;
  }
}

void SampleCollector::retry_deferred(bool final) {
  if (deferred_.empty()) return;
  std::swap(deferred_, deferred_next_);
  deferred_.clear();
  for (Deferred& d : deferred_next_) {
    std::copy(d.ips.begin(), d.ips.end(), ips_.begin());
    frames_ = d.frames;
    finish_in_thread(d.tid, d.time_ns, d.event, d.weight, d.status, d.n, d.has_regs, final);
  }
  deferred_next_.clear();
}

PythonReadCounters SampleCollector::python_counters() const {
  PythonReadCounters c;
  if (!python_) return c;
  c.available = true;
  c.reads = python_->reads();
  c.frames_from_chunks = python_->frames_from_chunks();
  c.frames_read_singly = python_->frames_read_singly();
  c.speculative_hits = python_->speculative_hits();
  c.code_objects = python_->code_objects_read();
  c.codes_freed = python_->codes_freed();
  c.strings_malformed = python_->strings_malformed();
  if (in_thread_ || reader_moved_ != 0) {  // after a move: the handler's counts up to it, and the
    const PySignalCounters s = PySignalRecorder::counters();  // program's SIGTRAPs it forwarded since
    c.records = s.records;
    c.safe_reads = s.safe_reads;
    c.foreign_traps = s.foreign_traps;
    c.ring_full = s.buffer_full;
    c.no_ring = s.no_buffer;
    c.handler_ns = s.handler_ns;
    c.handler_calls = s.handler_calls;
  }
  c.records_unpaired = records_unpaired_;
  c.records_paired = records_paired_;
  c.records_shared = records_shared_;
  c.top_frames_popped = top_popped_;
  c.truncated = truncated_;
  c.deferred = deferred_count_;
  c.reader_moved = reader_moved_;
  return c;
}

}  // namespace strata::sample
