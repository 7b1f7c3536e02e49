#include "collect/trace_context.h"

#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <cstdio>

namespace strata::collect {

uint64_t random_u64() {
  uint64_t v = 0;
  if (getrandom(&v, sizeof(v), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(v))) {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    v = (static_cast<uint64_t>(ts.tv_nsec) << 20) ^ static_cast<uint64_t>(getpid()) ^
        (static_cast<uint64_t>(ts.tv_sec) * 0x9E3779B97F4A7C15ull);
  }
  return v;
}

std::string hex16(uint64_t value) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(value));
  return buf;
}

std::string TraceContext::trace_id_hex() const { return hex16(trace_id_high) + hex16(trace_id_low); }

std::string TraceContext::traceparent(uint64_t span_id) const {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "00-%016llx%016llx-%016llx-%02x",
                static_cast<unsigned long long>(trace_id_high), static_cast<unsigned long long>(trace_id_low),
                static_cast<unsigned long long>(span_id ? span_id : parent_span_id), flags);
  return buf;
}

namespace {
bool parse_hex(std::string_view text, uint64_t* out) {
  uint64_t v = 0;
  for (char c : text) {
    int d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else return false;  // the spec allows lowercase only
    v = (v << 4) | static_cast<uint64_t>(d);
  }
  *out = v;
  return true;
}
}  // namespace

std::optional<TraceContext> parse_traceparent(std::string_view text) {
  // version(2) - trace-id(32) - parent-id(16) - flags(2); future versions may append fields.
  if (text.size() < 55 || text[2] != '-' || text[35] != '-' || text[52] != '-') return std::nullopt;
  if (text.size() > 55 && text[55] != '-') return std::nullopt;
  uint64_t version, hi, lo, parent, flags;
  if (!parse_hex(text.substr(0, 2), &version) || version == 0xff) return std::nullopt;
  if (version == 0 && text.size() != 55) return std::nullopt;
  if (!parse_hex(text.substr(3, 16), &hi) || !parse_hex(text.substr(19, 16), &lo)) return std::nullopt;
  if (!parse_hex(text.substr(36, 16), &parent) || !parse_hex(text.substr(53, 2), &flags)) return std::nullopt;
  if ((hi | lo) == 0 || parent == 0) return std::nullopt;
  TraceContext ctx;
  ctx.trace_id_high = hi;
  ctx.trace_id_low = lo;
  ctx.parent_span_id = parent;
  ctx.flags = static_cast<uint8_t>(flags);
  return ctx;
}

TraceContext new_trace_context() {
  TraceContext ctx;
  do {
    ctx.trace_id_high = random_u64();
    ctx.trace_id_low = random_u64();
  } while ((ctx.trace_id_high | ctx.trace_id_low) == 0);
  return ctx;
}

}  // namespace strata::collect
