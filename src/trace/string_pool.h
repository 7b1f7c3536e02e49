// Interned strings: every name and attribute key in a trace is stored once and referred to by id.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::trace {

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  // Id 0 is always the empty string. Ids are handed out in order of first intern, whatever the hash.
  uint32_t intern(std::string_view text);
  // Returns the id if present, or UINT32_MAX.
  uint32_t find(std::string_view text) const;
  std::string_view get(uint32_t id) const { return id < views_.size() ? views_[id] : std::string_view(); }
  size_t size() const { return views_.size(); }

  // The pool's hash of a string (64 bits, wyhash-like; exposed for the tests).
  static uint64_t hash(std::string_view text);

 private:
  // Importers intern a name or key per event (millions per trace) against a pool of a few thousand
  // strings: an open-addressing table of (hash tag, id) slots, probed linearly, keeps a lookup to one
  // or two cache lines and a compare, where a node-based map chased a pointer per bucket and divided
  // by a prime. A slot is (upper 32 bits of the hash) << 32 | (id + 1); 0 is empty.
  uint32_t lookup(std::string_view text, uint64_t h, size_t* empty_slot) const;
  void grow();
  std::string_view store(std::string_view text);

  // Strings live in blocks that never move (the views stay valid); a long string gets a block of its
  // own.
  static constexpr size_t kBlockBytes = size_t{64} << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;
  std::vector<std::unique_ptr<char[]>> large_;
  size_t block_used_ = kBlockBytes;  // bytes used of blocks_.back() (full: none yet)
  std::vector<std::string_view> views_;
  std::vector<uint64_t> slots_;
  size_t mask_ = 0;
};

// A stream's own string ids (as written in its Strings chunks) -> ids in the trace's pool. The ids
// come from the file, so a dense table grows only as far as the entries actually defined justify
// (each costs at least 8 bytes of file): one forged id near 2^28 lands in a hash map instead of
// resizing a table to a gigabyte. Writers hand ids out in order, so real streams stay dense.
class LocalStringIds {
 public:
  static constexpr uint32_t kUndefined = UINT32_MAX;
  void set(uint32_t local, uint32_t global);
  uint32_t get(uint32_t local) const {
    if (local < dense_.size() && dense_[local] != kUndefined) return dense_[local];
    if (sparse_.empty()) return kUndefined;  // (an id set before the table reached it is here)
    auto it = sparse_.find(local);
    return it == sparse_.end() ? kUndefined : it->second;
  }

 private:
  static constexpr uint64_t kSlack = 64;  // ids past the defined count a dense table may reach
  std::vector<uint32_t> dense_;
  std::unordered_map<uint32_t, uint32_t> sparse_;
  uint64_t defined_ = 0;
};

}  // namespace strata::trace
