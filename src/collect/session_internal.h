// Internal to the collector: the per-thread state shared by the producer side (session.cc) and the
// writer thread (session_writer.cc), and the span id layout. Not an API.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "collect/block_pool.h"
#include "collect/session.h"
#include "core/span_record.h"
#include "strata/detail/hot_path.h"

namespace strata::collect {

// Span ids: salt (12 bits, per process) | thread index (20) | origin (1: 0 = API, 1 = writer) |
// counter (31). Unique within a process for 2^31 spans per thread and origin; the salt keeps
// processes of one trace apart.
inline uint64_t make_span_id(uint64_t salt, uint32_t thread_index, bool writer_assigned, uint64_t counter) {
  return (salt << 52) | (uint64_t{thread_index & 0xFFFFF} << 32) | (uint64_t{writer_assigned} << 31) |
         (counter & 0x7FFFFFFF);
}

struct ThreadState {
  detail::ThreadCursor cursor;  // producer
  Block* write_block = nullptr;  // producer
  std::atomic<Block*> head{nullptr};
  Session* session = nullptr;
  uint32_t tid = 0;
  uint32_t index = 0;
  uint64_t next_api_counter = 1;  // producer
  std::vector<uint64_t> api_stack;  // producer: open API spans, for traceparent
  std::atomic<uint64_t> drops[kDropCauseCount] = {};
  std::atomic<bool> exited{false};

  // Consumer (writer thread) side.
  Block* read_block = nullptr;
  uint32_t read_pos = 0;
  uint64_t next_writer_counter = 1;
  int64_t last_ns = 0;
  struct Open {
    uint64_t id;
    uint64_t parent;
    int64_t start_ns;
    uint32_t name;
    uint8_t level;
    std::vector<AttrRecord> attrs;
  };
  std::vector<Open> open;
};

}  // namespace strata::collect
