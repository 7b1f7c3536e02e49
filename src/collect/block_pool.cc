#include "collect/block_pool.h"

#include <algorithm>
#include <cstdlib>
#include <new>

namespace strata::collect {

uint32_t BlockPool::slots_per_block() {
  return static_cast<uint32_t>((kBlockBytes - sizeof(Block)) / sizeof(detail::Slot));
}

BlockPool::BlockPool(size_t base_blocks, size_t max_blocks)
    : base_blocks_(std::min(base_blocks, max_blocks)), max_blocks_(max_blocks) {}

BlockPool::~BlockPool() {
  for (Block* b : free_) {
    b->~Block();
    std::free(b);
  }
}

Block* BlockPool::acquire() {
  Block* block = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      block = free_.back();
      free_.pop_back();
    } else if (allocated_ < max_blocks_) {
      void* mem = std::aligned_alloc(64, kBlockBytes);
      if (mem == nullptr) return nullptr;
      ++allocated_;
      block = new (mem) Block();
    } else {
      return nullptr;
    }
  }
  block->committed.store(0, std::memory_order_relaxed);
  block->next.store(nullptr, std::memory_order_relaxed);
  block->closed.store(false, std::memory_order_relaxed);
  block->capacity = slots_per_block();
  size_t now = in_use_.fetch_add(1, std::memory_order_relaxed) + 1;
  size_t peak = peak_in_use_.load(std::memory_order_relaxed);
  while (now > peak && !peak_in_use_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
  return block;
}

void BlockPool::release(Block* block) {
  in_use_.fetch_sub(1, std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (allocated_ <= base_blocks_) {
      free_.push_back(block);
      return;
    }
    --allocated_;  // grown for a burst: the memory goes back
  }
  block->~Block();
  std::free(block);
}

}  // namespace strata::collect
