// W3C trace-context ("traceparent") so processes started by a traced process, and services that
// speak trace-context, join the same trace.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace strata::collect {

struct TraceContext {
  uint64_t trace_id_high = 0;
  uint64_t trace_id_low = 0;
  uint64_t parent_span_id = 0;  // 0: none (root)
  uint8_t flags = 1;            // sampled

  std::string trace_id_hex() const;
  // "00-<32 hex>-<16 hex>-<2 hex>"; span_id replaces the parent when non-zero.
  std::string traceparent(uint64_t span_id) const;
};

// Parses a traceparent header value; nullopt when malformed (wrong length, non-hex, all-zero ids,
// version ff), as the W3C spec requires.
std::optional<TraceContext> parse_traceparent(std::string_view text);
TraceContext new_trace_context();
uint64_t random_u64();
std::string hex16(uint64_t value);

}  // namespace strata::collect
