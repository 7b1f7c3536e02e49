// reserve_more: a vector filled in many small steps is reallocated a logarithmic number of times,
// not once per step (the loader reserved each chunk's exact size: quadratic copying).
#include "core/vector_growth.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

namespace strata {
namespace {

TEST(VectorGrowth, ManySmallStepsReallocateLogarithmicallyOften) {
  std::vector<uint64_t> v;
  int reallocations = 0;
  for (int step = 0; step < 100000; ++step) {
    const size_t before = v.capacity();
    reserve_more(v, 7);
    if (v.capacity() != before) ++reallocations;
    for (int k = 0; k < 7; ++k) v.push_back(static_cast<uint64_t>(step));
  }
  EXPECT_EQ(v.size(), 700000u);
  EXPECT_LE(reallocations, 25);  // 700,000 elements: about log2(100,000) doublings
  EXPECT_LE(v.capacity(), 2 * v.size());
}

TEST(VectorGrowth, TheFirstReserveIsExactAndEnoughRoomIsLeftAlone) {
  std::vector<int> v;
  reserve_more(v, 1000);
  EXPECT_EQ(v.capacity(), 1000u);  // a single step wastes nothing
  v.resize(10);
  reserve_more(v, 990);
  EXPECT_EQ(v.capacity(), 1000u);
  reserve_more(v, 991);
  EXPECT_EQ(v.capacity(), 2000u);  // doubles when that covers the need
  v.resize(2000);
  reserve_more(v, 5000);
  EXPECT_EQ(v.capacity(), 7000u);  // the need when doubling does not
}

}  // namespace
}  // namespace strata
