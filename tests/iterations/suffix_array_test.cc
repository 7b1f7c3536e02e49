// SA-IS and Kasai against a naive sort on random and adversarial integer strings.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "analysis/iterations/suffix_array.h"

namespace strata::analysis::iterations {
namespace {

std::vector<int32_t> naive_sa(const std::vector<int32_t>& s) {
  std::vector<int32_t> sa(s.size());
  for (size_t i = 0; i < s.size(); ++i) sa[i] = static_cast<int32_t>(i);
  std::sort(sa.begin(), sa.end(), [&](int32_t a, int32_t b) {
    return std::lexicographical_compare(s.begin() + a, s.end(), s.begin() + b, s.end());
  });
  return sa;
}

void check(const std::vector<int32_t>& s, int32_t k) {
  const auto sa = build_suffix_array(s, k);
  ASSERT_EQ(sa, naive_sa(s));
  const auto lcp = build_lcp_array(s, sa);
  for (size_t r = 1; r < sa.size(); ++r) {
    int32_t h = 0;
    while (sa[r] + h < static_cast<int32_t>(s.size()) && sa[r - 1] + h < static_cast<int32_t>(s.size()) &&
           s[sa[r] + h] == s[sa[r - 1] + h])
      ++h;
    ASSERT_EQ(lcp[r], h) << "rank " << r;
  }
}

TEST(SuffixArray, EmptyAndTiny) {
  check({}, 1);
  check({0}, 1);
  check({1, 0}, 2);
  check({0, 0, 0, 0}, 1);
}

TEST(SuffixArray, RandomStringsOverSmallAndLargeAlphabets) {
  std::mt19937 rng(7);
  for (int round = 0; round < 400; ++round) {
    const int32_t k = 1 + static_cast<int32_t>(rng() % (round % 2 ? 3 : 300));
    const size_t n = rng() % 200;
    std::vector<int32_t> s(n);
    for (auto& c : s) c = static_cast<int32_t>(rng() % k);
    check(s, k);
  }
}

TEST(SuffixArray, PeriodicStringsRecurse) {
  for (int period = 1; period < 9; ++period) {
    std::vector<int32_t> s;
    for (int i = 0; i < 300; ++i) s.push_back((i % period) * 3 % 7);
    check(s, 7);
  }
}

}  // namespace
}  // namespace strata::analysis::iterations
