// Arithmetic on addresses that come from another process's memory, or from a sampled thread's
// registers: a frame pointer, a chunk's `top`, a code object's address, a stack pointer. A torn read
// (the thread kept running while it was read) gives any value, 0xffffffffffffffff included, and
// `address + size` then wraps to a small number that passes a `<= end` check. Every such
// computation in src/sample goes through these helpers, which never form a sum that can wrap.
#pragma once

#include <cstdint>

namespace strata::sample {

// *out = a + b; false (and *out untouched) when the sum does not fit in 64 bits.
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) {
  uint64_t sum = 0;
  if (__builtin_add_overflow(a, b, &sum)) return false;
  *out = sum;
  return true;
}

// *out = a * b; false when the product does not fit in 64 bits.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) {
  uint64_t product = 0;
  if (__builtin_mul_overflow(a, b, &product)) return false;
  *out = product;
  return true;
}

// Whether [address, address + length) lies inside [base, base + size), computed from differences
// only: an address near 2^64 cannot wrap into the range, and neither can a base near it.
inline bool range_within(uint64_t base, uint64_t size, uint64_t address, uint64_t length) {
  return address >= base && address - base <= size && size - (address - base) >= length;
}

// Whether [address, address + length) lies inside [base + skip, base + size): a chunk's frames start
// after its header.
inline bool range_within_after(uint64_t base, uint64_t size, uint64_t skip, uint64_t address,
                               uint64_t length) {
  return range_within(base, size, address, length) && address - base >= skip;
}

}  // namespace strata::sample
