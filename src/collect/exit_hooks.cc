// Every way out of a recorded process flushes what it recorded:
//   exit()/return from main      atexit handler (env_start.cc)
//   _exit()/_Exit()              interposed here (Python's os._exit, multiprocessing and DataLoader
//                                workers, PyTorch's worker SIGTERM handler); libstrata must come
//                                before libc in lookup order (LD_PRELOAD, or linked), else the
//                                Python package wraps os._exit itself
//   SIGTERM, SIGINT              a handler where the disposition was the default: flush, then die
//                                by the same signal
//   SIGSEGV, SIGBUS, SIGFPE, ... a handler that flushes, then lets the program die as it would have
// SIGKILL cannot be caught: it loses what was recorded since the last flush (100 ms by default).
//
// The stop runs on a helper thread and is waited for at most a bound: the caller may be a signal
// handler, or hold a lock the stop needs; a stop that cannot finish in time loses its tail, never
// hangs the process. The helper is started beforehand (at the first recording thread) and woken
// with sem_post, so a signal handler does nothing that is not async-signal-safe.
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "collect/runtime_internal.h"

namespace strata::collect::rt {
namespace {

// 0: idle, 1: a stop from an exit path is running, 2: done.
std::atomic<int> g_exit_stop{0};
std::atomic<bool> g_terminate_handlers_installed{false};

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
constexpr int kTerminateSignals[] = {SIGTERM, SIGINT};
struct sigaction g_previous[65];

constexpr int kSignalStopMs = 1000;
constexpr int kExitStopMs = 2000;

// The dormant helper: one per process, blocked on a semaphore until an exit path posts it.
sem_t g_exit_sem;
std::atomic<int> g_helper_state{0};  // 0: none, 1: being created, 2: waiting on g_exit_sem

void* stop_helper(void*) {
  stop_session();
  g_exit_stop.store(2);
  return nullptr;
}

void* dormant_helper(void*) {
  for (;;) {
    while (sem_wait(&g_exit_sem) != 0 && errno == EINTR) {
    }
    stop_helper(nullptr);
  }
  return nullptr;
}

// A thread that takes no signal meant for the program (its mask blocks them all).
bool start_thread_without_signals(void* (*fn)(void*)) {
  pthread_t thread;
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  int created = pthread_create(&thread, nullptr, fn, nullptr);
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  if (created != 0) return false;
  pthread_detach(thread);
  return true;
}

void sleep_ms(long ms) {
  timespec ts{0, ms * 1'000'000};
  nanosleep(&ts, nullptr);
}

void on_fatal_signal(int sig, siginfo_t* info, void* ctx) {
  stop_with_deadline(kSignalStopMs);
  sigaction(sig, &g_previous[sig], nullptr);
  if (g_previous[sig].sa_flags & SA_SIGINFO) {
    if (g_previous[sig].sa_sigaction != nullptr) g_previous[sig].sa_sigaction(sig, info, ctx);
  } else if (g_previous[sig].sa_handler != SIG_DFL && g_previous[sig].sa_handler != SIG_IGN) {
    g_previous[sig].sa_handler(sig);
  }
  raise(sig);
}

// Installed only over the default disposition, so the default action follows the flush.
void on_terminate_signal(int sig) {
  stop_with_deadline(kSignalStopMs);
  signal(sig, SIG_DFL);
  raise(sig);
}

// For the _exit interposers: this process's own session only (a vfork child shares the parent's
// memory, and with it the parent's session, which it must not stop).
void stop_before_exit() {
  Session* s = g_session.load(std::memory_order_acquire);
  if (s == nullptr || s->owner_pid() != static_cast<int>(getpid())) return;
  stop_with_deadline(kExitStopMs);
}

[[noreturn]] void exit_group_now(int status) {
  for (;;) syscall(SYS_exit_group, status);
}

}  // namespace

bool stop_with_deadline(int timeout_ms) {
  Session* s = g_session.load(std::memory_order_acquire);
  if (s == nullptr || s->owner_pid() != static_cast<int>(getpid())) return true;
  int expected = 0;
  if (!g_exit_stop.compare_exchange_strong(expected, 1)) {
    // Another exit path is stopping already (e.g. _exit called from a SIGTERM handler): wait for it.
    for (int waited = 0; g_exit_stop.load() != 2 && waited < timeout_ms; waited += 5) sleep_ms(5);
    return g_exit_stop.load() == 2;
  }
  strata_level_gate.store(0);
  if (g_helper_state.load() == 2) sem_post(&g_exit_sem);  // async-signal-safe
  else if (!start_thread_without_signals(stop_helper)) return false;
  for (int waited = 0; g_exit_stop.load() != 2 && waited < timeout_ms; waited += 2) sleep_ms(2);
  return g_exit_stop.load() == 2;
}

void reset_exit_state_after_fork() {
  g_exit_stop.store(0);
  g_helper_state.store(0);  // threads do not survive fork: the child starts its own helper
  // Dispositions are inherited over fork, and so is the knowledge that they are installed.
}

void ensure_exit_helper() {
  int expected = 0;
  if (!g_helper_state.compare_exchange_strong(expected, 1)) return;
  sem_init(&g_exit_sem, 0, 0);
  g_helper_state.store(start_thread_without_signals(dormant_helper) ? 2 : 0);
}

void on_thread_registered() {
  ensure_exit_helper();
  install_terminate_handlers_once();
}

void install_fatal_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

void install_terminate_handlers_once() {
  if (g_terminate_handlers_installed.exchange(true)) return;
  for (int sig : kTerminateSignals) {
    struct sigaction current {};
    if (sigaction(sig, nullptr, &current) != 0) continue;
    // A program with its own handler (or ignoring the signal) decides what happens; its exit path
    // (exit or _exit) still flushes.
    if (!(current.sa_flags & SA_SIGINFO) && current.sa_handler == SIG_DFL) {
      struct sigaction sa {};
      sa.sa_handler = on_terminate_signal;
      sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
  }
}

}  // namespace strata::collect::rt

// Interposed over libc's: flush, then end the process as libc would (exit_group).
extern "C" {

__attribute__((visibility("default"), noreturn)) void _exit(int status) {
  strata::collect::rt::stop_before_exit();
  strata::collect::rt::exit_group_now(status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status) noexcept {
  strata::collect::rt::stop_before_exit();
  strata::collect::rt::exit_group_now(status);
}

}  // extern "C"
