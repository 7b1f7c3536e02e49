// oneDNN verbose capture: library spans for oneDNN executions the interposer cannot see (oneDNN
// linked statically into the framework with hidden symbols, as in PyTorch's pip wheels; programs
// that dlopen+dlsym libdnnl). At load, with the library level recorded, it sets ONEDNN_VERBOSE=1
// and ONEDNN_VERBOSE_TIMESTAMP=1 ("1" is the one value every oneDNN from v1 to v3 reads as
// "profile executions": v2.x parses it with atoi, so "profile_exec" would mean off there), and
// takes the lines back out of the process's printf.
//
// Why interpose printf rather than read stdout through a pipe. oneDNN (v1.0 - v3.7 at least) prints
// every verbose line with one printf/__printf_chk call (v3.6+: printf("%s", line)) on the thread
// that ran the primitive, right after it ran, and then fflush(stdout); it has no API to send them
// elsewhere (v3.5's spdlog file logger is an experimental build option no framework enables).
// printf is a libc import even where oneDNN itself is linked statically, so an LD_PRELOADed printf
// sees the lines of any oneDNN in the process, and sees them
//   - on the executing thread, in the executing process: spans get the right thread and pid and
//     their parent is the op open on that thread, exactly as the interposer's spans do; a pipe
//     gets a byte stream from every process of the command with no thread or process in it;
//   - before they reach stdout: the user's stdout keeps its file (a terminal stays a terminal,
//     Python keeps its buffering), no forwarding thread reorders it against stderr;
//   - on Strata's clock: the line's realtime timestamp is placed with an offset read at arrival.
// The cost to everyone else's printf is one load (capture armed?) and a prefix compare; calls
// whose format is not oneDNN's are forwarded to vprintf/__vprintf_chk untouched.
//
// Only the lines the capture caused (exec profiling and info headers) are swallowed. If the user
// set ONEDNN_VERBOSE themselves (to anything but 0), every line is printed as usual and exec lines
// are still turned into spans.
#undef _FORTIFY_SOURCE  // this file defines printf and __printf_chk: no inline fortify wrappers
#include <time.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "collect/session.h"
#include "core/env_vars.h"
#include "core/level.h"
#include "core/span_record.h"
#include "onednn/onednn_tracer.h"
#include "onednn/verbose_parser.h"
#include "strata/strata.h"

extern "C" int __vprintf_chk(int flag, const char* format, va_list ap);

namespace strata::onednn {

thread_local bool tls_in_execute = false;
thread_local strata_span_id tls_execute_span = 0;

namespace {

Mode g_mode = Mode::kAuto;
std::atomic<bool> g_armed{false};  // verbose capture on
bool g_swallow = false;            // the capture turned verbose on, so its lines are not the user's

// Counters, relaxed atomics: lines come from any thread.
struct Counters {
  std::atomic<uint64_t> lines{0}, exec{0}, info{0}, create{0}, other{0};
  std::atomic<uint64_t> spans{0}, enriched{0}, untimed{0}, no_session{0}, gated{0};
  std::atomic<uint64_t> malformed[static_cast<size_t>(Malformed::kCount)] = {};
} g_counts;

constexpr const char* kOwnedMarker = env::kOnednnVerboseOwned;

int64_t read_ns(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// One thread's capture state: its partial line and reusable strings (no allocation per line once
// warm). Reached through a trivially destructible pointer: printf can run after the thread's
// thread_local destructors (exit() runs them before atexit handlers), and must then still work.
struct ThreadCapture {
  LineAssembler assembler;
  std::string text, name, shapes;
  std::string values[4];
  bool busy = false;
};
thread_local ThreadCapture* tls_capture = nullptr;
thread_local bool tls_capture_gone = false;
struct CaptureOwner {
  ~CaptureOwner() {
    if (tls_capture != nullptr && tls_capture->assembler.pending()) {  // a half line was meant for stdout
      std::string rest = tls_capture->assembler.take_pending();
      std::fwrite(rest.data(), 1, rest.size(), stdout);
    }
    delete tls_capture;
    tls_capture = nullptr;
    tls_capture_gone = true;
  }
};
ThreadCapture* make_thread_capture() {
  thread_local CaptureOwner owner;  // constructed here, so its destructor frees the state
  (void)owner;
  tls_capture = new ThreadCapture;
  return tls_capture;
}

void print_through(std::string_view line) {
  flockfile(stdout);  // line and newline together, as the one printf call would have written them
  fwrite_unlocked(line.data(), 1, line.size(), stdout);
  fputc_unlocked('\n', stdout);
  funlockfile(stdout);
}

// Adds what only the verbose line knows to the interposer's span for the same execution.
void enrich(ThreadCapture& c, strata_span_id id, const VerboseLine& v) {
  auto set = [&](const char* key, std::string_view value, int slot) {
    if (value.empty()) return;
    c.values[slot].assign(value);
    strata_span_set_string(id, key, c.values[slot].c_str());
  };
  set("formats", v.mds, 0);
  set("attrs", v.attrs, 1);
  set("aux", v.aux, 2);
  set("desc", v.desc, 3);
  g_counts.enriched.fetch_add(1, std::memory_order_relaxed);
}

void emit(ThreadCapture& c, const VerboseLine& v) {
  collect::Session* session = collect::current_session();
  if (session == nullptr) {
    g_counts.no_session.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const int64_t mono = read_ns(CLOCK_MONOTONIC);
  const int64_t real = read_ns(CLOCK_REALTIME);
  const Placement at = place_execution(v, mono, real);
  if (!at.from_timestamp) g_counts.untimed.fetch_add(1, std::memory_order_relaxed);
  SpanRecord r;
  // The op open on this thread issued the execution: the same parent the interposer's spans get.
  r.parent_id = session->current_api_span();
  r.start_ns = at.start_ns;
  r.end_ns = at.end_ns;
  r.level = static_cast<uint8_t>(Level::kLibrary);
  r.kind = static_cast<uint8_t>(SpanKind::kSpan);
  r.activity = static_cast<uint8_t>(ActivityType::kLibraryCall);
  r.clock = static_cast<uint8_t>(ClockDomain::kMonotonic);
  c.name.assign("onednn::");
  c.name.append(v.primitive);
  shapes_from_desc(v.primitive, v.prop_kind, v.desc, &c.shapes);
  collect::AttrDraft attrs[12];
  size_t n = 0;
  auto add = [&](std::string_view key, std::string_view value) {
    if (!value.empty()) attrs[n++] = {key, AttrType::kString, 0, 0, value};
  };
  add("impl", v.impl);
  add("shapes", c.shapes);
  add("dtype", first_dtype(v.mds));
  if (v.prop_kind != "undef") add("prop_kind", v.prop_kind);
  add("formats", v.mds);
  add("attrs", v.attrs);
  add("aux", v.aux);
  add("desc", v.desc);
  add("source", "verbose");
  // FLOPs and bytes from the line's descriptor (primitive_cost.h), as the interposer records them.
  PrimitiveProblem problem;
  if (problem_from_verbose(v, &problem)) {
    PrimitiveCost cost = primitive_cost(problem);
    if (cost.flops) attrs[n++] = {"flops", AttrType::kMetric, 0, *cost.flops, {}};
    if (cost.bytes) attrs[n++] = {"bytes", AttrType::kMetric, 0, *cost.bytes, {}};
  }
  session->emit_complete(r, c.name, std::span<const collect::AttrDraft>(attrs, n));
  g_counts.spans.fetch_add(1, std::memory_order_relaxed);
}

void count(const VerboseLine& v) {
  g_counts.lines.fetch_add(1, std::memory_order_relaxed);
  switch (v.event) {
    case VerboseEvent::kExec: g_counts.exec.fetch_add(1, std::memory_order_relaxed); break;
    case VerboseEvent::kInfo: g_counts.info.fetch_add(1, std::memory_order_relaxed); break;
    case VerboseEvent::kCreate: g_counts.create.fetch_add(1, std::memory_order_relaxed); break;
    case VerboseEvent::kMalformed:
      g_counts.malformed[static_cast<size_t>(v.malformed)].fetch_add(1, std::memory_order_relaxed);
      break;
    default: g_counts.other.fetch_add(1, std::memory_order_relaxed); break;
  }
}

void handle_line(ThreadCapture& c, std::string_view line) {
  const VerboseLine v = parse_verbose_line(line);
  if (v.event == VerboseEvent::kNotVerbose) {
    print_through(line);  // text that followed a held partial line: not oneDNN's
    return;
  }
  count(v);
  const bool ours = v.event == VerboseEvent::kExec || v.event == VerboseEvent::kInfo ||
                    v.event == VerboseEvent::kMalformed;
  if (!(g_swallow && ours)) print_through(line);
  if (v.event != VerboseEvent::kExec) return;
  if (tls_in_execute) {
    if (tls_execute_span != 0) enrich(c, tls_execute_span, v);
    return;
  }
  if (strata_level_enabled(STRATA_LEVEL_LIBRARY) == 0) {
    g_counts.gated.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  emit(c, v);
}

bool has_marker_prefix(const char* s) {
  return std::strncmp(s, "onednn_verbose", 14) == 0 || std::strncmp(s, "dnnl_verbose", 12) == 0 ||
         std::strncmp(s, "mkldnn_verbose", 14) == 0;
}

// Whether this printf call may carry a verbose line: the format starts with the marker (v1 - v3.5:
// "onednn_verbose%s,exec,%s,%g\n"), or it is "%s" with an argument that does (v3.6+). (A thread
// holding the first half of a line sends the next call through as well.)
bool may_be_verbose(const char* format, va_list ap) {
  if (has_marker_prefix(format)) return true;
  if (format[0] == '%' && format[1] == 's' && format[2] == '\0') {
    va_list copy;
    va_copy(copy, ap);
    const char* arg = va_arg(copy, const char*);
    va_end(copy);
    return arg != nullptr && has_marker_prefix(arg);
  }
  return false;
}

// Formats the call into the thread's buffer and feeds it line by line; returns printf's result.
int capture(ThreadCapture& c, const char* format, va_list ap) {
  va_list copy;
  va_copy(copy, ap);
  c.text.resize(c.text.capacity() > 256 ? c.text.capacity() : 256);
  int n = std::vsnprintf(c.text.data(), c.text.size() + 1, format, copy);
  va_end(copy);
  if (n < 0) return n;
  if (static_cast<size_t>(n) > c.text.size()) {
    c.text.resize(static_cast<size_t>(n));
    va_copy(copy, ap);
    std::vsnprintf(c.text.data(), c.text.size() + 1, format, copy);
    va_end(copy);
  }
  c.text.resize(static_cast<size_t>(n));
  c.busy = true;
  c.assembler.feed(c.text, [&c](std::string_view line) { handle_line(c, line); });
  c.busy = false;
  return n;
}

// Non-null when this call should go through the capture.
ThreadCapture* capture_for(const char* format, va_list ap) {
  if (!g_armed.load(std::memory_order_relaxed) || format == nullptr) return nullptr;
  ThreadCapture* c = tls_capture;
  const bool pending = c != nullptr && c->assembler.pending();
  if (!pending && !may_be_verbose(format, ap)) return nullptr;
  if (c == nullptr) {
    if (tls_capture_gone) return nullptr;  // thread exiting: print as usual
    c = make_thread_capture();
  }
  return c->busy ? nullptr : c;
}

const char* mode_name(Mode m) {
  switch (m) {
    case Mode::kOff: return "off";
    case Mode::kAuto: return "auto";
    case Mode::kInterpose: return "interpose";
    case Mode::kVerbose: return "verbose";
  }
  return "auto";
}

void report_at_exit() {
  collect::Session* session = collect::current_session();
  if (session == nullptr) return;
  auto get = [](const std::atomic<uint64_t>& a) { return std::to_string(a.load(std::memory_order_relaxed)); };
  session->set_collector_property("onednn.mode", mode_name(g_mode));
  session->set_collector_property("onednn.verbose", g_swallow ? "captured" : "printed (ONEDNN_VERBOSE set by the user)");
  session->set_collector_property("onednn.verbose_lines", get(g_counts.lines));
  session->set_collector_property("onednn.verbose_exec_lines", get(g_counts.exec));
  session->set_collector_property("onednn.verbose_spans", get(g_counts.spans));
  session->set_collector_property("onednn.verbose_enriched_spans", get(g_counts.enriched));
  session->set_collector_property("onednn.verbose_untimestamped", get(g_counts.untimed));
  for (size_t i = 1; i < static_cast<size_t>(Malformed::kCount); ++i) {
    uint64_t n = g_counts.malformed[i].load(std::memory_order_relaxed);
    if (n != 0)
      session->set_collector_drops(std::string("onednn_verbose_") + malformed_name(static_cast<Malformed>(i)), n);
  }
}

Mode parse_mode(const char* text) {
  if (text == nullptr || *text == '\0' || std::strcmp(text, "auto") == 0) return Mode::kAuto;
  if (std::strcmp(text, "interpose") == 0) return Mode::kInterpose;
  if (std::strcmp(text, "verbose") == 0) return Mode::kVerbose;
  if (std::strcmp(text, "off") == 0) return Mode::kOff;
  std::fprintf(stderr, "strata: STRATA_ONEDNN_MODE=%s is not auto, interpose, verbose or off; using auto\n", text);
  return Mode::kAuto;
}

// A verbose setting the user made (not ours, and not "off", which capturing cannot change).
bool user_wants_verbose() {
  if (const char* owned = std::getenv(kOwnedMarker); owned != nullptr && *owned == '1') return false;
  for (const char* name : {"ONEDNN_VERBOSE", "DNNL_VERBOSE", "MKLDNN_VERBOSE"}) {
    const char* v = std::getenv(name);
    if (v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0 && std::strcmp(v, "none") != 0) return true;
  }
  return false;
}

__attribute__((constructor)) void arm_capture() {
  g_mode = parse_mode(std::getenv(env::kOnednnMode));
  if (g_mode != Mode::kAuto && g_mode != Mode::kVerbose) return;
  // libstrata (a dependency, so initialized first) has started recording from the environment.
  if (strata_get_level() < STRATA_LEVEL_LIBRARY) return;
  g_swallow = !user_wants_verbose();
  if (g_swallow) {
    // oneDNN reads these lazily, at its first primitive, long after this constructor. Children
    // inherit them with the marker, so their capture knows the setting is Strata's, not the user's.
    setenv("ONEDNN_VERBOSE", "1", 1);
    setenv("DNNL_VERBOSE", "1", 1);  // v1.x reads only the DNNL_ name
    setenv(kOwnedMarker, "1", 1);
  }
  if (std::getenv("ONEDNN_VERBOSE_TIMESTAMP") == nullptr && std::getenv("DNNL_VERBOSE_TIMESTAMP") == nullptr)
    setenv("ONEDNN_VERBOSE_TIMESTAMP", "1", 1);
  g_armed.store(true, std::memory_order_relaxed);
  // Registered after libstrata's own exit handler, so it runs first, while the session is open.
  std::atexit(report_at_exit);
}

}  // namespace

Mode mode() { return g_mode; }
bool verbose_armed() { return g_armed.load(std::memory_order_relaxed); }

}  // namespace strata::onednn

using strata::onednn::capture;
using strata::onednn::capture_for;

extern "C" __attribute__((visibility("default"))) int printf(const char* __restrict format, ...) {
  va_list ap;
  va_start(ap, format);
  int n;
  if (auto* c = capture_for(format, ap)) n = capture(*c, format, ap);
  else n = std::vprintf(format, ap);
  va_end(ap);
  return n;
}

// What printf becomes under _FORTIFY_SOURCE (Debian builds libdnnl so).
extern "C" __attribute__((visibility("default"))) int __printf_chk(int flag, const char* __restrict format, ...) {
  va_list ap;
  va_start(ap, format);
  int n;
  if (auto* c = capture_for(format, ap)) n = capture(*c, format, ap);
  else n = __vprintf_chk(flag, format, ap);
  va_end(ap);
  return n;
}
