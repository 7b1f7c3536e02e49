// Internal: the data the inline C++ span macros touch. Shared by the public header and the runtime
// (src/collect); not an API. Kept tiny so the enabled hot path is a gate check, a timestamp and two
// stores into a per-thread buffer, and the disabled path is one load and compare.
#ifndef STRATA_DETAIL_HOT_PATH_H_
#define STRATA_DETAIL_HOT_PATH_H_

#include <atomic>
#include <cstdint>

#if defined(__x86_64__)
#include <x86intrin.h>
#else
#include <time.h>
#endif

namespace strata::detail {

// A static, constexpr description of a span site (Tracy's idiom): the hot path stores only a
// pointer to it; names are resolved by the background writer, once per site.
struct alignas(16) SourceLocation {
  const char* name;
  const char* function;
  const char* file;
  uint32_t line;
  uint8_t level;
  uint8_t activity;  // STRATA_ACTIVITY_* (strata::ActivityType); 0 is read as an annotation
};

// One 16-byte event slot. For a static begin, `word` is the SourceLocation pointer (16-aligned, so
// its low 4 bits are 0); other events carry a tag in the low 4 bits (see src/collect/events.h).
struct Slot {
  uint64_t ts;
  uint64_t word;
};

inline constexpr uint64_t kTagEnd = 1;

// Producer-side view of the calling thread's current buffer block.
struct ThreadCursor {
  Slot* cur = nullptr;
  std::atomic<Slot*> end{nullptr};  // the writer sets end = cur to retire a cursor when recording stops
  Slot* base = nullptr;
  std::atomic<uint32_t>* committed = nullptr;  // slots the consumer may read in this block
};

inline uint64_t now_ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
#endif
}

}  // namespace strata::detail

extern "C" {
// Deepest level recorded now; 0 when not recording. Read relaxed on every span site.
extern std::atomic<int> strata_level_gate;
}
// The calling thread's cursor (initial-exec TLS: no call on access). Null until first use.
extern __thread strata::detail::ThreadCursor* strata_tls_cursor __attribute__((tls_model("initial-exec")));

namespace strata::detail {

// Out of line: buffer setup, block switching, and drop accounting.
bool begin_static_slow(const SourceLocation* loc);
void end_static_slow();

inline bool begin_static(const SourceLocation* loc) {
  ThreadCursor* c = strata_tls_cursor;
  if (__builtin_expect(c != nullptr && c->cur != c->end.load(std::memory_order_relaxed), 1)) {
    Slot* s = c->cur;
    s->ts = now_ticks();
    s->word = reinterpret_cast<uint64_t>(loc);
    c->cur = s + 1;
    c->committed->store(static_cast<uint32_t>(c->cur - c->base), std::memory_order_release);
    return true;
  }
  return begin_static_slow(loc);
}

inline void end_static() {
  ThreadCursor* c = strata_tls_cursor;
  uint64_t ts = now_ticks();
  if (__builtin_expect(c != nullptr && c->cur != c->end.load(std::memory_order_relaxed), 1)) {
    Slot* s = c->cur;
    s->ts = ts;
    s->word = kTagEnd;
    c->cur = s + 1;
    c->committed->store(static_cast<uint32_t>(c->cur - c->base), std::memory_order_release);
    return;
  }
  end_static_slow();
}

}  // namespace strata::detail

#endif  // STRATA_DETAIL_HOT_PATH_H_
