#include "sample/timer_sampler.h"

#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "sample/perf_sampler.h"
#include "sample/remote_range.h"

namespace strata::sample {

// A slot: header, then up to stack_bytes of stack.
struct SlotHeader {
  int64_t time_ns;
  uint32_t tid;
  uint32_t weight;
  uint32_t stack_size;
  uint32_t reserved;
  uint64_t regs[kPerfRegCount];
};

struct TimerSampler::ThreadBuffer {
  uint32_t tid = 0;
  uint32_t slots = 0;
  size_t slot_bytes = 0;
  std::unique_ptr<uint8_t[]> memory;
  std::atomic<uint64_t> head{0};  // written by the thread's signal handler
  std::atomic<uint64_t> tail{0};  // written by the sampling thread
  std::atomic<uint64_t> dropped{0};
};

namespace {

constexpr size_t kTableSize = 8192;  // threads a process may have had (tids are reused, buffers kept)
struct TableEntry {
  std::atomic<uint32_t> tid{0};
  std::atomic<TimerSampler::ThreadBuffer*> buffer{nullptr};
};
TableEntry g_table[kTableSize];
std::atomic<bool> g_active{false};
std::atomic<uint32_t> g_stack_bytes{0};
std::atomic<int> g_wake_fd{-1};
std::atomic<int> g_pid{0};
std::atomic<uint64_t> g_no_buffer{0};
std::atomic<uint64_t> g_table_full{0};

__thread TimerSampler::ThreadBuffer* t_buffer __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;

size_t slot_of(uint32_t tid) { return (tid * 2654435761u) % kTableSize; }

TimerSampler::ThreadBuffer* lookup(uint32_t tid) {
  for (size_t k = 0, i = slot_of(tid); k < kTableSize; ++k, i = (i + 1) % kTableSize) {
    uint32_t t = g_table[i].tid.load(std::memory_order_acquire);
    if (t == tid) return g_table[i].buffer.load(std::memory_order_acquire);
    if (t == 0) return nullptr;
  }
  return nullptr;
}

bool publish(TimerSampler::ThreadBuffer* b) {
  for (size_t k = 0, i = slot_of(b->tid); k < kTableSize; ++k, i = (i + 1) % kTableSize) {
    uint32_t t = g_table[i].tid.load(std::memory_order_relaxed);
    if (t == b->tid) return true;  // a reused tid keeps its buffer
    if (t == 0) {
      g_table[i].buffer.store(b, std::memory_order_relaxed);
      g_table[i].tid.store(b->tid, std::memory_order_release);
      return true;
    }
  }
  g_table_full.fetch_add(1, std::memory_order_relaxed);
  return false;
}

// Async-signal-safe: no allocation, no lock; syscalls only (gettid, clock_gettime, process_vm_readv,
// write). Runs on the sampled thread.
void on_profiling_signal(int, siginfo_t* info, void* context) {
  if (!g_active.load(std::memory_order_relaxed)) return;
  const int saved_errno = errno;
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  TimerSampler::ThreadBuffer* b = t_buffer;
  if (b == nullptr || b->tid != t_tid) {
    b = lookup(t_tid);
    t_buffer = b;
  }
  if (b == nullptr) {
    g_no_buffer.fetch_add(1, std::memory_order_relaxed);
    errno = saved_errno;
    return;
  }
  const uint64_t head = b->head.load(std::memory_order_relaxed);
  if (head - b->tail.load(std::memory_order_acquire) >= b->slots) {
    b->dropped.fetch_add(1, std::memory_order_relaxed);
    errno = saved_errno;
    return;
  }
  uint8_t* slot = b->memory.get() + (head % b->slots) * b->slot_bytes;
  auto* h = reinterpret_cast<SlotHeader*>(slot);
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  h->time_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  h->tid = t_tid;
  h->weight = 1;
  if (info != nullptr && info->si_code == SI_TIMER && info->si_overrun > 0)
    h->weight = 1 + static_cast<uint32_t>(info->si_overrun);
  const auto* uc = static_cast<const ucontext_t*>(context);
  const greg_t* g = uc->uc_mcontext.gregs;
  std::memset(h->regs, 0, sizeof(h->regs));
  h->regs[kRegAx] = static_cast<uint64_t>(g[REG_RAX]);
  h->regs[kRegBx] = static_cast<uint64_t>(g[REG_RBX]);
  h->regs[kRegCx] = static_cast<uint64_t>(g[REG_RCX]);
  h->regs[kRegDx] = static_cast<uint64_t>(g[REG_RDX]);
  h->regs[kRegSi] = static_cast<uint64_t>(g[REG_RSI]);
  h->regs[kRegDi] = static_cast<uint64_t>(g[REG_RDI]);
  h->regs[kRegBp] = static_cast<uint64_t>(g[REG_RBP]);
  h->regs[kRegSp] = static_cast<uint64_t>(g[REG_RSP]);
  h->regs[kRegIp] = static_cast<uint64_t>(g[REG_RIP]);
  h->regs[kRegR8] = static_cast<uint64_t>(g[REG_R8]);
  h->regs[kRegR9] = static_cast<uint64_t>(g[REG_R9]);
  h->regs[kRegR10] = static_cast<uint64_t>(g[REG_R10]);
  h->regs[kRegR11] = static_cast<uint64_t>(g[REG_R11]);
  h->regs[kRegR12] = static_cast<uint64_t>(g[REG_R12]);
  h->regs[kRegR13] = static_cast<uint64_t>(g[REG_R13]);
  h->regs[kRegR14] = static_cast<uint64_t>(g[REG_R14]);
  h->regs[kRegR15] = static_cast<uint64_t>(g[REG_R15]);
  // The stack from the stack pointer up, page by page: a read that reaches the end of the stack's
  // mapping stops there instead of faulting (process_vm_readv on ourselves).
  const uint32_t want = g_stack_bytes.load(std::memory_order_relaxed);
  const uint64_t sp = h->regs[kRegSp];
  iovec local{slot + sizeof(SlotHeader), want};
  iovec remote[17];
  int n = 0;
  uint64_t at = sp;
  uint64_t stop = 0;
  if (!checked_add(sp, want, &stop))
    stop = UINT64_MAX & ~uint64_t{4095};  // the top page is never user memory
  while (at < stop && n < 17) {
    uint64_t page_end = 0;
    if (!checked_add(at & ~uint64_t{4095}, 4096, &page_end)) break;
    const uint64_t next = std::min<uint64_t>(page_end, stop);
    remote[n].iov_base = reinterpret_cast<void*>(at);
    remote[n].iov_len = next - at;
    ++n;
    at = next;
  }
  long got = syscall(SYS_process_vm_readv, g_pid.load(std::memory_order_relaxed), &local, 1UL, remote,
                     static_cast<unsigned long>(n), 0UL);
  h->stack_size = got > 0 ? static_cast<uint32_t>(got) : 0;
  b->head.store(head + 1, std::memory_order_release);
  if (int fd = g_wake_fd.load(std::memory_order_relaxed); fd >= 0) {
    uint64_t one = 1;
    ssize_t ignored = write(fd, &one, sizeof(one));
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

TimerSampler::~TimerSampler() { stop(); }

bool TimerSampler::start(const TimerConfig& config) {
  config_ = config;
  config_.hz = std::max(1, std::min(config_.hz, 10000));
  config_.stack_bytes = std::min<uint32_t>(std::max<uint32_t>(config_.stack_bytes, 1024), 65536);
  period_ns_ = 1'000'000'000ull / static_cast<uint64_t>(config_.hz);
  skip_.insert(config_.skip_tids.begin(), config_.skip_tids.end());
  g_stack_bytes.store(config_.stack_bytes);
  g_wake_fd.store(config_.wake_fd);
  g_pid.store(static_cast<int>(getpid()));
  // Timers signal with a real-time signal nobody else uses; setitimer can only send SIGPROF.
  itimer_ = config_.force_itimer;
  signal_ = itimer_ ? SIGPROF : SIGRTMAX - 4;
  struct sigaction current {};
  // Free: the default disposition, ignored, or our own handler (a forked child's second start).
  auto free_signal = [](const struct sigaction& a) {
    return a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN ||
           ((a.sa_flags & SA_SIGINFO) && a.sa_sigaction == on_profiling_signal);
  };
  sigaction(signal_, nullptr, &current);
  if (!itimer_ && !free_signal(current)) {
    itimer_ = true;  // taken by the program: try SIGPROF instead
    signal_ = SIGPROF;
    sigaction(signal_, nullptr, &current);
  }
  if (!free_signal(current)) {
    error_ = std::string("signal ") + std::to_string(signal_) + " already has a handler in this program";
    return false;
  }
  struct sigaction sa {};
  sa.sa_sigaction = on_profiling_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  if (sigaction(signal_, &sa, &previous_) != 0) {
    error_ = std::string("sigaction: ") + std::strerror(errno);
    return false;
  }
  g_active.store(true);
  started_ = true;
  scan_threads();  // buffers, and per-thread timers unless refused
  if (itimer_) {
    itimerval it{};
    it.it_interval.tv_sec = static_cast<time_t>(period_ns_ / 1'000'000'000);
    it.it_interval.tv_usec = static_cast<suseconds_t>((period_ns_ % 1'000'000'000) / 1000);
    if (it.it_interval.tv_sec == 0 && it.it_interval.tv_usec == 0) it.it_interval.tv_usec = 1;
    it.it_value = it.it_interval;
    if (setitimer(ITIMER_PROF, &it, nullptr) != 0) {
      error_ = std::string("setitimer(ITIMER_PROF): ") + std::strerror(errno);
      stop();
      return false;
    }
  }
  return true;
}

bool TimerSampler::add_thread(uint32_t tid) {
  if (lookup(tid) == nullptr) {
    auto* b = new ThreadBuffer();  // kept for the life of the process: a handler may be running on it
    b->tid = tid;
    b->slots = 8;
    b->slot_bytes = (sizeof(SlotHeader) + config_.stack_bytes + 15) & ~size_t{15};
    b->memory.reset(new uint8_t[b->slots * b->slot_bytes]);
    if (!publish(b)) {
      delete b;
      return false;
    }
  }
  if (itimer_) return true;
  sigevent sev{};
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signal_;
  sev._sigev_un._tid = static_cast<pid_t>(tid);
  // The thread's CPU-time clock (the kernel's encoding: ~tid << 3 | per-thread | scheduler time).
  const clockid_t clock = static_cast<clockid_t>((~static_cast<clockid_t>(tid)) << 3) | 6;
  timer_t timer{};
  if (timer_create(clock, &sev, &timer) != 0) {
    if (errno == ESRCH || errno == EINVAL) return false;  // the thread is gone
    // Refused: fall back to the process-wide timer.
    itimer_ = true;
    return true;
  }
  itimerspec spec{};
  spec.it_interval.tv_sec = static_cast<time_t>(period_ns_ / 1'000'000'000);
  spec.it_interval.tv_nsec = static_cast<long>(period_ns_ % 1'000'000'000);
  spec.it_value = spec.it_interval;
  timer_settime(timer, 0, &spec, nullptr);
  timers_[tid] = timer;
  return true;
}

void TimerSampler::scan_threads() {
  if (!started_) return;
  const bool was_itimer = itimer_;
  std::vector<uint32_t> tids = list_threads(static_cast<int>(getpid()));
  std::set<uint32_t> alive(tids.begin(), tids.end());
  for (uint32_t tid : tids) {
    if (skip_.count(tid)) continue;
    if (itimer_ ? lookup(tid) == nullptr : !timers_.count(tid)) add_thread(tid);
  }
  for (auto it = timers_.begin(); it != timers_.end();) {
    if (!alive.count(it->first)) {
      timer_delete(it->second);
      it = timers_.erase(it);
    } else {
      ++it;
    }
  }
  if (itimer_ && !was_itimer) {  // timer_create was refused midway: one process-wide timer instead
    for (auto& [tid, timer] : timers_) timer_delete(timer);
    timers_.clear();
    if (signal_ != SIGPROF) {
      sigaction(signal_, &previous_, nullptr);
      signal_ = SIGPROF;
      struct sigaction sa {};
      sa.sa_sigaction = on_profiling_signal;
      sa.sa_flags = SA_SIGINFO | SA_RESTART;
      sigemptyset(&sa.sa_mask);
      sigaction(signal_, &sa, &previous_);
    }
    itimerval it{};
    it.it_interval.tv_usec = static_cast<suseconds_t>(std::max<uint64_t>(1, period_ns_ / 1000));
    it.it_value = it.it_interval;
    setitimer(ITIMER_PROF, &it, nullptr);
  }
}

size_t TimerSampler::read(const std::function<void(const RawSample&)>& sink) {
  size_t n = 0;
  for (size_t i = 0; i < kTableSize; ++i) {
    if (g_table[i].tid.load(std::memory_order_acquire) == 0) continue;
    ThreadBuffer* b = g_table[i].buffer.load(std::memory_order_acquire);
    if (b == nullptr) continue;
    uint64_t tail = b->tail.load(std::memory_order_relaxed);
    const uint64_t head = b->head.load(std::memory_order_acquire);
    for (; tail < head; ++tail) {
      const uint8_t* slot = b->memory.get() + (tail % b->slots) * b->slot_bytes;
      SlotHeader h;
      std::memcpy(&h, slot, sizeof(h));
      RawSample s;
      s.pid = static_cast<uint32_t>(g_pid.load());
      s.tid = h.tid;
      s.time_ns = h.time_ns;
      s.weight = h.weight;
      s.has_regs = true;
      std::memcpy(s.regs, h.regs, sizeof(s.regs));
      s.stack = slot + sizeof(SlotHeader);
      s.stack_size = std::min<uint32_t>(h.stack_size, config_.stack_bytes);
      sink(s);
      ++n;
    }
    b->tail.store(tail, std::memory_order_release);
  }
  return n;
}

void TimerSampler::stop() {
  if (!started_) return;
  started_ = false;
  if (itimer_) {
    itimerval off{};
    setitimer(ITIMER_PROF, &off, nullptr);
  }
  for (auto& [tid, timer] : timers_) timer_delete(timer);
  timers_.clear();
  g_active.store(false);
  // The handler stays installed (ignoring signals while inactive): a signal already pending must
  // not kill the process with SIGPROF's default action.
}

uint64_t TimerSampler::lost(int cause) const {
  if (cause == kLossNoThreadBuffer) return g_no_buffer.load() + g_table_full.load();
  if (cause != kLossSignalBuffer) return 0;
  uint64_t total = 0;
  for (size_t i = 0; i < kTableSize; ++i)
    if (auto* b = g_table[i].buffer.load(std::memory_order_acquire)) total += b->dropped.load();
  return total;
}

std::string TimerSampler::mode() const {
  std::string m = itimer_ ? "setitimer(ITIMER_PROF) " : "timer_create(CLOCK_THREAD_CPUTIME_ID) per thread ";
  m += std::to_string(config_.hz) + " Hz with a signal handler (perf_event refused); CPU-time timers fire at the "
       "kernel tick, so a thread gets at most HZ samples/s";
  m += itimer_ ? "; one process-wide timer: the signal lands on whichever thread runs, and a sample counts once "
                 "however many periods it stood for (shares hold, CPU time is underestimated)"
               : ", each weighted by the periods it stands for (timer overruns)";
  return m;
}

}  // namespace strata::sample
