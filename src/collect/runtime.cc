// Process-wide runtime: the C API, start from the environment (preload), stop at exit, fork and
// fatal-signal handling. One session per process at a time.
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <vector>

#include "collect/runtime.h"
#include "collect/session.h"
#include "core/level.h"
#include "strata/strata.h"

// The C header's activity numbers are the core enum's (both are written into trace files).
#define STRATA_CHECK_ACTIVITY(macro, value) \
  static_assert((macro) == static_cast<int>(strata::ActivityType::value), #macro " disagrees with ActivityType")
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_KERNEL, kKernel);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_HTOD, kMemcpyHtoD);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_DTOH, kMemcpyDtoH);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_DTOD, kMemcpyDtoD);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_HTOH, kMemcpyHtoH);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_PTOP, kMemcpyPtoP);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMCPY_OTHER, kMemcpyOther);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_MEMSET, kMemset);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_SYNC, kSync);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_COLLECTIVE, kCollective);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_RUNTIME_CALL, kRuntimeCall);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_DRIVER_CALL, kDriverCall);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_LIBRARY_CALL, kLibraryCall);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_CPU_OP, kCpuOp);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_TENSOR_COPY, kTensorCopy);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_PYTHON_FUNCTION, kPythonFunction);
STRATA_CHECK_ACTIVITY(STRATA_ACTIVITY_ANNOTATION, kAnnotation);
#undef STRATA_CHECK_ACTIVITY

extern "C" {
__attribute__((visibility("default"))) std::atomic<int> strata_level_gate{0};
}
__attribute__((visibility("default"))) __thread strata::detail::ThreadCursor* strata_tls_cursor
    __attribute__((tls_model("initial-exec"))) = nullptr;

namespace strata::collect {
namespace {

std::atomic<Session*> g_session{nullptr};
// Stopped sessions stay allocated (threads may still hold pointers into their buffers) and stay
// reachable from this plain array (no destructor runs at exit), so leak checkers see them as owned.
constexpr int kMaxRetiredSessions = 256;
Session* g_retired_sessions[kMaxRetiredSessions];
int g_retired_count = 0;
std::mutex g_control_mu;
bool g_started_from_env = false;
std::atomic<int> g_crash_flush{0};  // 1: requested by a signal handler, 2: done

std::string read_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string argv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!argv.empty() && argv.back() == '\0') argv.pop_back();
  return argv;
}

size_t env_size(const char* name, size_t fallback) {
  const char* v = getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  unsigned long long n = strtoull(v, &end, 10);
  return (end != nullptr && *end == '\0' && n > 0) ? static_cast<size_t>(n) : fallback;
}

bool start_session(SessionConfig config) {
  std::lock_guard<std::mutex> lock(g_control_mu);
  if (g_session.load() != nullptr) return false;
  // Sessions are never freed: threads may still hold pointers into their buffers (see stop()).
  auto* session = new Session(std::move(config));
  if (!session->start()) {
    std::fprintf(stderr, "strata: recording disabled: %s\n", session->error().c_str());
    delete session;
    return false;
  }
  g_session.store(session);
  strata_level_gate.store(session->config().level);
  return true;
}

void stop_session() {
  std::lock_guard<std::mutex> lock(g_control_mu);
  Session* session = g_session.load();
  if (session == nullptr) return;
  strata_level_gate.store(0);
  session->stop();
  if (!session->error().empty()) std::fprintf(stderr, "strata: %s\n", session->error().c_str());
  g_session.store(nullptr);
  if (g_retired_count < kMaxRetiredSessions) g_retired_sessions[g_retired_count++] = session;
}

// --- start from the environment (LD_PRELOAD by `strata record`, or any program linked with us)

std::optional<SessionConfig> config_from_env(bool after_fork) {
  const char* file = getenv("STRATA_OUTPUT");
  const char* dir = getenv("STRATA_OUTPUT_DIR");
  if ((file == nullptr || *file == '\0') && (dir == nullptr || *dir == '\0')) return std::nullopt;
  SessionConfig config;
  pid_t pid = getpid();
  if (dir != nullptr && *dir != '\0') {
    config.path = std::string(dir) + "/" + std::to_string(pid) + ".strata";
  } else {
    config.path = file;
    if (after_fork) config.path += "." + std::to_string(pid) + ".strata";
  }
  config.level = static_cast<int>(Level::kModel);
  if (const char* l = getenv("STRATA_LEVEL")) {
    auto level = parse_level(l);
    if (level) config.level = static_cast<int>(*level);
    else std::fprintf(stderr, "strata: STRATA_LEVEL=%s is not a level; recording at model level\n", l);
  }
  config.buffer_bytes = env_size("STRATA_BUFFER_MB", 64) << 20;
  config.flush_interval_ms = static_cast<int>(env_size("STRATA_FLUSH_MS", 100));
  config.compression_level = static_cast<int>(env_size("STRATA_COMPRESS", 0));
  if (const char* tp = getenv("TRACEPARENT")) config.context = parse_traceparent(tp);
  config.argv = read_argv();
  return config;
}

void stop_at_exit() { stop_session(); }

// Fatal signals: ask the writer for a last flush (bounded wait), then die as the program would have.
constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
struct sigaction g_previous[32];

void on_fatal_signal(int sig, siginfo_t* info, void* ctx) {
  Session* session = g_session.load();
  if (session != nullptr && g_crash_flush.exchange(1) == 0) {
    strata_level_gate.store(0);
    // stop() is not async-signal-safe; a helper thread would be no better. Bound the risk: run it
    // on a fresh thread and wait at most one second for it.
    pthread_t helper;
    if (pthread_create(&helper, nullptr, [](void*) -> void* {
          stop_session();
          g_crash_flush.store(2);
          return nullptr;
        }, nullptr) == 0) {
      for (int i = 0; i < 100 && g_crash_flush.load() != 2; ++i) {
        timespec ten_ms{0, 10'000'000};
        nanosleep(&ten_ms, nullptr);
      }
    }
  }
  sigaction(sig, &g_previous[sig], nullptr);
  if (g_previous[sig].sa_flags & SA_SIGINFO) {
    if (g_previous[sig].sa_sigaction != nullptr) g_previous[sig].sa_sigaction(sig, info, ctx);
  } else if (g_previous[sig].sa_handler != SIG_DFL && g_previous[sig].sa_handler != SIG_IGN) {
    g_previous[sig].sa_handler(sig);
  }
  raise(sig);
}

void install_signal_handlers() {
  for (int sig : kFatalSignals) {
    struct sigaction sa {};
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESETHAND | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, &g_previous[sig]);
  }
}

void after_fork_in_child() {
  // Only the forking thread exists in the child. The parent's session (and its writer thread)
  // does not; abandon it without touching its locks and start a fresh one for this pid.
  g_session.store(nullptr);
  strata_level_gate.store(0);
  strata_tls_cursor = nullptr;
  new (&g_control_mu) std::mutex();
  if (g_started_from_env) {
    if (auto config = config_from_env(true)) start_session(std::move(*config));
  }
}

__attribute__((constructor)) void start_from_env() {
  auto config = config_from_env(false);
  if (!config) return;
  if (start_session(std::move(*config))) {
    g_started_from_env = true;
    atexit(stop_at_exit);
    install_signal_handlers();
  }
  pthread_atfork(nullptr, nullptr, after_fork_in_child);
}

__attribute__((destructor)) void stop_at_unload() { stop_session(); }

}  // namespace

Session* current_session() { return g_session.load(std::memory_order_acquire); }
bool start_recording(SessionConfig config) { return start_session(std::move(config)); }
void stop_recording() { stop_session(); }

}  // namespace strata::collect

// ------------------------------------------------------------------------------------------------
// Inline hot-path fallbacks

namespace strata::detail {
bool begin_static_slow(const SourceLocation* loc) {
  auto* s = collect::current_session();
  return s != nullptr && s->begin_static_slow(loc);
}
void end_static_slow() {
  if (auto* s = collect::current_session()) s->end_static_slow();
}
}  // namespace strata::detail

// ------------------------------------------------------------------------------------------------
// C API

using strata::collect::current_session;

namespace {
inline bool gated(int level) { return level > strata_level_gate.load(std::memory_order_relaxed); }
}  // namespace

extern "C" {

strata_span_id strata_span_begin(const char* name, int level) {
  if (gated(level) || name == nullptr) return 0;
  auto* s = current_session();
  return s ? s->begin(name, level) : 0;
}

strata_span_id strata_span_begin_n(const char* name, size_t len, int level) {
  if (gated(level) || name == nullptr) return 0;
  auto* s = current_session();
  return s ? s->begin(std::string_view(name, len), level) : 0;
}

strata_span_id strata_span_begin_as(const char* name, size_t len, int level, int activity) {
  if (gated(level) || name == nullptr) return 0;
  auto* s = current_session();
  const auto type = static_cast<strata::ActivityType>(activity >= 0 && activity < 256 ? activity : 0);
  return s ? s->begin(std::string_view(name, len), level, type) : 0;
}

void strata_span_end(strata_span_id span) {
  if (span == 0) return;
  if (auto* s = current_session()) s->end(span);
}

void strata_span_set_int(strata_span_id span, const char* key, int64_t value) {
  if (span == 0 || key == nullptr) return;
  if (auto* s = current_session()) s->set_attr(span, key, strata::AttrType::kInt, value, 0, {});
}

void strata_span_set_double(strata_span_id span, const char* key, double value) {
  if (span == 0 || key == nullptr) return;
  if (auto* s = current_session()) s->set_attr(span, key, strata::AttrType::kDouble, 0, value, {});
}

void strata_span_set_string(strata_span_id span, const char* key, const char* value) {
  if (span == 0 || key == nullptr || value == nullptr) return;
  if (auto* s = current_session()) s->set_attr(span, key, strata::AttrType::kString, 0, 0, value);
}

void strata_span_set_metric(strata_span_id span, const char* key, double value) {
  if (span == 0 || key == nullptr) return;
  if (auto* s = current_session()) s->set_attr(span, key, strata::AttrType::kMetric, 0, value, {});
}

void strata_instant(const char* name, int level) {
  if (gated(level) || name == nullptr) return;
  if (auto* s = current_session()) s->instant(name, level);
}

void strata_counter(const char* name, double value) {
  if (gated(STRATA_LEVEL_APPLICATION) || name == nullptr) return;
  if (auto* s = current_session()) s->counter(name, value);
}

void strata_set_thread_name(const char* name) {
  if (name == nullptr) return;
  if (auto* s = current_session()) s->set_thread_name(name);
}

int strata_level_enabled(int level) { return gated(level) ? 0 : 1; }
int strata_get_level(void) { return strata_level_gate.load(std::memory_order_relaxed); }

int strata_set_level(int level) {
  if (current_session() == nullptr) return 0;
  return strata_level_gate.exchange(level);
}

int strata_current_traceparent(char* buf, size_t size) {
  auto* s = current_session();
  if (s == nullptr || buf == nullptr || size < 56) return 0;
  std::string tp = s->context().traceparent(s->current_api_span());
  if (tp.size() + 1 > size) return 0;
  std::memcpy(buf, tp.c_str(), tp.size() + 1);
  return static_cast<int>(tp.size());
}

int strata_inject_traceparent_env(void) {
  char buf[64];
  if (strata_current_traceparent(buf, sizeof(buf)) == 0) return 0;
  return setenv("TRACEPARENT", buf, 1) == 0 ? 1 : 0;
}

int strata_start(const char* path, int level) {
  if (path == nullptr) return 0;
  strata::collect::SessionConfig config;
  config.path = path;
  config.level = level;
  if (const char* tp = getenv("TRACEPARENT")) config.context = strata::collect::parse_traceparent(tp);
  config.argv = strata::collect::read_argv();
  return strata::collect::start_session(std::move(config)) ? 1 : 0;
}

void strata_stop(void) { strata::collect::stop_session(); }

void strata_flush(void) {
  if (auto* s = current_session()) s->flush();
}

int strata_is_recording(void) { return current_session() != nullptr ? 1 : 0; }

}  // extern "C"
