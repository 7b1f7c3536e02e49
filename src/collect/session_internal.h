// Internal to the collector: the per-thread state shared by the producer side (session.cc) and the
// writer thread (session_writer.cc), and the span id layout. Not an API.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
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

// Ends the producer could not write for lack of buffer space (the budget was spent): kept here, in
// order, and written as one kTagEndDeferred event ahead of the thread's next event that fits, so the
// writer closes those spans at their true end times and the stack stays right for what follows.
inline constexpr uint32_t kMaxDeferredEnds = 256;

// Is `id` an API span id of this session (salt) begun on a thread? Returns that thread's index.
inline bool api_span_owner(uint64_t id, uint64_t salt, uint32_t* thread_index) {
  if ((id >> 52) != salt || ((id >> 31) & 1) != 0) return false;
  *thread_index = static_cast<uint32_t>((id >> 32) & 0xFFFFF);
  return true;
}

// A span the writer has seen begin and not yet end.
struct OpenSpan {
  static constexpr int64_t kNoKnownEnd = INT64_MIN;
  uint64_t id;
  uint64_t parent;
  int64_t start_ns;
  int64_t known_end;  // kNoKnownEnd, or the end another thread recorded (applied in time order)
  uint32_t name;
  uint8_t level;
  uint8_t activity;  // ActivityType
  bool api;  // ended by id (on any thread); static spans end with kTagEnd, innermost static first
  std::vector<AttrRecord> attrs;
};

struct ThreadState {
  detail::ThreadCursor cursor;  // producer
  Session* session = nullptr;
  uint32_t tid = 0;
  uint32_t index = 0;
  uint64_t next_api_counter = 1;  // producer
  std::vector<uint64_t> api_stack;  // producer: open API spans, for traceparent
  std::atomic<uint64_t> drops[kDropCauseCount] = {};
  std::atomic<bool> exited{false};

  // The block chain. The producer links a fresh block after its current one (or sets `head` when it
  // holds none); the writer takes `head`, follows `next`, and takes back a block that is closed and
  // read to the end with no successor (the producer could not get a fresh one), so a spent budget
  // never leaves blocks stranded as some thread's full current block.
  std::mutex chain_mu;
  Block* write_block = nullptr;  // guarded by chain_mu
  Block* head = nullptr;         // guarded by chain_mu

  // Ends deferred for lack of space (producer writes; the writer reads them only once `exited`).
  // {ticks, span id}; id 0: the innermost static span. Allocated at the first deferral: thread
  // states live as long as the session, and most threads never need it.
  std::unique_ptr<detail::Slot[]> deferred;
  std::atomic<uint32_t> deferred_count{0};
  std::atomic<uint32_t> deferred_overflow{0};  // static ends beyond the list: closed as unfinished
  std::atomic<uint64_t> deferred_overflow_ticks{0};

  // API spans of this thread ended on another thread: removed from api_stack at the next API call.
  std::mutex mail_mu;
  std::vector<uint64_t> mail;
  std::atomic<bool> has_mail{false};

  // Consumer (writer thread) side.
  Block* read_block = nullptr;
  uint32_t read_pos = 0;
  uint64_t next_writer_counter = 1;
  int64_t last_ns = 0;
  using Open = OpenSpan;
  std::vector<Open> open;
  uint32_t open_with_known_end = 0;
};

}  // namespace strata::collect
