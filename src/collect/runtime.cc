// Process-wide runtime: the C API and the one session of the process (start, stop). Starting from
// the environment and fork handling are in env_start.cc; every way out of the process (exit, _exit,
// signals) in exit_hooks.cc. One session per process at a time.
#include "collect/runtime.h"

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

#include "collect/runtime_internal.h"
#include "collect/session.h"
#include "core/level.h"
#include "strata/strata.h"

// The C header's activity numbers are the core enum's (both are written into trace files).
#define STRATA_CHECK_ACTIVITY(macro, value)                               \
  static_assert((macro) == static_cast<int>(strata::ActivityType::value), \
                #macro " disagrees with ActivityType")
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

// The C header's level numbers are the core enum's, and it has one for each level of core.
#define STRATA_CHECK_LEVEL(macro, value) \
  static_assert((macro) == static_cast<int>(strata::Level::value), #macro " disagrees with Level")
STRATA_CHECK_LEVEL(STRATA_LEVEL_APPLICATION, kApplication);
STRATA_CHECK_LEVEL(STRATA_LEVEL_ITERATION, kIteration);
STRATA_CHECK_LEVEL(STRATA_LEVEL_MODEL, kModel);
STRATA_CHECK_LEVEL(STRATA_LEVEL_LAYER, kLayer);
STRATA_CHECK_LEVEL(STRATA_LEVEL_LIBRARY, kLibrary);
STRATA_CHECK_LEVEL(STRATA_LEVEL_RUNTIME_API, kRuntimeApi);
STRATA_CHECK_LEVEL(STRATA_LEVEL_DEVICE, kDevice);
STRATA_CHECK_LEVEL(STRATA_LEVEL_CPU_SAMPLE, kCpuSample);
#undef STRATA_CHECK_LEVEL
static_assert(strata::kLevels.size() == 8,
              "core has a new level: add its STRATA_LEVEL_* to include/strata/strata.h and a check above");

extern "C" {
__attribute__((visibility("default"))) std::atomic<int> strata_level_gate{0};
}
__attribute__((visibility("default"))) __thread strata::detail::ThreadCursor* strata_tls_cursor
    __attribute__((tls_model("initial-exec"))) = nullptr;

namespace strata::collect::rt {

std::atomic<Session*> g_session{nullptr};
std::mutex g_control_mu;

namespace {
// Stopped sessions stay allocated (threads may still hold pointers into their buffers) and stay
// reachable from this plain array (no destructor runs at exit), so leak checkers see them as owned.
constexpr int kMaxRetiredSessions = 256;
Session* g_retired_sessions[kMaxRetiredSessions];
int g_retired_count = 0;
}  // namespace

std::string read_argv() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string argv((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!argv.empty() && argv.back() == '\0') argv.pop_back();
  return argv;
}

bool start_session_locked(SessionConfig config) {
  if (g_session.load() != nullptr) return false;
  // Sessions are never freed: threads may still hold pointers into their buffers (see stop()).
  auto* session = new Session(std::move(config));
  if (!session->start()) {
    std::fprintf(stderr, "strata: recording disabled: %s\n", session->error().c_str());
    delete session;
    return false;
  }
  g_session.store(session, std::memory_order_release);
  strata_level_gate.store(session->config().level);
  return true;
}

bool start_session(SessionConfig config) {
  std::lock_guard<std::mutex> lock(g_control_mu);
  if (g_session.load() != nullptr) {  // the API's start: the caller is told, not left with a bare 0
    std::fprintf(stderr,
                 "strata: not started: this process is already recording (strata record, STRATA_OUTPUT or an "
                 "earlier start); stop that recording first\n");
    return false;
  }
  return start_session_locked(std::move(config));
}

void stop_session() {
  std::lock_guard<std::mutex> lock(g_control_mu);
  g_pending_fork_start.store(false);
  Session* session = g_session.load();
  if (session == nullptr) return;
  strata_level_gate.store(0);
  session->stop();
  if (!session->error().empty()) std::fprintf(stderr, "strata: %s\n", session->error().c_str());
  g_session.store(nullptr);
  if (g_retired_count < kMaxRetiredSessions) g_retired_sessions[g_retired_count++] = session;
  merge_descendants_if_owner();
}

}  // namespace strata::collect::rt

namespace strata::collect {

Session* current_session() {
  Session* s = rt::g_session.load(std::memory_order_acquire);
  if (__builtin_expect(s == nullptr, 0) && rt::g_pending_fork_start.load(std::memory_order_relaxed))
    return rt::start_pending_after_fork();
  return s;
}
bool start_recording(SessionConfig config) { return rt::start_session(std::move(config)); }
void stop_recording() { rt::stop_session(); }

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

void strata_span_set_ints(strata_span_id span, const char* const* keys, const int64_t* values, size_t count) {
  if (span == 0 || keys == nullptr || values == nullptr) return;
  if (auto* s = current_session()) s->set_int_attrs(span, keys, values, count);
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

int strata_levels(const char** names, int* values, int capacity) {
  int index = 0;
  for (const auto& [level, name] : strata::kLevels) {
    if (index < capacity) {
      // string_views of literals: NUL-terminated, static
      if (names != nullptr) names[index] = name.data();
      if (values != nullptr) values[index] = static_cast<int>(level);
    }
    ++index;
  }
  return index;
}

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
  if (path == nullptr) {
    std::fprintf(stderr, "strata: strata_start: not started: the path is null\n");
    return 0;
  }
  strata::collect::SessionConfig config;
  config.path = path;
  config.level = level;
  // secure_getenv: a setuid program does not take its trace context from its caller.
  if (const char* tp = secure_getenv("TRACEPARENT")) config.context = strata::collect::parse_traceparent(tp);
  config.argv = strata::collect::rt::read_argv();
  return strata::collect::rt::start_session(std::move(config)) ? 1 : 0;
}

void strata_stop(void) { strata::collect::rt::stop_session(); }

void strata_flush(void) {
  if (auto* s = current_session()) s->flush();
}

int strata_is_recording(void) { return current_session() != nullptr ? 1 : 0; }

}  // extern "C"
