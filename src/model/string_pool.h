// Interned strings: every name and attribute key in a trace is stored once and referred to by id.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace strata::model {

class StringPool {
 public:
  StringPool();
  StringPool(const StringPool&) = delete;
  StringPool& operator=(const StringPool&) = delete;
  StringPool(StringPool&&) = default;
  StringPool& operator=(StringPool&&) = default;

  // Id 0 is always the empty string.
  uint32_t intern(std::string_view text);
  // Returns the id if present, or UINT32_MAX.
  uint32_t find(std::string_view text) const;
  std::string_view get(uint32_t id) const { return id < views_.size() ? views_[id] : std::string_view(); }
  size_t size() const { return views_.size(); }

 private:
  std::deque<std::string> storage_;  // deque: stable addresses for the views
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, uint32_t> index_;
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

}  // namespace strata::model
