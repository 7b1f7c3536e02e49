// Key/value property lists: the payload of Process, Stats, End and Record chunks.
// Encoding: repeated { u32 key_len, key bytes, u32 value_len, value bytes }. Extensible: readers
// keep keys they don't know.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace strata::format {

class Properties {
 public:
  void set(std::string key, std::string value);
  void set_int(std::string key, int64_t value) { set(std::move(key), std::to_string(value)); }
  std::optional<std::string_view> get(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

  std::string encode() const;
  // Returns false (and leaves *error set) when the bytes are not a valid property list.
  static bool decode(std::string_view bytes, Properties* out, std::string* error);

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
};

}  // namespace strata::format
