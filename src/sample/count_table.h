// DCPI's aggregation table: a fixed-size, set-associative open-addressing table of counts keyed by
// (stack, span, event), one per thread. A key whose set is full evicts the set's smallest count
// into an overflow buffer (so nothing is lost, only written earlier and in more pieces); the table
// never grows and a lookup touches one cache-line-sized set. Drained into the trace at each epoch.
#pragma once

#include <cstdint>
#include <vector>

#include "format/sample_payloads.h"

namespace strata::sample {

class CountTable {
 public:
  static constexpr uint32_t kWays = 4;
  explicit CountTable(uint32_t sets = 256) : sets_(sets), entries_(size_t{sets} * kWays) {}

  // Adds `weight` to the key's count. Returns the evicted entry through *evicted when the key had to
  // make room (true), or false when nothing was evicted.
  bool add(uint32_t stack, uint64_t span, uint32_t event, uint32_t weight, format::SampleCount* evicted) {
    const uint32_t set = static_cast<uint32_t>(hash(stack, span, event) % sets_);
    Entry* e = &entries_[size_t{set} * kWays];
    Entry* smallest = e;
    for (uint32_t w = 0; w < kWays; ++w) {
      if (e[w].count != 0 && e[w].stack == stack && e[w].span == span && e[w].event == event) {
        if (e[w].count <= UINT32_MAX - weight) {
          e[w].count += weight;
          return false;
        }
        smallest = &e[w];  // would overflow 32 bits: evict it and start again
        break;
      }
      if (e[w].count == 0) {
        e[w] = {span, stack, event, weight};
        ++used_;
        return false;
      }
      if (e[w].count < smallest->count) smallest = &e[w];
    }
    *evicted = {0, smallest->stack, smallest->span, smallest->event, smallest->count};
    *smallest = {span, stack, event, weight};
    ++evictions_;
    return true;
  }

  // Moves every entry out (tid filled in by the caller) and empties the table.
  void drain(uint32_t tid, std::vector<format::SampleCount>* out) {
    for (Entry& e : entries_) {
      if (e.count == 0) continue;
      out->push_back({tid, e.stack, e.span, e.event, e.count});
      e.count = 0;
    }
    used_ = 0;
  }
  uint64_t evictions() const { return evictions_; }
  size_t used() const { return used_; }
  size_t capacity() const { return entries_.size(); }

 private:
  struct Entry {
    uint64_t span = 0;
    uint32_t stack = 0;
    uint32_t event = 0;
    uint32_t count = 0;  // 0: empty
  };
  static uint64_t hash(uint32_t stack, uint64_t span, uint32_t event) {
    uint64_t h = (uint64_t{stack} << 32 | event) * 0x9E3779B97F4A7C15ull ^ span * 0xC2B2AE3D27D4EB4Full;
    return h ^ (h >> 29);
  }
  uint32_t sets_;
  std::vector<Entry> entries_;
  size_t used_ = 0;
  uint64_t evictions_ = 0;
};

}  // namespace strata::sample
