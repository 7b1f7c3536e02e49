#pragma once
#include <cstddef>
#include <cstdint>

namespace strata {
// CRC-32C (Castagnoli), hardware-accelerated where the CPU has SSE4.2.
uint32_t crc32c(const void* data, size_t size, uint32_t seed = 0);
}  // namespace strata
