#include "sample/python_signal.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "sample/python311_layout.h"
#include "sample/remote_range.h"

namespace strata::sample {

namespace {

#ifndef TRAP_PERF
constexpr int TRAP_PERF = 6;  // linux/signal.h: a perf event with sigtrap=1
#endif
// glibc's siginfo_t has no si_perf_data: the kernel's _sigfault._perf._data follows si_addr
// (asm-generic/siginfo.h), at byte 24 on 64-bit.
constexpr size_t kPerfDataOffset = 24;
constexpr uint64_t kTag = 0x5374726174615059ull;  // "StrataPY"

constexpr size_t kRingBytes = size_t{1} << 20;  // per thread: ~600 records of a 25-deep stack
constexpr size_t kMaxBuffers = 128;             // threads with a ring (more: counted, native only)
constexpr size_t kMaxRecordBytes = sizeof(PySignalRecordHeader) + kMaxPySignalFrames * sizeof(PySignalFrame);

struct Ring {
  std::atomic<uint32_t> tid{0};
  std::atomic<uint64_t> head{0};  // bytes written (the thread's handler)
  std::atomic<uint64_t> tail{0};  // bytes consumed (the sampling thread)
  // The handler's time on this thread and its calls: written by the thread's handler only (plain
  // load + store, no locked instruction), summed by counters().
  std::atomic<uint64_t> handler_ns{0};
  std::atomic<uint64_t> handler_calls{0};
  uint8_t* bytes = nullptr;
};

Ring g_rings[kMaxBuffers];
// Code objects the sampling thread has named (open addressing, written by it only).
constexpr size_t kKnownSlots = size_t{1} << 15;
constexpr int kKnownProbes = 8;
std::atomic<uint64_t> g_known[kKnownSlots];
size_t known_slot(uint64_t code) { return static_cast<size_t>((code * 0x9E3779B97F4A7C15ull) >> 49); }
bool known(uint64_t code) {
  for (int k = 0; k < kKnownProbes; ++k) {
    const uint64_t v = g_known[(known_slot(code) + k) % kKnownSlots].load(std::memory_order_acquire);
    if (v == code) return true;
    if (v == 0) return false;
  }
  return false;
}
std::atomic<size_t> g_rings_used{0};
uint8_t* g_memory = nullptr;
std::atomic<bool> g_active{false};
std::atomic<bool> g_installed{false};  // read by any thread's pthread_sigmask (needs_sigtrap)
// The program's SIGTRAP disposition (what it had before us, then what it set since): two slots, the
// current one named by g_disposition, so a handler never reads one being written.
struct sigaction g_dispositions[2] = {};
std::atomic<int> g_disposition{0};
std::atomic<bool> g_program_took{false};  // the program installed a SIGTRAP handler after us
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
SigactionFn g_real_sigaction = nullptr;  // libc's (libstrata_sample.so interposes sigaction)
uint64_t g_runtime = 0, g_code_type = 0;
int g_pid = 0;
std::atomic<uint64_t> g_records{0}, g_full{0}, g_no_buffer{0}, g_foreign{0}, g_safe_reads{0};
// Handler time of calls on a thread with no ring (more threads than rings: rare, shared counters).
std::atomic<uint64_t> g_ringless_handler_ns{0}, g_ringless_handler_calls{0};

__thread Ring* t_ring __attribute__((tls_model("initial-exec"))) = nullptr;
__thread uint32_t t_tid __attribute__((tls_model("initial-exec"))) = 0;

const struct strata_py311_layout& L = ::strata_py311_layout;

template <typename T>
T load(uint64_t address) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(address), sizeof(T));
  return v;
}

// The thread's ring: found by tid, or claimed (lock-free: a handler may run on any thread at once).
Ring* ring_of(uint32_t tid) {
  const size_t used = g_rings_used.load(std::memory_order_acquire);
  for (size_t i = 0; i < used && i < kMaxBuffers; ++i)
    if (g_rings[i].tid.load(std::memory_order_acquire) == tid) return &g_rings[i];
  const size_t mine = g_rings_used.fetch_add(1, std::memory_order_acq_rel);
  if (mine >= kMaxBuffers) {
    g_rings_used.store(kMaxBuffers, std::memory_order_release);
    return nullptr;
  }
  Ring& r = g_rings[mine];
  r.bytes = g_memory + mine * kRingBytes;
  r.tid.store(tid, std::memory_order_release);  // a reader skips a claimed slot until its tid is set
  return &r;
}

// Where `frame` lies in the thread's data stack: 1 a live frame, 2 past the current chunk's top
// (popped), 0 in no chunk.
int data_stack_place(uint64_t frame, uint64_t chunk, uint64_t top) {
  int hops = 0;
  for (uint64_t c = chunk; c != 0 && hops < 64; c = load<uint64_t>(c + L.chunk_previous), ++hops) {
    const uint64_t size = load<uint64_t>(c + L.chunk_size);
    if (range_within_after(c, size, L.chunk_data, frame, L.frame_size))
      return c == chunk && frame >= top ? 2 : 1;
  }
  return 0;
}

// Walks the calling thread's Python frames into `out` (at most kMaxPySignalFrames).
uint32_t walk(uint32_t tid, PySignalFrame* out, uint32_t* status) {
  if (load<int>(g_runtime + L.runtime_tss_initialized) == 0) {
    *status |= kPySignalNoThreadState;
    return 0;
  }
  const auto key = load<pthread_key_t>(g_runtime + L.runtime_tss_key);
  const auto tstate = reinterpret_cast<uint64_t>(pthread_getspecific(key));
  if (tstate == 0 || load<unsigned long>(tstate + L.tstate_native_thread_id) != tid) {
    *status |= kPySignalNoThreadState;
    return 0;
  }
  const uint64_t chunk = load<uint64_t>(tstate + L.tstate_datastack_chunk);
  const uint64_t top = load<uint64_t>(tstate + L.tstate_datastack_top);
  const uint64_t cframe = load<uint64_t>(tstate + L.tstate_cframe);
  uint64_t frame = cframe != 0 ? load<uint64_t>(cframe + L.cframe_current_frame) : 0;
  uint32_t n = 0;
  alignas(8) uint8_t copy[256];
  bool first = true;
  while (frame != 0) {
    if ((frame & 7) != 0) {
      *status |= kPySignalBadFrame;
      break;
    }
    uint64_t base = frame;  // where the frame's fields are loaded from
    if (first) {
      first = false;
      const int place = data_stack_place(frame, chunk, top);
      if (place == 2) {  // being popped: its code may be gone; its caller is intact
        *status |= kPySignalTopPopped;
        frame = load<uint64_t>(frame + L.frame_previous);
        continue;
      }
      if (place == 0) {  // a generator's frame, or one in a chunk freed a moment ago: read safely
        g_safe_reads.fetch_add(1, std::memory_order_relaxed);
        iovec local{copy, L.frame_size}, remote{reinterpret_cast<void*>(frame), L.frame_size};
        if (L.frame_size > sizeof(copy) ||
            syscall(SYS_process_vm_readv, g_pid, &local, 1UL, &remote, 1UL, 0UL) !=
                static_cast<long>(L.frame_size) ||
            copy[L.frame_owner] != L.frame_owned_by_generator) {
          *status |= kPySignalBadFrame;
          break;
        }
        base = reinterpret_cast<uint64_t>(copy);
      }
    }
    if (n == kMaxPySignalFrames) {
      *status |= kPySignalTruncated;
      break;
    }
    const uint8_t owner = load<uint8_t>(base + L.frame_owner);
    const uint64_t code = load<uint64_t>(base + L.frame_code);
    if ((owner != L.frame_owned_by_thread && owner != L.frame_owned_by_generator) || code == 0 ||
        (code & 7) != 0 || load<uint64_t>(code + L.object_type) != g_code_type) {
      *status |= kPySignalBadFrame;
      break;
    }
    PySignalFrame& f = out[n++];
    f = PySignalFrame{};  // the ring's bytes hold an older record: no field may be left from it
    f.code = code;
    f.name = load<uint64_t>(code + L.code_name);
    f.file = load<uint64_t>(code + L.code_filename);
    f.qualname = load<uint64_t>(code + L.code_qualname);
    f.linetable = load<uint64_t>(code + L.code_linetable);
    f.first_line = load<int32_t>(code + L.code_firstlineno);
    f.prev_instr = load<uint64_t>(base + L.frame_prev_instr);
    f.entry = load<uint8_t>(base + L.frame_is_entry) != 0 ? 1 : 0;
    frame = load<uint64_t>(base + L.frame_previous);
  }
  return n;
}

// Copies a live str object's first bytes (its header and data, at most kPySignalStringBytes and
// never past the object's end); 0 when it is not a compact str.
uint16_t copy_string(uint64_t object, uint8_t* out) {
  if (object == 0 || (object & 7) != 0) return 0;
  const int64_t length = load<int64_t>(object + L.unicode_length);
  const uint32_t state = load<uint32_t>(object + L.unicode_state);
  const unsigned kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
  if (!compact || length < 0 || length > 4096) return 0;
  const uint64_t size = (ascii ? L.unicode_ascii_data : L.unicode_compact_data) +
                        static_cast<uint64_t>(length) * (ascii ? 1 : kind);
  const auto n = static_cast<uint16_t>(std::min<uint64_t>(size, kPySignalStringBytes));
  std::memcpy(out, reinterpret_cast<const void*>(object), n);
  return n;
}

int real_sigaction(int sig, const struct sigaction* act, struct sigaction* old) {
  return g_real_sigaction != nullptr ? g_real_sigaction(sig, act, old) : sigaction(sig, act, old);
}

// A SIGTRAP that is not one of our samples: the program's disposition takes it. Its mask and flags
// were applied by the kernel (program_sigaction installs ours with them); SA_RESETHAND is done here.
void forward(int sig, siginfo_t* info, void* context) {
  g_foreign.fetch_add(1, std::memory_order_relaxed);
  const int current = g_disposition.load(std::memory_order_acquire);
  const struct sigaction program = g_dispositions[current];
  if ((program.sa_flags & SA_RESETHAND) && program.sa_handler != SIG_DFL && program.sa_handler != SIG_IGN) {
    g_dispositions[1 - current] = {};
    g_dispositions[1 - current].sa_handler = SIG_DFL;
    g_disposition.store(1 - current, std::memory_order_release);
  }
  if ((program.sa_flags & SA_SIGINFO) && program.sa_sigaction != nullptr) {
    program.sa_sigaction(sig, info, context);
  } else if (program.sa_handler == SIG_DFL) {
    // A real SIGTRAP (a breakpoint, kill -TRAP) with the default action: take it.
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    real_sigaction(SIGTRAP, &dfl, nullptr);
    raise(SIGTRAP);
  } else if (program.sa_handler != SIG_IGN) {
    program.sa_handler(sig);
  }
}

int64_t monotonic_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);  // vDSO (clocksource tsc here): no system call
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// Adds one handler call's time to the thread's counters (its ring's; the shared ones without one).
void account_handler(Ring* r, int64_t entry_ns) {
  const auto spent = static_cast<uint64_t>(std::max<int64_t>(0, monotonic_ns() - entry_ns));
  if (r == nullptr) {
    g_ringless_handler_ns.fetch_add(spent, std::memory_order_relaxed);
    g_ringless_handler_calls.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  r->handler_ns.store(r->handler_ns.load(std::memory_order_relaxed) + spent, std::memory_order_relaxed);
  r->handler_calls.store(r->handler_calls.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
}

// Async-signal-safe: no allocation, no lock; system calls: gettid (once per thread),
// clock_gettime (vDSO), and process_vm_readv only for a top frame outside the data stack.
void on_sigtrap(int sig, siginfo_t* info, void* context) {
  const int64_t entry_ns = monotonic_ns();
  const int saved_errno = errno;
  uint64_t data = 0;
  if (info != nullptr)
    std::memcpy(&data, reinterpret_cast<const char*>(info) + kPerfDataOffset, sizeof(data));
  if (info == nullptr || info->si_code != TRAP_PERF || data != kTag) {
    forward(sig, info, context);
    errno = saved_errno;
    return;
  }
  if (!g_active.load(std::memory_order_relaxed)) {
    errno = saved_errno;
    return;
  }
  if (t_tid == 0) t_tid = static_cast<uint32_t>(syscall(SYS_gettid));
  if (t_ring == nullptr) t_ring = ring_of(t_tid);
  Ring* r = t_ring;
  if (r == nullptr) {
    g_no_buffer.fetch_add(1, std::memory_order_relaxed);
    account_handler(nullptr, entry_ns);
    errno = saved_errno;
    return;
  }
  const uint64_t head = r->head.load(std::memory_order_relaxed);
  const uint64_t at = head % kRingBytes;
  const uint64_t pad = kRingBytes - at < kMaxRecordBytes ? kRingBytes - at : 0;  // records do not wrap
  if (kRingBytes - (head - r->tail.load(std::memory_order_acquire)) < pad + kMaxRecordBytes) {
    g_full.fetch_add(1, std::memory_order_relaxed);
    account_handler(r, entry_ns);
    errno = saved_errno;
    return;
  }
  if (pad >= sizeof(PySignalRecordHeader)) {
    PySignalRecordHeader padding;  // bytes 0: skip to the ring's start
    std::memcpy(r->bytes + at, &padding, sizeof(padding));
  }
  uint8_t* record = r->bytes + (head + pad) % kRingBytes;
  auto* frames = reinterpret_cast<PySignalFrame*>(record + sizeof(PySignalRecordHeader));
  PySignalRecordHeader h;
  h.tid = t_tid;
  h.frames = walk(t_tid, frames, &h.status);
  // Strings of codes not named yet, in the space left before the ring's end or its tail.
  const uint64_t free_bytes = kRingBytes - (head - r->tail.load(std::memory_order_acquire)) - pad;
  const uint64_t room = std::min<uint64_t>(kRingBytes - (head + pad) % kRingBytes, free_bytes);
  uint32_t used = static_cast<uint32_t>(sizeof(h) + h.frames * sizeof(PySignalFrame));
  for (uint32_t i = 0; i < h.frames; ++i) {
    PySignalFrame& f = frames[i];
    if (known(f.code) || used + 2 * kPySignalStringBytes > room) continue;
    f.strings = used;
    f.qualname_bytes = copy_string(f.qualname, record + used);
    used += f.qualname_bytes;
    f.file_bytes = copy_string(f.file, record + used);
    used += f.file_bytes;
  }
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  h.time_ns = static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
  h.bytes = (used + 7) & ~7u;
  std::memcpy(record, &h, sizeof(h));
  r->head.store(head + pad + h.bytes, std::memory_order_release);
  g_records.fetch_add(1, std::memory_order_relaxed);
  account_handler(r, entry_ns);
  errno = saved_errno;
}

// A forked child: its forking thread's cached tid and ring are the parent's. Its sampler (when it
// samples itself) calls start() again, before or after this handler (fork handlers run in
// registration order): g_active is left to start() and stop(); the child's events are its own.
void in_forked_child() {
  t_tid = 0;
  t_ring = nullptr;
}

}  // namespace

bool PySignalRecorder::start(uint64_t runtime, uint64_t code_type, std::string* why) {
  if (L.version_major == 0) {
    *why = "built without CPython 3.11 headers";
    return false;
  }
  if (g_real_sigaction == nullptr)
    g_real_sigaction = reinterpret_cast<SigactionFn>(dlsym(RTLD_NEXT, "sigaction"));
  struct sigaction current {};
  real_sigaction(SIGTRAP, nullptr, &current);
  const bool ours = (current.sa_flags & SA_SIGINFO) && current.sa_sigaction == on_sigtrap;
  if ((!ours && current.sa_handler != SIG_DFL && current.sa_handler != SIG_IGN) ||
      g_program_took.load(std::memory_order_acquire)) {
    *why = "SIGTRAP has a handler in this program";
    return false;
  }
  if (g_memory == nullptr) {
    void* m = mmap(nullptr, kRingBytes * kMaxBuffers, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) {
      *why = std::string("no memory for the per-thread rings: ") + std::strerror(errno);
      return false;
    }
    g_memory = static_cast<uint8_t*>(m);
    pthread_atfork(nullptr, nullptr, in_forked_child);
  }
  for (Ring& r : g_rings) {
    r.tid.store(0);
    r.head.store(0);
    r.tail.store(0);
    r.handler_ns.store(0);
    r.handler_calls.store(0);
  }
  g_rings_used.store(0);
  // A forked child's counters start at zero too (they held the parent's counts at the fork).
  for (auto* counter : {&g_records, &g_full, &g_no_buffer, &g_foreign, &g_safe_reads}) counter->store(0);
  g_ringless_handler_ns.store(0);
  g_ringless_handler_calls.store(0);
  for (auto& k : g_known) k.store(0, std::memory_order_relaxed);
  t_tid = 0;
  t_ring = nullptr;
  g_runtime = runtime;
  g_code_type = code_type;
  g_pid = static_cast<int>(getpid());
  if (!ours) {
    struct sigaction sa {};
    sa.sa_sigaction = on_sigtrap;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (real_sigaction(SIGTRAP, &sa, &g_dispositions[0]) != 0) {
      *why = std::string("sigaction(SIGTRAP): ") + std::strerror(errno);
      return false;
    }
    g_disposition.store(0, std::memory_order_release);
    g_installed.store(true);
  }
  g_active.store(true);
  return true;
}

void PySignalRecorder::stop() { g_active.store(false); }

bool PySignalRecorder::needs_sigtrap() {
  return g_installed.load(std::memory_order_relaxed) && g_active.load(std::memory_order_relaxed) &&
         !g_program_took.load(std::memory_order_relaxed);
}

bool PySignalRecorder::program_sigaction(const struct sigaction* act, struct sigaction* old) {
  if (!g_installed.load(std::memory_order_acquire)) return false;
  const int current = g_disposition.load(std::memory_order_acquire);
  if (old != nullptr) *old = g_dispositions[current];
  if (act == nullptr) return true;
  const bool handler = act->sa_handler != SIG_DFL && act->sa_handler != SIG_IGN;
  if (handler) {
    // The program uses SIGTRAP: no sample's SIGTRAP may reach it, and its masks are its own.
    g_program_took.store(true, std::memory_order_release);
    g_active.store(false, std::memory_order_release);
  }
  g_dispositions[1 - current] = *act;
  g_disposition.store(1 - current, std::memory_order_release);
  // Ours stays underneath, with the program's mask and flags (restart, no-defer, alternate stack)
  // so its own SIGTRAPs are delivered as it asked; SA_RESETHAND is done by forward().
  struct sigaction sa {};
  sa.sa_sigaction = on_sigtrap;
  if (handler)
    sa.sa_mask = act->sa_mask;
  else
    sigemptyset(&sa.sa_mask);
  sa.sa_flags = handler ? ((act->sa_flags | SA_SIGINFO) & ~SA_RESETHAND) : (SA_SIGINFO | SA_RESTART);
  real_sigaction(SIGTRAP, &sa, nullptr);
  return true;
}

bool PySignalRecorder::program_took_sigtrap() { return g_program_took.load(std::memory_order_acquire); }

void PySignalRecorder::note_named(uint64_t code) {
  for (int k = 0; k < kKnownProbes; ++k) {
    std::atomic<uint64_t>& slot = g_known[(known_slot(code) + k) % kKnownSlots];
    const uint64_t v = slot.load(std::memory_order_relaxed);
    if (v == code) return;
    if (v == 0) {
      slot.store(code, std::memory_order_release);
      return;
    }
  }
}

void PySignalRecorder::drain(
    const std::function<void(const PySignalRecordHeader&, const PySignalFrame*)>& sink) {
  const size_t used = std::min(g_rings_used.load(std::memory_order_acquire), kMaxBuffers);
  for (size_t i = 0; i < used; ++i) {
    Ring& r = g_rings[i];
    if (r.tid.load(std::memory_order_acquire) == 0) continue;  // being claimed
    const uint64_t head = r.head.load(std::memory_order_acquire);
    uint64_t tail = r.tail.load(std::memory_order_relaxed);
    while (tail < head) {
      const uint64_t at = tail % kRingBytes;
      PySignalRecordHeader h;
      if (kRingBytes - at >= sizeof(h)) std::memcpy(&h, r.bytes + at, sizeof(h));
      if (kRingBytes - at < sizeof(h) || h.bytes == 0) {  // padding (too short for a header: implied)
        tail += kRingBytes - at;
        continue;
      }
      sink(h, reinterpret_cast<const PySignalFrame*>(r.bytes + at + sizeof(h)));
      tail += h.bytes;
    }
    r.tail.store(tail, std::memory_order_release);
  }
}

PySignalCounters PySignalRecorder::counters() {
  PySignalCounters c;
  c.records = g_records.load();
  c.buffer_full = g_full.load();
  c.no_buffer = g_no_buffer.load();
  c.foreign_traps = g_foreign.load();
  c.safe_reads = g_safe_reads.load();
  c.handler_ns = g_ringless_handler_ns.load(std::memory_order_relaxed);
  c.handler_calls = g_ringless_handler_calls.load(std::memory_order_relaxed);
  const size_t used = std::min(g_rings_used.load(std::memory_order_acquire), kMaxBuffers);
  for (size_t i = 0; i < used; ++i) {
    c.handler_ns += g_rings[i].handler_ns.load(std::memory_order_relaxed);
    c.handler_calls += g_rings[i].handler_calls.load(std::memory_order_relaxed);
  }
  return c;
}

uint64_t PySignalRecorder::tag() { return kTag; }

}  // namespace strata::sample
