// The memory tracker's table of live blocks: address -> (size, the inner allocator's context and
// deleter). Open addressing with linear probing and backward-shift deletion (no tombstones, so a
// long run of allocations and frees never degrades it), grown at half load. Not thread-safe: the
// tracker calls it under its mutex. Header-only and free of PyTorch types, for its unit test.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace strata::torch_tracer {

struct Block {
  uintptr_t address = 0;  // 0: empty slot
  int64_t size = 0;
  void* inner_context = nullptr;
  void (*inner_deleter)(void*) = nullptr;  // c10::DeleterFnPtr
};

class BlockTable {
 public:
  BlockTable() : slots_(1024) {}

  // May throw std::bad_alloc (growth): nothing changed then. `b.address` must not be 0 or present.
  void insert(const Block& b) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    place(b);
    ++count_;
  }

  // Removes the block at `address` into *out; false when there is none.
  bool take(uintptr_t address, Block* out) {
    const size_t mask = slots_.size() - 1;
    for (size_t i = slot_of(address);; i = (i + 1) & mask) {
      if (slots_[i].address == 0) return false;
      if (slots_[i].address != address) continue;
      *out = slots_[i];
      // Backward shift: a later member of the probe run moves into the hole when the hole lies
      // between its home slot and where it sits.
      size_t hole = i;
      for (size_t j = (i + 1) & mask; slots_[j].address != 0; j = (j + 1) & mask) {
        size_t home = slot_of(slots_[j].address);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
          slots_[hole] = slots_[j];
          hole = j;
        }
      }
      slots_[hole] = Block{};
      --count_;
      return true;
    }
  }

  size_t size() const { return count_; }
  size_t capacity() const { return slots_.size(); }

 private:
  size_t slot_of(uintptr_t address) const {
    // Fibonacci hashing of the address (blocks are 16- to 64-byte aligned: low bits carry nothing).
    uint64_t h = (static_cast<uint64_t>(address) >> 4) * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
  }
  void place(const Block& b) {
    const size_t mask = slots_.size() - 1;
    size_t i = slot_of(b.address);
    while (slots_[i].address != 0) i = (i + 1) & mask;
    slots_[i] = b;
  }
  void grow() {
    std::vector<Block> old(slots_.size() * 2);
    old.swap(slots_);
    for (const Block& b : old)
      if (b.address != 0) place(b);
  }

  std::vector<Block> slots_;
  size_t count_ = 0;
};

}  // namespace strata::torch_tracer
