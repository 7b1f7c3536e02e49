// The string pool against a brute-force reference (a std::map from text to the id it was first given):
// ids in order of first intern, find() and get() agreeing, at sizes that make the table grow many
// times, with strings that share hash-relevant bytes (same length, same first/last 8 bytes), empty
// and long strings, and embedded NULs.
#include "trace/string_pool.h"

#include <gtest/gtest.h>

#include <map>
#include <random>
#include <string>
#include <vector>

namespace strata::trace {
namespace {

std::string random_text(std::mt19937_64& rng) {
  static const std::string kAlphabet = std::string("abcXYZ0189 :_#<>\0", 17);
  const size_t lengths[] = {0, 1, 3, 4, 7, 8, 9, 15, 16, 17, 31, 33, 100, 300};
  std::string s(lengths[rng() % std::size(lengths)], ' ');
  for (char& c : s) c = kAlphabet[rng() % kAlphabet.size()];
  if (rng() % 8 == 0) s = std::string(20000 + rng() % 50000, 'L') + s;  // longer than a block's share
  return s;
}

TEST(StringPool, IdsMatchABruteForceReference) {
  std::mt19937_64 rng(7);
  StringPool pool;
  std::map<std::string, uint32_t> reference{{"", 0}};
  std::vector<std::string> by_id{""};
  for (int step = 0; step < 60000; ++step) {
    // Half the time a string seen before, so lookups of present strings are exercised too.
    std::string text = (rng() % 2 == 0 && by_id.size() > 1) ? by_id[rng() % by_id.size()] : random_text(rng);
    auto [it, inserted] = reference.emplace(text, static_cast<uint32_t>(by_id.size()));
    if (inserted) by_id.push_back(text);
    if (rng() % 3 == 0) {
      ASSERT_EQ(pool.find(text), inserted ? UINT32_MAX : it->second) << "step " << step;
      if (!inserted) continue;
    }
    ASSERT_EQ(pool.intern(text), it->second) << "step " << step;
  }
  ASSERT_EQ(pool.size(), by_id.size());
  for (uint32_t id = 0; id < by_id.size(); ++id) {
    ASSERT_EQ(pool.get(id), by_id[id]);
    ASSERT_EQ(pool.find(by_id[id]), id);
  }
  EXPECT_EQ(pool.get(static_cast<uint32_t>(by_id.size())), "");  // out of range: empty
  EXPECT_EQ(pool.find("never interned"), UINT32_MAX);
}

TEST(StringPool, ViewsStayValidAsThePoolGrowsAndMoves) {
  StringPool pool;
  const uint32_t first = pool.intern("aten::conv2d");
  const std::string_view view = pool.get(first);
  for (int i = 0; i < 100000; ++i) pool.intern("name " + std::to_string(i));
  StringPool moved = std::move(pool);
  EXPECT_EQ(view, "aten::conv2d");
  EXPECT_EQ(moved.get(first).data(), view.data());
  EXPECT_EQ(moved.intern("aten::conv2d"), first);
  EXPECT_EQ(moved.find("name 99999"), 100001u);
}

TEST(StringPool, HashSeesEveryByte) {
  // Strings equal but for one byte, at every position and length up to 40, hash differently (a
  // hash that skipped a byte would collide on a whole class of keys).
  for (size_t n = 1; n <= 40; ++n)
    for (size_t at = 0; at < n; ++at) {
      std::string a(n, 'k'), b(n, 'k');
      b[at] = 'j';
      ASSERT_NE(StringPool::hash(a), StringPool::hash(b)) << "length " << n << " byte " << at;
    }
  EXPECT_NE(StringPool::hash(""), StringPool::hash(std::string(1, '\0')));
}

}  // namespace
}  // namespace strata::trace
