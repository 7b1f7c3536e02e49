// Strata span API (C++). STRATA_SPAN("name", layer) records the enclosing scope as a span.
//
//   void forward() {
//     STRATA_SPAN("forward", model);   // level: application, model, layer, library, ...
//     ...
//   }
//
// Compile with -DSTRATA_ENABLED=0 and every macro compiles to nothing. At run time, a span deeper
// than the recorded level costs one load and compare; an enabled one a timestamp and two stores.
#ifndef STRATA_STRATA_HPP_
#define STRATA_STRATA_HPP_

#include "strata/strata.h"

#ifndef STRATA_ENABLED
#define STRATA_ENABLED 1
#endif

#if STRATA_ENABLED
#include "strata/detail/hot_path.h"

namespace strata {

namespace level {
inline constexpr uint8_t application = STRATA_LEVEL_APPLICATION;
inline constexpr uint8_t iteration = STRATA_LEVEL_ITERATION;
inline constexpr uint8_t model = STRATA_LEVEL_MODEL;
inline constexpr uint8_t layer = STRATA_LEVEL_LAYER;
inline constexpr uint8_t library = STRATA_LEVEL_LIBRARY;
inline constexpr uint8_t runtime_api = STRATA_LEVEL_RUNTIME_API;
inline constexpr uint8_t device = STRATA_LEVEL_DEVICE;
}  // namespace level

namespace activity {
inline constexpr uint8_t annotation = STRATA_ACTIVITY_ANNOTATION;
inline constexpr uint8_t cpu_op = STRATA_ACTIVITY_CPU_OP;
inline constexpr uint8_t library_call = STRATA_ACTIVITY_LIBRARY_CALL;
}  // namespace activity

// RAII scope for a static span site. Remembers whether its begin was recorded so a begin dropped
// (gated or buffer full) never leaves an orphan end behind.
class ScopedSpan {
 public:
  explicit ScopedSpan(const detail::SourceLocation* loc) {
    active_ = loc->level <= strata_level_gate.load(std::memory_order_relaxed) && detail::begin_static(loc);
  }
  ~ScopedSpan() {
    if (active_) detail::end_static();
  }
  ScopedSpan(const ScopedSpan&) = delete;
  ScopedSpan& operator=(const ScopedSpan&) = delete;

 private:
  bool active_;
};

// RAII scope for a span with a run-time name and attributes (goes through the C API).
class Span {
 public:
  Span(const char* name, int level) : id_(strata_span_begin(name, level)) {}
  ~Span() { strata_span_end(id_); }
  Span(const Span&) = delete;
  Span& operator=(const Span&) = delete;
  Span& set(const char* key, int64_t v) { strata_span_set_int(id_, key, v); return *this; }
  Span& set(const char* key, int v) { strata_span_set_int(id_, key, v); return *this; }
  Span& set(const char* key, double v) { strata_span_set_double(id_, key, v); return *this; }
  Span& set(const char* key, const char* v) { strata_span_set_string(id_, key, v); return *this; }
  Span& metric(const char* key, double v) { strata_span_set_metric(id_, key, v); return *this; }
  strata_span_id id() const { return id_; }

 private:
  strata_span_id id_;
};

}  // namespace strata

#define STRATA_CONCAT_INNER(a, b) a##b
#define STRATA_CONCAT(a, b) STRATA_CONCAT_INNER(a, b)
// STRATA_SPAN_AS(name, level, activity): the same, for a site whose spans are another activity than
// a program annotation (e.g. a library's own calls: STRATA_SPAN_AS("gemm", library, library_call)).
// The activity lives in the static site, so the hot path is unchanged.
#define STRATA_SPAN_AS(name, lvl, act)                                                              \
  static constexpr ::strata::detail::SourceLocation STRATA_CONCAT(strata_loc_, __LINE__){          \
      name, __func__, __FILE__, static_cast<uint32_t>(__LINE__), ::strata::level::lvl,             \
      ::strata::activity::act};                                                                     \
  ::strata::ScopedSpan STRATA_CONCAT(strata_scope_, __LINE__)(&STRATA_CONCAT(strata_loc_, __LINE__))
#define STRATA_SPAN(name, lvl) STRATA_SPAN_AS(name, lvl, annotation)
#else
#define STRATA_SPAN_AS(name, lvl, act) static_cast<void>(0)
#define STRATA_SPAN(name, lvl) static_cast<void>(0)
#endif

#endif  // STRATA_STRATA_HPP_
