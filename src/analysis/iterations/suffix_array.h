// Suffix array (SA-IS, linear time) and LCP array (Kasai) over an integer alphabet.
//
// Operation names are interned to dense integers, so the alphabet can be far larger than a byte:
// libdivsufsort only sorts bytes, hence our own SA-IS. Memory: the input, the output and one
// bucket array of alphabet size, plus the recursion on at most half the input.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace strata::analysis::iterations {

// Suffix array of `text`, whose symbols must lie in [0, alphabet_size). No sentinel is needed.
// Returns the start positions of the suffixes in lexicographic order (a shorter suffix that is a
// prefix of a longer one sorts first).
std::vector<int32_t> build_suffix_array(std::span<const int32_t> text, int32_t alphabet_size);

// lcp[r] = length of the longest common prefix of suffixes sa[r-1] and sa[r]; lcp[0] = 0.
// `scratch` (resized to text.size()) holds the inverse suffix array; pass one to reuse memory.
std::vector<int32_t> build_lcp_array(std::span<const int32_t> text, std::span<const int32_t> sa,
                                     std::vector<int32_t>* scratch = nullptr);

}  // namespace strata::analysis::iterations
