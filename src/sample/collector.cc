#include "sample/collector.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/input_file.h"

namespace strata::sample {

const char* loss_name(int cause) {
  static constexpr const char* kNames[kLossCount] = {
      "ring_overflow",    "throttled",    "unwind_failed", "eviction_overflow", "signal_buffer_full",
      "no_thread_buffer", "python_stack", "bad_record",    "python_record",
  };
  return cause >= 0 && cause < kLossCount ? kNames[cause] : "unknown";
}

SampleCollector::SampleCollector() = default;

uint64_t SampleCollector::files_refused() { return core::named_file_refusals().count; }

SampleCollector::~SampleCollector() {
  stop();
  if (wake_fd_ >= 0) close(wake_fd_);
  if (interrupt_fd_ >= 0) close(interrupt_fd_);
}

void SampleCollector::interrupt() {
  const uint64_t one = 1;
  if (interrupt_fd_ >= 0 && write(interrupt_fd_, &one, sizeof(one)) < 0) return;  // already signalled
}

bool SampleCollector::start(const CollectorConfig& config, std::string* error) {
  config_ = config;
  if (interrupt_fd_ < 0) interrupt_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  mappings_ = std::make_unique<MappingTable>(config_.pid, config_.root);
  std::string maps_error;
  if (!mappings_->load_proc_maps(&maps_error)) {
    *error = maps_error;
    return false;
  }
  unwinder_ = std::make_unique<Unwinder>(mappings_.get());
  jit_map_ = std::make_unique<JitMap>(JitMap::perf_map_path(config_.pid));
  if (config_.python) {
    python_ = PythonReader::find(*mappings_, &python_note_);
    if (python_) python_note_ = "CPython " + python_->version() + ": Python frames read from the process";
  } else {
    python_note_ = "Python frames not requested";
  }
  ips_.resize(kMaxNativeFrames + 1);
  // A PyTorch run at 999 Hz makes ~2 new native frames and ~0.8 new stacks a sample (distinct leaf
  // addresses in JIT kernels, garbage return addresses): start large rather than rehash repeatedly.
  native_frames_.reserve(size_t{1} << 14);
  stacks_.reserve(size_t{1} << 13);

  if (config_.force_fallback.empty()) {
    perf_ = std::make_unique<PerfSampler>();
    PerfConfig pc;
    pc.pid = config_.pid;
    pc.skip_tids = config_.skip_tids;
    pc.hz = config_.hz;
    pc.dwarf = config_.dwarf;
    pc.stack_bytes = config_.stack_bytes;
    // A Python stack must be read while it matches its sample: in the sampled thread itself
    // (SIGTRAP at each sample), or else by the sampling thread woken at every sample.
    std::string why_not;
    if (python_ != nullptr && config_.in_process && config_.python_in_thread) {
      in_thread_ =
          PySignalRecorder::start(python_->runtime_address(), python_->code_type_address(), &why_not);
    } else if (python_ != nullptr) {
      why_not = config_.in_process ? "not requested (STRATA_SAMPLE_PYREAD=process)" : "attached from outside";
    }
    pc.sigtrap_tag = in_thread_ ? PySignalRecorder::tag() : 0;
    pc.wakeup_each_sample = python_ != nullptr && !in_thread_;
    perf_config_ = pc;
    bool started = perf_->start(pc);
    if (!started && in_thread_) {  // sigtrap refused (a kernel before 5.13): read from outside instead
      why_not = perf_->error();
      PySignalRecorder::stop();
      in_thread_ = false;
      perf_ = std::make_unique<PerfSampler>();
      pc.sigtrap_tag = 0;
      pc.wakeup_each_sample = true;
      perf_config_ = pc;
      started = perf_->start(pc);
    }
    if (python_ != nullptr)
      python_note_ +=
          in_thread_ ? ", in the sampled thread (perf_event SIGTRAP at each sample)"
                     : ", by the sampling thread woken at each sample (in-thread reads: " + why_not + ")";
    if (started) {
      // Mappings made between the first read and the start have no MMAP2 record: read once more;
      // from now on the records report every executable mapping (until a ring overflows).
      std::string reread_error;
      if (mappings_->load_proc_maps(&reread_error)) mappings_->set_complete_by_records(true);
      mode_ = perf_->mode();
      if (python_ != nullptr)
        mode_ += in_thread_ ? ", Python stacks read in the sampled thread (SIGTRAP)"
                            : ", Python stacks read by the sampling thread (woken at each sample)";
      event_names_ = perf_->event_names();
      period_ns_ = perf_->period_ns();
      return true;
    }
    in_thread_ = false;
    refused_ = perf_->error();
    perf_.reset();
    if (!config_.in_process) {
      *error = refused_ + "; attaching needs perf_event (run as root, or lower kernel.perf_event_paranoid)";
      return false;
    }
  } else {
    refused_ = "perf_event not tried (STRATA_SAMPLE_MODE=" + config_.force_fallback + ")";
  }
  // In-process fallback: CPU-time timers and a signal handler.
  wake_fd_ = python_ != nullptr ? eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC) : -1;
  timer_ = std::make_unique<TimerSampler>();
  TimerConfig tc;
  tc.hz = config_.hz;
  tc.stack_bytes = config_.stack_bytes;
  tc.force_itimer = config_.force_fallback == "itimer";
  tc.wake_fd = wake_fd_;
  tc.skip_tids = config_.skip_tids;
  if (!timer_->start(tc)) {
    *error = refused_ + "; fallback: " + timer_->error();
    timer_.reset();
    return false;
  }
  mode_ = timer_->mode() + " [" + refused_ + "]";
  event_names_ = {"cpu-time"};
  period_ns_ = timer_->period_ns();
  last_thread_scan_ns_ = monotonic_now_ns();
  return true;
}

void SampleCollector::poll(int timeout_ms) {
  // Woken at each sample of a Python process: no allocation on this path (poll_fds_ is reused).
  poll_fds_.clear();
  if (perf_) poll_fds_.assign(perf_->poll_fds().begin(), perf_->poll_fds().end());
  if (wake_fd_ >= 0) poll_fds_.push_back({wake_fd_, POLLIN, 0});
  if (interrupt_fd_ >= 0) poll_fds_.push_back({interrupt_fd_, POLLIN, 0});  // left signalled: stopping
  if (timeout_ms > 0) {
    if (poll_fds_.empty())
      usleep(static_cast<useconds_t>(timeout_ms) * 1000);
    else
      ::poll(poll_fds_.data(), poll_fds_.size(), timeout_ms);
  }
  if (wake_fd_ >= 0) {
    uint64_t drained = 0;
    ssize_t ignored = read(wake_fd_, &drained, sizeof(drained));
    (void)ignored;
  }
  if (in_thread_ && PySignalRecorder::program_took_sigtrap()) move_out_of_thread();
  if (in_thread_) {
    drained_at_ns_ = monotonic_now_ns();
    drain_records();
    retry_deferred(false);
  }
  if (perf_) {
    perf_->read(*this);
    // Records lost: an MMAP2 among them would leave its mapping unknown; misses re-read the maps.
    if (perf_->lost(kLossRingOverflow) > 0) mappings_->set_complete_by_records(false);
  }
  if (timer_) {
    const int64_t now = monotonic_now_ns();
    if (now - last_thread_scan_ns_ >= 10'000'000) {  // threads created since: their timers
      timer_->scan_threads();
      last_thread_scan_ns_ = now;
    }
    timer_->read([this](const RawSample& s) { on_sample(s); });
  }
}

void SampleCollector::move_out_of_thread() {
  // The samples so far pair with their records (those without one are counted as python_record).
  drained_at_ns_ = monotonic_now_ns();
  drain_records();
  perf_->read(*this);
  drain_records();
  retry_deferred(true);
  PySignalRecorder::stop();
  perf_->stop();
  for (int c = 0; c < kLossCount; ++c) lost_[c] += perf_->lost(c);
  in_thread_ = false;
  reader_moved_ = 1;
  ++config_generation_;
  perf_config_.sigtrap_tag = 0;
  perf_config_.wakeup_each_sample = true;
  perf_ = std::make_unique<PerfSampler>();
  if (!perf_->start(perf_config_)) {
    mode_ =
        "stopped: the program installed its own SIGTRAP handler and perf_event refused the events "
        "without sigtrap: " +
        perf_->error();
    perf_.reset();
    return;
  }
  std::string maps_error;  // mappings made while no event was open have no MMAP2 record
  mappings_->set_complete_by_records(mappings_->load_proc_maps(&maps_error));
  const std::string why = " (moved there: the program installed its own SIGTRAP handler)";
  mode_ = perf_->mode() + ", Python stacks read by the sampling thread (woken at each sample)" + why;
  python_note_ = "CPython " + python_->version() +
                 ": Python frames read from the process, by the sampling "
                 "thread woken at each sample" +
                 why;
}

void SampleCollector::take(SampleBatch* out) {
  mappings_->take_new(&pending_.mappings);
  std::swap(*out, pending_);
  pending_.clear();
}

void SampleCollector::stop() {
  if (perf_) perf_->stop();
  if (timer_) timer_->stop();
  if (in_thread_) {
    PySignalRecorder::stop();
    drained_at_ns_ = monotonic_now_ns();
    drain_records();
    retry_deferred(true);
  }
}

void SampleCollector::abandon() {
  if (perf_) perf_->abandon();
  perf_.reset();
  // The fallback's timers were the parent's (timer_create timers are not inherited by fork).
  timer_.release();  // NOLINT: its state belongs to the parent; leave it untouched
}

bool SampleCollector::target_gone() { return perf_ ? perf_->target_gone() : false; }

uint64_t SampleCollector::lost(int cause) const {
  uint64_t n = lost_[cause];
  if (perf_) n += perf_->lost(cause);
  if (timer_) n += timer_->lost(cause);
  return n;
}

format::Properties SampleCollector::config_properties() const {
  format::Properties p;
  p.set("mode", mode_);
  p.set("source", perf_ ? "perf_event" : "timer");
  p.set_int("hz", config_.hz);
  p.set_int("period_ns", static_cast<int64_t>(period_ns_));
  p.set("unwind", config_.dwarf ? "dwarf" : "fp");
  if (config_.dwarf) p.set_int("stack_bytes", config_.stack_bytes);
  std::string events;
  for (size_t i = 0; i < event_names_.size(); ++i) events += (i ? "," : "") + event_names_[i];
  p.set("events", events);
  p.set("python", python_note_);
  if (perf_) {
    p.set("pmu", perf_->pmu_note().empty() ? "hardware events sampled" : perf_->pmu_note());
    p.set("kernel", perf_->user_only() ? "user space only" : "user and kernel");
  } else {
    p.set("pmu", "not available in the fallback mode");
    p.set("perf_event_refused", refused_);
  }
  p.set_int("pid", config_.pid);
  return p;
}

void SampleCollector::note_thread(uint32_t tid) {
  if (threads_seen_.emplace(tid, true).second) {
    std::ifstream comm("/proc/" + std::to_string(config_.pid) + "/task/" + std::to_string(tid) + "/comm");
    std::string name;
    std::getline(comm, name);
    if (!name.empty()) pending_.thread_names.emplace_back(tid, name);
  }
}

uint32_t SampleCollector::native_frame(uint64_t address, bool leaf, bool* unmapped) {
  // Callers are return addresses: one byte back lands inside the call instruction.
  const uint64_t pc = leaf || address == 0 ? address : address - 1;
  if (pc >= 0xffff800000000000ull) {
    auto [it, inserted] = native_frames_.try_emplace({UINT64_MAX, pc}, 0);
    if (inserted) {
      it->second = next_frame_++;
      FrameDef d;
      d.frame.id = it->second;
      d.frame.kind = format::SampleFrameKind::kKernel;
      d.frame.offset = pc;
      pending_.frames.push_back(d);
    }
    return it->second;
  }
  // A direct-mapped cache of recent program counters: a deep native stack repeats the same frames
  // sample after sample. Valid while the mapping layout is unchanged.
  PcSlot& slot = pc_cache_[(pc * 0x9E3779B97F4A7C15ull) >> (64 - kPcCacheBits)];
  if (slot.frame != 0 && slot.pc == pc && slot.generation == mappings_->generation() &&
      !(leaf && slot.frame == kUnmappedCaller)) {
    if (unmapped != nullptr) *unmapped = slot.unmapped;
    return slot.frame;
  }
  const Mapping* m = mappings_->find(pc, leaf);
  if (unmapped != nullptr) *unmapped = m == nullptr;
  if (m == nullptr && !leaf && unmapped != nullptr) {  // the caller cuts the stack here: no frame
    slot = {pc, mappings_->generation(), kUnmappedCaller, true};
    return kUnmappedCaller;
  }
  const uint64_t mapping = m != nullptr ? m->id : 0;
  const uint64_t offset = m != nullptr ? pc - m->start + m->pgoff : pc;
  auto [it, inserted] = native_frames_.try_emplace({mapping, offset}, 0);
  if (inserted) {
    it->second = next_frame_++;
    FrameDef d;
    d.frame.id = it->second;
    d.frame.kind = m != nullptr ? format::SampleFrameKind::kNative : format::SampleFrameKind::kAddress;
    d.frame.mapping = static_cast<uint32_t>(mapping);
    d.frame.offset = offset;
    if (m != nullptr && (m->flags & format::kMappingAnonymous)) {
      // Generated code: named now from the process's perf map, if it writes one (jit_map.h).
      if (const std::string* name = jit_map_->find(pc, monotonic_now_ns())) {
        d.function = *name;
        ++jit_frames_named_;
      }
    }
    pending_.frames.push_back(d);
  }
  // Misses are cached too, for the mapping layout they missed in (read after find(), which may have
  // refreshed it): a frame-pointer walk through libtorch (no frame pointers) returns the same garbage
  // addresses sample after sample, and each miss cost a map search and a hash lookup. A new mapping
  // (an MMAP2 record, a /proc/PID/maps refresh) bumps the generation and retries them.
  slot = {pc, mappings_->generation(), it->second, m == nullptr};
  return it->second;
}

uint32_t SampleCollector::python_frame(const PyFrameRef& f) {
  auto [it, inserted] = python_frames_.try_emplace({f.code->id, f.line}, 0);
  if (inserted) {
    it->second = next_frame_++;
    FrameDef d;
    d.frame.id = it->second;
    d.frame.kind = format::SampleFrameKind::kPython;
    d.frame.line = f.line;
    d.function = f.code->function;
    d.file = f.code->file;
    pending_.frames.push_back(d);
  }
  return it->second;
}

void SampleCollector::intern_python_frames() {
  py_ids_.clear();
  for (const PyFrameRef& f : py_) py_ids_.push_back(python_frame(f));
}

uint32_t SampleCollector::intern_stack(const std::vector<uint32_t>& frames) {
  auto [it, inserted] = stacks_.try_emplace(frames, 0);
  if (inserted) {
    it->second = next_stack_++;
    pending_.stacks.push_back({it->second, frames});
  }
  return it->second;
}

UnwindStatus SampleCollector::unwind_native(const RawSample& s, uint32_t* count) {
  uint32_t n = 0;
  UnwindStatus status = UnwindStatus::kComplete;
  uint32_t kernel_leaf = 0;
  if (s.ip_count > 0 && !s.has_regs) {
    n = std::min<uint32_t>(s.ip_count, kMaxNativeFrames);
    std::copy(s.ips, s.ips + n, ips_.begin());
  } else if (s.has_regs) {
    if (s.ip_count > 0) {  // a kernel leaf ahead of the user stack (perf, dwarf)
      ips_[0] = s.ips[0];
      kernel_leaf = 1;
    }
    uint32_t got = 0;
    if (config_.dwarf) {
      status = unwinder_->unwind_dwarf(s, ips_.data() + kernel_leaf, kMaxNativeFrames - kernel_leaf, &got);
      if (got <= 1) {  // no CFI for the leaf (JIT code): frame pointers may still go further
        uint32_t fp_got = 0;
        std::vector<uint64_t> fp(kMaxNativeFrames);
        UnwindStatus fp_status =
            unwinder_->unwind_frame_pointers(s, fp.data(), kMaxNativeFrames - kernel_leaf, &fp_got);
        if (fp_got > got) {
          std::copy(fp.begin(), fp.begin() + fp_got, ips_.begin() + kernel_leaf);
          got = fp_got;
          status = fp_status;
        }
      }
    } else {
      status = unwinder_->unwind_frame_pointers(s, ips_.data() + kernel_leaf, kMaxNativeFrames - kernel_leaf,
                                                &got);
    }
    n = kernel_leaf + got;
    if (status == UnwindStatus::kFailed && config_.dwarf) ++lost_[kLossUnwindFailed];
  }
  frames_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const bool leaf = i == 0 || (i == 1 && kernel_leaf);
    bool unmapped = false;
    const uint32_t id = native_frame(ips_[i], leaf, &unmapped);
    if (unmapped && !leaf) {
      // A return address in no mapping (the table is refreshed on a miss) is no return address: a
      // frame-pointer walk through code built without frame pointers (libtorch) read a data word.
      // What follows it is read through that word: left out, not shown as thousands of
      // "[unknown]" frames that split every flame graph.
      n = i;
      status = UnwindStatus::kTruncated;
      ++stacks_cut_unmapped_;
      break;
    }
    frames_.push_back(id);
  }
  *count = n;
  return status;
}

void SampleCollector::merge_python(uint32_t n) {
  // Segments: frames up to and including an entry frame belong to one evaluation call.
  auto& segments = segments_;  // [begin, end) in py_, innermost first
  segments.clear();
  for (size_t b = 0, i = 0; i < py_.size(); ++i)
    if (py_[i].entry || i + 1 == py_.size()) {
      segments.emplace_back(b, i + 1);
      b = i + 1;
    }
  auto& eval_at = eval_at_;  // indices in the native stack, leaf first
  eval_at.clear();
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t pc = i == 0 ? ips_[i] : ips_[i] - 1;
    if (pc >= python_->eval_start() && pc < python_->eval_end()) eval_at.push_back(i);
  }
  auto& out = merged_;
  out.clear();
  auto emit_segment = [&](size_t k) {
    // py_ids_: interned before the merge, in py_'s order, which is the order the segments go out in.
    out.insert(out.end(), py_ids_.begin() + static_cast<ptrdiff_t>(segments[k].first),
               py_ids_.begin() + static_cast<ptrdiff_t>(segments[k].second));
  };
  if (!eval_at.empty()) {
    // Root-aligned: the outer calls are the ones that cannot have changed since the sample.
    const size_t k = eval_at.size(), m = segments.size();
    size_t e = 0;
    for (uint32_t i = 0; i < n; ++i) {
      if (e < k && eval_at[e] == i) {
        // eval frame number e (leaf first) pairs with segment e + (m - k) when that exists.
        const long seg = static_cast<long>(e) + static_cast<long>(m) - static_cast<long>(k);
        if (e == 0 && seg > 0)  // inner segments with no evaluation frame of their own
          for (long extra = 0; extra < seg; ++extra) emit_segment(static_cast<size_t>(extra));
        if (seg >= 0)
          emit_segment(static_cast<size_t>(seg));
        else
          out.push_back(frames_[i]);
        ++e;
      } else {
        out.push_back(frames_[i]);
      }
    }
  } else {
    // No evaluation frame in the native stack (frame pointers stop inside the interpreter):
    // the native frames below the interpreter, then every Python frame above them.
    const Mapping* interp = mappings_->find_no_refresh(python_->eval_start());
    for (uint32_t i = 0; i < n; ++i) {
      const Mapping* m = mappings_->find_no_refresh(i == 0 ? ips_[i] : ips_[i] - 1);
      if (interp != nullptr && m != nullptr && m->id == interp->id) break;
      out.push_back(frames_[i]);
    }
    for (size_t k = 0; k < segments.size(); ++k) emit_segment(k);
  }
  std::swap(frames_, out);
}

void SampleCollector::emit(uint32_t tid, int64_t time_ns, uint32_t event, uint32_t weight,
                           UnwindStatus status, bool merged, [[maybe_unused]] bool has_regs) {
  if (!merged && status != UnwindStatus::kComplete && !frames_.empty()) {
    auto [it, inserted] = native_frames_.try_emplace({UINT64_MAX - 1, 0}, 0);
    if (inserted) {
      it->second = next_frame_++;
      FrameDef d;
      d.frame.id = it->second;
      d.frame.kind = format::SampleFrameKind::kTruncated;
      pending_.frames.push_back(d);
    }
    frames_.push_back(it->second);
  }
  if (frames_.size() > format::kMaxSampleStackDepth) frames_.resize(format::kMaxSampleStackDepth);
  SampleRecord r;
  r.tid = tid;
  r.time_ns = time_ns;
  r.stack = intern_stack(frames_);
  r.event = event;
  r.weight = weight;
  pending_.samples.push_back(r);
}

void SampleCollector::on_sample(const RawSample& s) {
  ++samples_;
  note_thread(s.tid);
  uint32_t n = 0;
  const UnwindStatus status = unwind_native(s, &n);
  if (in_thread_) {
    finish_in_thread(s.tid, s.time_ns, s.event, s.weight, status, n, s.has_regs, false);
    return;
  }
  // Python frames, read now from the sampling thread, merged where the interpreter evaluates them.
  bool merged = false;
  if (python_) {
    if (python_->read_stack(s.tid, &py_)) {
      intern_python_frames();
      merge_python(n);
      merged = true;
    } else if (python_->last_read_failed()) {
      ++lost_[kLossPythonStack];
    }
  }
  emit(s.tid, s.time_ns, s.event, s.weight, status, merged, s.has_regs);
}

void SampleCollector::on_mmap(uint32_t, uint64_t address, uint64_t length, uint64_t pgoff,
                              std::string_view path, std::string_view build_id, int64_t time_ns) {
  const Mapping* known = mappings_->find_no_refresh(address);
  if (known != nullptr && known->start == address && known->end == address + length &&
      known->pgoff == pgoff && known->path == path)
    return;  // seen already (/proc/PID/maps, or another event's record)
  mappings_->add(address, length, pgoff, std::string(path), std::string(build_id), time_ns);
}

}  // namespace strata::sample
