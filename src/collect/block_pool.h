// Bounded pool of fixed-size event blocks shared by all threads of a process. A thread takes a
// block when its current one fills (rare: once per ~4k events), so the pool lock is never on the
// per-event path; when the pool is empty events are dropped and counted instead of growing memory.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "strata/detail/hot_path.h"

namespace strata::collect {

inline constexpr size_t kBlockBytes = 64 * 1024;

struct Block {
  std::atomic<uint32_t> committed{0};  // slots written and visible to the consumer
  std::atomic<Block*> next{nullptr};   // set (release) once the producer moved on: block sealed
  std::atomic<bool> closed{false};     // the producer writes no more into it (next may still follow)
  uint32_t capacity = 0;               // slots
  detail::Slot* slots() { return reinterpret_cast<detail::Slot*>(this + 1); }
};

// The budget: `base_blocks` are kept once allocated; under a burst the pool may grow up to
// `max_blocks`, and blocks beyond the base are freed again when the writer hands them back.
class BlockPool {
 public:
  explicit BlockPool(size_t max_blocks) : BlockPool(max_blocks, max_blocks) {}
  BlockPool(size_t base_blocks, size_t max_blocks);
  ~BlockPool();
  BlockPool(const BlockPool&) = delete;
  BlockPool& operator=(const BlockPool&) = delete;

  // Null when the budget is spent and no block is free.
  Block* acquire();
  void release(Block* block);

  size_t max_blocks() const { return max_blocks_; }
  size_t base_blocks() const { return base_blocks_; }
  size_t in_use() const { return in_use_.load(std::memory_order_relaxed); }
  size_t peak_in_use() const { return peak_in_use_.load(std::memory_order_relaxed); }
  static uint32_t slots_per_block();

 private:
  std::mutex mu_;
  std::vector<Block*> free_;
  size_t allocated_ = 0;
  const size_t base_blocks_;
  const size_t max_blocks_;
  std::atomic<size_t> in_use_{0};
  std::atomic<size_t> peak_in_use_{0};
};

}  // namespace strata::collect
