// Correlation id -> value for the launches of a large trace (a million and more): open addressing
// with linear probing in one array, where a node-based map allocated a node per launch. Id 0 means
// "no correlation" everywhere in the importers and marks an empty slot here (it is never stored).
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace strata::import {

template <typename Value>
class CorrelationMap {
 public:
  // Inserts unless the id is present (the first value stays, as std::unordered_map::emplace).
  // Returns false for id 0 and for an id already present.
  bool emplace(uint64_t id, Value value) {
    if (id == 0) return false;
    if ((size_ + 1) * 2 > slots_.size()) grow();
    Slot& slot = slots_[probe(id)];
    if (slot.id == id) return false;
    slot = {id, std::move(value)};
    ++size_;
    return true;
  }
  const Value* find(uint64_t id) const {
    if (id == 0 || slots_.empty()) return nullptr;
    const Slot& slot = slots_[probe(id)];
    return slot.id == id ? &slot.value : nullptr;
  }
  bool contains(uint64_t id) const { return find(id) != nullptr; }
  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t id = 0;
    Value value{};
  };
  // The slot holding `id`, or the empty one where it would go (the table is never full).
  size_t probe(uint64_t id) const {
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((id * 0x9E3779B97F4A7C15ull) >> shift_) & mask;  // Fibonacci hashing
    while (slots_[i].id != 0 && slots_[i].id != id) i = (i + 1) & mask;
    return i;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    const size_t size = old.empty() ? 1024 : old.size() * 2;
    slots_.assign(size, Slot{});
    shift_ = 64;
    for (size_t s = size; s > 1; s >>= 1) --shift_;
    for (Slot& slot : old)
      if (slot.id != 0) slots_[probe(slot.id)] = std::move(slot);
  }
  std::vector<Slot> slots_;
  size_t size_ = 0;
  int shift_ = 64;
};

}  // namespace strata::import
