// The memory tracker's live-block table against std::unordered_map: random inserts and removals at
// realistic sizes (hundreds of thousands of live blocks, addresses clustered like an allocator's),
// every lookup checked, growth and backward-shift deletion exercised.
#include "torch/block_table.h"

#include <gtest/gtest.h>

#include <random>
#include <unordered_map>
#include <vector>

namespace strata::torch_tracer {
namespace {

TEST(BlockTable, MatchesAMapUnderRandomChurn) {
  std::mt19937_64 rng(7);
  BlockTable table;
  std::unordered_map<uintptr_t, int64_t> reference;
  std::vector<uintptr_t> live;
  // Addresses from a few arenas, 64-byte aligned, reused after removal (as malloc does).
  std::vector<uintptr_t> free_addresses;
  uintptr_t next = 0x7f0000000000;
  for (int step = 0; step < 600'000; ++step) {
    const bool grow_phase = (step / 100'000) % 2 == 0;
    const bool insert =
        live.empty() || std::uniform_int_distribution<int>(0, 99)(rng) < (grow_phase ? 70 : 30);
    if (insert) {
      uintptr_t address;
      if (!free_addresses.empty() && rng() % 2) {
        address = free_addresses.back();
        free_addresses.pop_back();
      } else {
        address = next;
        next += 64 * (1 + rng() % 64);
      }
      Block b;
      b.address = address;
      b.size = static_cast<int64_t>(rng() % 100000);
      table.insert(b);
      reference[address] = b.size;
      live.push_back(address);
    } else {
      size_t k = rng() % live.size();
      uintptr_t address = live[k];
      live[k] = live.back();
      live.pop_back();
      Block out;
      ASSERT_TRUE(table.take(address, &out)) << step;
      ASSERT_EQ(out.address, address);
      ASSERT_EQ(out.size, reference.at(address));
      reference.erase(address);
      free_addresses.push_back(address);
      Block none;
      ASSERT_FALSE(table.take(address, &none));  // gone
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  EXPECT_GE(table.capacity(), 65'536u);  // grew far past its first 1,024 slots
  // Everything still there comes out once, with its size.
  for (uintptr_t address : live) {
    Block out;
    ASSERT_TRUE(table.take(address, &out));
    EXPECT_EQ(out.size, reference.at(address));
  }
  EXPECT_EQ(table.size(), 0u);
}

}  // namespace
}  // namespace strata::torch_tracer
