// SA-IS (Nong, Zhang, Chan 2009) with a virtual sentinel after the last symbol, and Kasai's LCP.
#include "analysis/iterations/suffix_array.h"

#include <algorithm>

namespace strata::analysis::iterations {
namespace {

// Bucket heads (end == false) or one-past-ends (end == true) per symbol.
void bucket_bounds(const int32_t* s, int32_t n, int32_t k, std::vector<int32_t>& bkt, bool end) {
  std::fill(bkt.begin(), bkt.begin() + k, 0);
  for (int32_t i = 0; i < n; ++i) ++bkt[s[i]];
  int32_t sum = 0;
  for (int32_t c = 0; c < k; ++c) {
    sum += bkt[c];
    bkt[c] = end ? sum : sum - bkt[c];
  }
}

// Sorts all suffixes from the LMS suffixes already placed at their bucket ends.
void induce(const int32_t* s, int32_t* sa, int32_t n, int32_t k, const std::vector<uint8_t>& is_s,
            std::vector<int32_t>& bkt) {
  bucket_bounds(s, n, k, bkt, false);
  sa[bkt[s[n - 1]]++] = n - 1;  // the suffix before the virtual sentinel is L-type and comes first
  for (int32_t i = 0; i < n; ++i) {
    int32_t j = sa[i] - 1;
    if (sa[i] > 0 && !is_s[j]) sa[bkt[s[j]]++] = j;
  }
  bucket_bounds(s, n, k, bkt, true);
  for (int32_t i = n - 1; i >= 0; --i) {
    int32_t j = sa[i] - 1;
    if (sa[i] > 0 && is_s[j]) sa[--bkt[s[j]]] = j;
  }
}

void sais(const int32_t* s, int32_t* sa, int32_t n, int32_t k) {
  if (n == 0) return;
  if (n == 1) {
    sa[0] = 0;
    return;
  }
  std::vector<uint8_t> is_s(n);
  is_s[n - 1] = 0;
  for (int32_t i = n - 2; i >= 0; --i) is_s[i] = s[i] < s[i + 1] || (s[i] == s[i + 1] && is_s[i + 1]);
  auto is_lms = [&](int32_t i) { return i > 0 && i < n && is_s[i] && !is_s[i - 1]; };

  std::vector<int32_t> bkt(k);
  std::fill(sa, sa + n, -1);
  bucket_bounds(s, n, k, bkt, true);
  for (int32_t i = 1; i < n; ++i)
    if (is_lms(i)) sa[--bkt[s[i]]] = i;
  induce(s, sa, n, k, is_s, bkt);

  // Sorted LMS substrings to the front, then name them (equal substrings share a name).
  int32_t n1 = 0;
  for (int32_t i = 0; i < n; ++i)
    if (is_lms(sa[i])) sa[n1++] = sa[i];
  std::fill(sa + n1, sa + n, -1);
  int32_t names = 0;
  int32_t prev = -1;
  for (int32_t i = 0; i < n1; ++i) {
    const int32_t pos = sa[i];
    bool differs = prev < 0;
    for (int32_t d = 0; !differs; ++d) {
      if (pos + d == n || prev + d == n || s[pos + d] != s[prev + d] || is_s[pos + d] != is_s[prev + d]) {
        differs = true;  // running into the (unique) sentinel also makes them differ
      } else if (d > 0 && (is_lms(pos + d) || is_lms(prev + d))) {
        differs = !(is_lms(pos + d) && is_lms(prev + d));
        break;
      }
    }
    if (differs) {
      ++names;
      prev = pos;
    }
    sa[n1 + pos / 2] = names - 1;  // LMS positions are >= 2 apart: pos / 2 is unique
  }
  for (int32_t i = n - 1, j = n - 1; i >= n1; --i)
    if (sa[i] >= 0) sa[j--] = sa[i];

  // Order of the LMS suffixes: recurse when names repeat, else read it off the names.
  int32_t* s1 = sa + n - n1;
  if (names < n1) {
    sais(s1, sa, n1, names);
  } else {
    for (int32_t i = 0; i < n1; ++i) sa[s1[i]] = i;
  }
  for (int32_t i = 1, j = 0; i < n; ++i)
    if (is_lms(i)) s1[j++] = i;
  for (int32_t i = 0; i < n1; ++i) sa[i] = s1[sa[i]];
  std::fill(sa + n1, sa + n, -1);
  bucket_bounds(s, n, k, bkt, true);
  for (int32_t i = n1 - 1; i >= 0; --i) {
    int32_t j = sa[i];
    sa[i] = -1;
    sa[--bkt[s[j]]] = j;
  }
  induce(s, sa, n, k, is_s, bkt);
}

}  // namespace

std::vector<int32_t> build_suffix_array(std::span<const int32_t> text, int32_t alphabet_size) {
  std::vector<int32_t> sa(text.size());
  sais(text.data(), sa.data(), static_cast<int32_t>(text.size()), std::max<int32_t>(alphabet_size, 1));
  return sa;
}

std::vector<int32_t> build_lcp_array(std::span<const int32_t> text, std::span<const int32_t> sa,
                                     std::vector<int32_t>* scratch) {
  const int32_t n = static_cast<int32_t>(text.size());
  std::vector<int32_t> local;
  std::vector<int32_t>& rank = scratch != nullptr ? *scratch : local;
  rank.resize(n);
  for (int32_t r = 0; r < n; ++r) rank[sa[r]] = r;
  std::vector<int32_t> lcp(n, 0);
  int32_t h = 0;
  for (int32_t i = 0; i < n; ++i) {
    if (rank[i] == 0) {
      h = 0;
      continue;
    }
    const int32_t j = sa[rank[i] - 1];
    while (i + h < n && j + h < n && text[i + h] == text[j + h]) ++h;
    lcp[rank[i]] = h;
    if (h > 0) --h;
  }
  return lcp;
}

}  // namespace strata::analysis::iterations
