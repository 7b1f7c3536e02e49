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

}  // namespace strata::model
