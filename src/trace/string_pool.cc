#include "trace/string_pool.h"

#include <cstring>

namespace strata::trace {
namespace {

uint64_t load64(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

uint64_t load32(const char* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// 64x64 -> 128-bit multiply, folded: the mixing step of wyhash.
uint64_t mum(uint64_t a, uint64_t b) {
  const unsigned __int128 r = static_cast<unsigned __int128>(a) * b;
  return static_cast<uint64_t>(r) ^ static_cast<uint64_t>(r >> 64);
}

constexpr uint64_t kK0 = 0xa0761d6478bd642full, kK1 = 0xe7037ed1a0b428dbull, kK2 = 0x8ebc6af09c88c6e3ull;
constexpr size_t kFirstSlots = 1024;

}  // namespace

uint64_t StringPool::hash(std::string_view text) {
  const char* p = text.data();
  const size_t n = text.size();
  uint64_t seed = kK0 ^ n;
  uint64_t a = 0, b = 0;
  if (n <= 16) {
    if (n >= 8) {
      a = load64(p);
      b = load64(p + n - 8);
    } else if (n >= 4) {
      a = load32(p);
      b = load32(p + n - 4);
    } else if (n > 0) {
      a = uint64_t{static_cast<unsigned char>(p[0])} << 16 |
          uint64_t{static_cast<unsigned char>(p[n >> 1])} << 8 | static_cast<unsigned char>(p[n - 1]);
    }
  } else {
    size_t left = n;
    for (; left > 16; left -= 16, p += 16) seed = mum(load64(p) ^ kK1, load64(p + 8) ^ seed);
    a = load64(p + left - 16);  // the last 16 bytes (overlapping what the loop read)
    b = load64(p + left - 8);
  }
  return mum(kK1 ^ n, mum(a ^ kK2, b ^ seed));
}

StringPool::StringPool() { intern(""); }

uint32_t StringPool::lookup(std::string_view text, uint64_t h, size_t* empty_slot) const {
  const uint64_t tag = h >> 32;
  for (size_t i = h & mask_;; i = (i + 1) & mask_) {
    const uint64_t slot = slots_[i];
    if (slot == 0) {
      *empty_slot = i;
      return UINT32_MAX;
    }
    if ((slot >> 32) == tag) {
      const uint32_t id = static_cast<uint32_t>(slot) - 1;
      if (views_[id] == text) return id;
    }
  }
}

std::string_view StringPool::store(std::string_view text) {
  if (text.empty()) return {};
  if (text.size() > kBlockBytes / 4) {
    large_.emplace_back(new char[text.size()]);
    std::memcpy(large_.back().get(), text.data(), text.size());
    return {large_.back().get(), text.size()};
  }
  if (kBlockBytes - block_used_ < text.size()) {
    blocks_.emplace_back(new char[kBlockBytes]);
    block_used_ = 0;
  }
  char* at = blocks_.back().get() + block_used_;
  std::memcpy(at, text.data(), text.size());
  block_used_ += text.size();
  return {at, text.size()};
}

void StringPool::grow() {
  const size_t size = slots_.empty() ? kFirstSlots : slots_.size() * 2;
  slots_.assign(size, 0);
  mask_ = size - 1;
  for (uint32_t id = 0; id < views_.size(); ++id) {
    const uint64_t h = hash(views_[id]);
    size_t i = h & mask_;
    while (slots_[i] != 0) i = (i + 1) & mask_;
    slots_[i] = (h >> 32) << 32 | (uint64_t{id} + 1);
  }
}

uint32_t StringPool::intern(std::string_view text) {
  if (slots_.empty()) grow();
  const uint64_t h = hash(text);
  size_t empty = 0;
  if (uint32_t id = lookup(text, h, &empty); id != UINT32_MAX) return id;
  const uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(store(text));
  slots_[empty] = (h >> 32) << 32 | (uint64_t{id} + 1);
  if (views_.size() * 2 > slots_.size()) grow();  // load factor at most 1/2
  return id;
}

uint32_t StringPool::find(std::string_view text) const {
  if (slots_.empty()) return UINT32_MAX;
  size_t empty = 0;
  return lookup(text, hash(text), &empty);
}

void LocalStringIds::set(uint32_t local, uint32_t global) {
  ++defined_;
  if (local >= dense_.size() && local < 2 * defined_ + kSlack) dense_.resize(local + 1, kUndefined);
  if (local < dense_.size()) {
    dense_[local] = global;
    if (!sparse_.empty()) sparse_.erase(local);  // a redefinition replaces an earlier one kept there
  } else {
    sparse_[local] = global;
  }
}

}  // namespace strata::trace
