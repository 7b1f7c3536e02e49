// libstrata_sample.so: CPU sampling inside a recorded process (`strata record --sample`, which
// preloads it after libstrata.so and sets STRATA_SAMPLE=HZ). A sampling thread reads the samples
// (perf_event rings, or the fallback's buffers), unwinds them and reads Python stacks; the session's
// writer thread attributes them to spans, aggregates and writes them (SampleStore), as a plugin.
//
// Environment: STRATA_SAMPLE=HZ (on), STRATA_SAMPLE_UNWIND=fp|dwarf, STRATA_SAMPLE_STACK_BYTES,
// STRATA_SAMPLE_EPOCH_MS (default 1000), STRATA_SAMPLE_PYTHON=0 (no Python frames),
// STRATA_SAMPLE_MODE=timer|itimer (skip perf_event: tests of the fallback),
// STRATA_SAMPLE_PYREAD=thread|process (Python stacks read in the sampled thread, the default where
// perf_event allows it, or by the sampling thread: docs/sampling.md).
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "collect/session.h"
#include "core/env_vars.h"
#include "sample/collector.h"
#include "sample/perf_map_guard.h"
#include "sample/python_signal.h"
#include "sample/sample_store.h"

namespace strata::sample {
namespace {

struct Settings {
  int hz = 999;
  bool dwarf = false;
  uint32_t stack_bytes = 16384;
  int64_t epoch_ns = 1'000'000'000;
  bool python = true;
  bool python_in_thread = true;
  std::string force_fallback;
};

bool settings_from_env(Settings* s) {
  const char* on = secure_getenv(env::kSample);
  if (on == nullptr || *on == '\0' || std::strcmp(on, "0") == 0) return false;
  s->hz = std::atoi(on) > 0 ? std::atoi(on) : 999;
  if (const char* u = secure_getenv(env::kSampleUnwind)) s->dwarf = std::strcmp(u, "dwarf") == 0;
  if (const char* b = secure_getenv(env::kSampleStackBytes); b != nullptr && std::atoi(b) > 0)
    s->stack_bytes = static_cast<uint32_t>(std::atoi(b));
  if (const char* e = secure_getenv(env::kSampleEpochMs); e != nullptr && std::atoi(e) > 0)
    s->epoch_ns = int64_t{std::atoi(e)} * 1'000'000;
  if (const char* p = secure_getenv(env::kSamplePython)) s->python = std::strcmp(p, "0") != 0;
  if (const char* m = secure_getenv(env::kSampleMode)) s->force_fallback = m;
  if (const char* r = secure_getenv(env::kSamplePyread)) s->python_in_thread = std::strcmp(r, "process") != 0;
  return true;
}

class InProcessSampler : public collect::WriterPlugin {
 public:
  explicit InProcessSampler(const Settings& settings)
      : settings_(settings), store_(StoreOptions{settings.epoch_ns, true, true, 256, 65536, 2'000'000'000}) {}

  // Starts the sampling thread, which starts sampling (so that it is itself left out); false when no
  // sampling mode could start (a line on stderr says why).
  bool start(collect::Session* session) {
    session_ = session;
    for (int k = 0; k < 1000 && session->writer_tid() == 0; ++k) usleep(100);
    sigset_t all, previous;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &previous);  // the program's signals go to its own threads
    thread_ = std::thread([this] { run(); });
    pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    std::unique_lock<std::mutex> lock(mu_);
    started_cv_.wait(lock, [&] { return state_ != State::kStarting; });
    if (state_ == State::kFailed) {
      lock.unlock();
      thread_.join();
      std::fprintf(stderr, "strata: CPU sampling disabled: %s\n", error_.c_str());
      session->set_collector_property("sample.mode", "off: " + error_);
      return false;
    }
    session->set_collector_property("sample.mode", collector_.mode());
    if (collector_.mode().rfind("perf_event", 0) != 0)
      std::fprintf(stderr, "strata: CPU sampling: %s\n", collector_.mode().c_str());
    if (settings_.python && collector_.python_note().find("only") != std::string::npos)
      std::fprintf(stderr, "strata: CPU sampling: %s\n", collector_.python_note().c_str());
    store_.set_config(collector_.config_properties());
    session->set_writer_plugin(this);
    return true;
  }

  void after_drain(std::span<const collect::SpanTimes> closed, std::span<const collect::SpanTimes> open,
                   int64_t complete_before_ns, int64_t to_monotonic) override {
    const int64_t cpu_start = thread_cpu_ns();
    take_batch();
    std::vector<SpanInterval> c, o;
    c.reserve(closed.size());
    for (const auto& s : closed)
      c.push_back({s.tid, s.start_ns + to_monotonic, s.end_ns + to_monotonic, s.span_id});
    for (const auto& s : open) o.push_back({s.tid, s.start_ns + to_monotonic, INT64_MAX, s.span_id});
    const int64_t complete = complete_before_ns == INT64_MAX ? INT64_MAX : complete_before_ns + to_monotonic;
    store_.add_spans(c, o, complete);
    store_.aggregate(false);
    writer_cpu_ns_ += thread_cpu_ns() - cpu_start;
  }

  void write(format::StreamWriter& stream, bool final) override {
    if (final) stop_thread();
    const int64_t cpu_start = thread_cpu_ns();
    take_batch();
    if (final) store_.aggregate(true);
    store_.write(stream, monotonic_now_ns(), final);
    writer_cpu_ns_ += thread_cpu_ns() - cpu_start;
    publish_losses();
  }

  // A forked child: the sampling thread and the session were the parent's.
  void abandon_in_child() { collector_.abandon(); }

 private:
  enum class State { kStarting, kRunning, kFailed };

  void run() {
    CollectorConfig config;
    config.pid = static_cast<int>(getpid());
    config.hz = settings_.hz;
    config.dwarf = settings_.dwarf;
    config.stack_bytes = settings_.stack_bytes;
    config.python = settings_.python;
    config.force_fallback = settings_.force_fallback;
    config.python_in_thread = settings_.python_in_thread;
    config.skip_tids = {static_cast<uint32_t>(syscall(SYS_gettid)), session_->writer_tid()};
    std::string error;
    const bool ok = collector_.start(config, &error);
    {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = ok ? State::kRunning : State::kFailed;
      error_ = error;
    }
    started_cv_.notify_all();
    if (!ok) return;
    SampleBatch batch;
    while (!stop_.load(std::memory_order_acquire)) {
      collector_.poll(collector_.idle_wait_ms());
      collector_.take(&batch);
      hand_over(&batch, false);
    }
    collector_.stop();
    collector_.poll(0);  // what the rings still hold
    collector_.take(&batch);
    // The perf map `strata record` asked oneDNN for (cmd_record.cc) was read while the frames were
    // named: nothing else needs it, and /tmp should not fill with one file per recorded process.
    // Only a map Strata created is removed (perf_map_guard.h).
    remove_own_perf_map();
    hand_over(&batch, true);  // reads this thread's CPU time last: its whole life, start-up included
  }

  // The calling thread's CPU time (user + system) since it started.
  static int64_t thread_cpu_ns() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
  }

  void hand_over(SampleBatch* batch, bool last) {
    // The sampler accounts its own cost (docs/performance.md): a run-to-run-independent overhead
    // figure. Its CPU time is a system call (no vDSO for thread clocks): read it every 10 ms and
    // last, not at each of a Python process's per-sample wake-ups.
    const int64_t now = monotonic_now_ns();
    const bool counters = last || now - counters_read_ns_ >= 10'000'000;
    if (!counters && batch->empty()) return;
    const int64_t cpu = counters ? thread_cpu_ns() : 0;
    std::lock_guard<std::mutex> lock(mu_);
    if (counters) {
      counters_read_ns_ = now;
      for (int c = 0; c < kLossCount; ++c) losses_[c] = collector_.lost(c);
      sampling_thread_cpu_ns_ = cpu;
      samples_taken_ = collector_.samples();
      stacks_cut_unmapped_ = collector_.stacks_cut_unmapped();
      jit_frames_named_ = collector_.jit_frames_named();
      python_counters_ = collector_.python_counters();
      if (collector_.config_generation() != config_generation_) {  // moved out of the threads
        config_generation_ = collector_.config_generation();
        new_config_ = collector_.config_properties();
        mode_ = collector_.mode();
      }
    }
    if (batch->empty()) return;
    auto append = [](auto& to, auto& from) {
      to.insert(to.end(), std::make_move_iterator(from.begin()), std::make_move_iterator(from.end()));
    };
    append(shared_.mappings, batch->mappings);
    append(shared_.frames, batch->frames);
    append(shared_.stacks, batch->stacks);
    append(shared_.samples, batch->samples);
    append(shared_.thread_names, batch->thread_names);
    batch->clear();
  }

  void take_batch() {
    SampleBatch batch;
    std::optional<format::Properties> config;
    {
      std::lock_guard<std::mutex> lock(mu_);
      std::swap(batch, shared_);
      std::swap(config, new_config_);
    }
    if (config) store_.set_config(std::move(*config));
    store_.add_batch(std::move(batch));
  }

  void stop_thread() {
    stop_.store(true, std::memory_order_release);
    collector_.interrupt();
    if (thread_.joinable()) thread_.join();
  }

  void publish_losses() {
    uint64_t losses[kLossCount];
    int64_t sampling_cpu = 0;
    uint64_t taken = 0, cut_unmapped = 0, jit_named = 0;
    PythonReadCounters py;
    std::string mode;
    {
      std::lock_guard<std::mutex> lock(mu_);
      mode = mode_;
      std::copy(losses_, losses_ + kLossCount, losses);
      sampling_cpu = sampling_thread_cpu_ns_;
      taken = samples_taken_;
      cut_unmapped = stacks_cut_unmapped_;
      jit_named = jit_frames_named_;
      py = python_counters_;
    }
    losses[kLossEvictionOverflow] += store_.lost_eviction_overflow();
    if (!mode.empty()) session_->set_collector_property("sample.mode", mode);
    for (int c = 0; c < kLossCount; ++c)
      if (losses[c] > 0 || c == kLossRingOverflow)
        session_->set_collector_drops(std::string("sample_") + loss_name(c), losses[c]);
    session_->set_collector_property("sample.samples", std::to_string(store_.samples_counted()));
    session_->set_collector_property("sample.collector_cpu_ns",
                                     std::to_string(sampling_cpu + writer_cpu_ns_));
    session_->set_collector_property("sample.samples_taken", std::to_string(taken));
    session_->set_collector_property("sample.stacks_cut_unmapped", std::to_string(cut_unmapped));
    session_->set_collector_property("sample.jit_frames_named", std::to_string(jit_named));
    if (const uint64_t refused = perf_maps_refused(); refused > 0)
      session_->set_collector_property("sample.jit_maps_refused", std::to_string(refused));
    session_->set_collector_property("sample.files_refused",
                                     std::to_string(SampleCollector::files_refused()));
    if (py.available) publish_python_counters(py);
  }

  // Informational: where Python stacks were read and what it took (docs/sampling.md, "Losses").
  void publish_python_counters(const PythonReadCounters& py) {
    const std::pair<const char*, uint64_t> counts[] = {
        {"sample.python_reads", py.reads},
        {"sample.python_frames_from_chunks", py.frames_from_chunks},
        {"sample.python_frames_read_singly", py.frames_read_singly},
        {"sample.python_speculative_hits", py.speculative_hits},
        {"sample.python_code_objects", py.code_objects},
        {"sample.python_codes_freed", py.codes_freed},
        {"sample.python_strings_malformed", py.strings_malformed},
        {"sample.python_records", py.records},
        {"sample.python_records_paired", py.records_paired},
        {"sample.python_records_unpaired", py.records_unpaired},
        {"sample.python_records_shared", py.records_shared},
        {"sample.python_record_ring_full", py.ring_full},
        {"sample.python_record_no_ring", py.no_ring},
        {"sample.python_top_frames_popped", py.top_frames_popped},
        {"sample.python_stacks_truncated", py.truncated},
        {"sample.python_safe_reads", py.safe_reads},
        {"sample.python_foreign_sigtraps", py.foreign_traps},
        {"sample.python_samples_deferred", py.deferred},
        // The handler's time in the sampled threads: with sample.collector_cpu_ns, the sampler's
        // accounted cost (docs/performance.md); 0 when the sampling thread reads the stacks.
        {"sample.handler_ns", py.handler_ns},
        {"sample.handler_calls", py.handler_calls},
        {"sample.python_reader_moved", py.reader_moved},
    };
    for (const auto& [key, value] : counts) session_->set_collector_property(key, std::to_string(value));
  }

  Settings settings_;
  collect::Session* session_ = nullptr;
  SampleCollector collector_;  // the sampling thread's
  SampleStore store_;          // the writer thread's
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable started_cv_;
  State state_ = State::kStarting;
  std::string error_;
  SampleBatch shared_;
  uint64_t losses_[kLossCount] = {};
  int64_t sampling_thread_cpu_ns_ = 0;  // the sampling thread's CPU time at its last hand-over
  uint64_t samples_taken_ = 0;
  uint64_t stacks_cut_unmapped_ = 0;
  uint64_t jit_frames_named_ = 0;
  PythonReadCounters python_counters_;
  uint64_t config_generation_ = 0;                // the collector's, as last seen (sampling thread)
  std::optional<format::Properties> new_config_;  // a changed SampleConfig for the writer (mu_)
  std::string mode_;                              // the mode since it changed (mu_)
  int64_t counters_read_ns_ = 0;  // sampling thread only
  int64_t writer_cpu_ns_ = 0;     // the writer thread's time in this plugin (writer thread only)
  std::atomic<bool> stop_{false};
};

// Samplers are never freed: the writer may call a stopped session's plugin until the session's
// stop returns, and a forked child abandons its parent's.
std::atomic<InProcessSampler*> g_sampler{nullptr};

void start_for(collect::Session* session) {
  Settings settings;
  if (session == nullptr || !settings_from_env(&settings)) return;
  auto* sampler = new InProcessSampler(settings);
  if (sampler->start(session)) g_sampler.store(sampler);
}

// A forked child (multiprocessing, DataLoader workers) samples from the fork on: its session starts
// now rather than at its first span (a worker that records no span still burns CPU). libstrata's
// own fork handler ran first (handlers run in registration order) and left the session pending.
void in_forked_child() {
  InProcessSampler* parent = g_sampler.exchange(nullptr);
  if (parent == nullptr) return;
  parent->abandon_in_child();
  collect::Session* session = collect::current_session();  // starts the child's session (and, through
  if (session != nullptr && g_sampler.load() == nullptr) start_for(session);  // the start hook, sampling)
}

// A mask the program blocks, without SIGTRAP while the sampled threads read their own Python stacks
// (docs/sampling.md, "Python stacks"): multiprocessing's resource-sharer thread (a DataLoader
// worker's, sending each batch's file descriptors) blocks every signal, and each of its samples lost
// its Python stack. `masked` is the caller's set, `copy` where the edited one goes.
const sigset_t* without_sigtrap(int how, const sigset_t* masked, sigset_t* copy) {
  if (masked == nullptr || (how != SIG_BLOCK && how != SIG_SETMASK) || sigismember(masked, SIGTRAP) != 1 ||
      !PySignalRecorder::needs_sigtrap())
    return masked;
  *copy = *masked;
  sigdelset(copy, SIGTRAP);
  return copy;
}

template <typename Fn>
Fn next_symbol(std::atomic<Fn>& slot, const char* name) {
  Fn fn = slot.load(std::memory_order_acquire);
  if (fn == nullptr) {
    fn = reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
    slot.store(fn, std::memory_order_release);
  }
  return fn;
}

using SigmaskFn = int (*)(int, const sigset_t*, sigset_t*);
std::atomic<SigmaskFn> g_next_pthread_sigmask{nullptr}, g_next_sigprocmask{nullptr};
using SigactionFn = int (*)(int, const struct sigaction*, struct sigaction*);
std::atomic<SigactionFn> g_next_sigaction{nullptr};
using SignalFn = sighandler_t (*)(int, sighandler_t);
std::atomic<SignalFn> g_next_signal{nullptr}, g_next_bsd_signal{nullptr}, g_next_sysv_signal{nullptr};

// signal(), bsd_signal() and sysv_signal() on SIGTRAP while our handler is installed: the same
// disposition glibc's would make (BSD: restart, the signal masked in its handler; System V: reset
// to the default at delivery, not masked), given to the program through PySignalRecorder.
bool program_signal(int sig, sighandler_t handler, bool bsd, sighandler_t* old) {
  if (sig != SIGTRAP) return false;
  struct sigaction act {
  }, previous{};
  act.sa_handler = handler;
  sigemptyset(&act.sa_mask);
  if (bsd) {
    sigaddset(&act.sa_mask, sig);
    act.sa_flags = SA_RESTART;
  } else {
    act.sa_flags = SA_RESETHAND | SA_NODEFER;
  }
  if (!PySignalRecorder::program_sigaction(&act, &previous)) return false;
  *old = previous.sa_handler;
  return true;
}

__attribute__((constructor)) void start_sampling_from_env() {
  // Resolved now rather than at the program's first call (which may be in a signal handler).
  next_symbol(g_next_pthread_sigmask, "pthread_sigmask");
  next_symbol(g_next_sigprocmask, "sigprocmask");
  next_symbol(g_next_sigaction, "sigaction");
  next_symbol(g_next_signal, "signal");
  collect::Session::set_start_hook(&start_for);  // sessions started later (a forked child's)
  pthread_atfork(nullptr, nullptr, in_forked_child);
  if (g_sampler.load() == nullptr) start_for(collect::current_session());
}

}  // namespace
}  // namespace strata::sample

// Interposed (the library is preloaded): the program's calls, Python's signal.pthread_sigmask
// included. The old mask they return shows SIGTRAP unblocked.
extern "C" __attribute__((visibility("default"))) int pthread_sigmask(int how, const sigset_t* set,
                                                                      sigset_t* old) {
  using namespace strata::sample;
  const SigmaskFn next = next_symbol(g_next_pthread_sigmask, "pthread_sigmask");
  if (next == nullptr) return ENOSYS;
  sigset_t copy;
  return next(how, without_sigtrap(how, set, &copy), old);
}

extern "C" __attribute__((visibility("default"))) int sigprocmask(int how, const sigset_t* set,
                                                                  sigset_t* old) {
  using namespace strata::sample;
  const SigmaskFn next = next_symbol(g_next_sigprocmask, "sigprocmask");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  sigset_t copy;
  return next(how, without_sigtrap(how, set, &copy), old);
}

// The program's SIGTRAP disposition while the in-thread reader's handler is installed: set and read
// through PySignalRecorder (python_signal.h), which keeps the samples' SIGTRAPs from it and moves
// Python reads out of its threads. Other signals, and SIGTRAP before sampling starts, go to libc.
extern "C" __attribute__((visibility("default"))) int sigaction(int sig, const struct sigaction* act,
                                                                struct sigaction* old) {
  using namespace strata::sample;
  if (sig == SIGTRAP && PySignalRecorder::program_sigaction(act, old)) return 0;
  const SigactionFn next = next_symbol(g_next_sigaction, "sigaction");
  if (next == nullptr) {
    errno = ENOSYS;
    return -1;
  }
  return next(sig, act, old);
}

extern "C" __attribute__((visibility("default"))) sighandler_t signal(int sig, sighandler_t handler) {
  using namespace strata::sample;
  sighandler_t old = SIG_DFL;
  if (program_signal(sig, handler, true, &old)) return old;
  const SignalFn next = next_symbol(g_next_signal, "signal");
  return next != nullptr ? next(sig, handler) : SIG_ERR;
}

extern "C" __attribute__((visibility("default"))) sighandler_t bsd_signal(int sig, sighandler_t handler) {
  using namespace strata::sample;
  sighandler_t old = SIG_DFL;
  if (program_signal(sig, handler, true, &old)) return old;
  const SignalFn next = next_symbol(g_next_bsd_signal, "bsd_signal");
  return next != nullptr ? next(sig, handler) : SIG_ERR;
}

extern "C" __attribute__((visibility("default"))) sighandler_t sysv_signal(int sig, sighandler_t handler) {
  using namespace strata::sample;
  sighandler_t old = SIG_DFL;
  if (program_signal(sig, handler, false, &old)) return old;
  const SignalFn next = next_symbol(g_next_sysv_signal, "sysv_signal");
  return next != nullptr ? next(sig, handler) : SIG_ERR;
}
