// Key/value property lists: the payload of Process, Stats, End and Record chunks.
// Encoding: repeated { u32 key_len, key bytes, u32 value_len, value bytes }. Extensible: readers
// keep keys they don't know.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace strata::format {

class Properties {
 public:
  void set(std::string key, std::string value);
  void set_int(std::string key, int64_t value) { set(std::move(key), std::to_string(value)); }
  std::optional<std::string_view> get(std::string_view key) const;
  std::optional<int64_t> get_int(std::string_view key) const;
  // A count of events (a "dropped.<cause>" statistic): an integer in [0, kMaxCount]. nullopt when
  // absent, negative, larger or not a number, so a forged -5 never prints as 18446744073709551611.
  std::optional<uint64_t> get_count(std::string_view key) const;
  // More events than any recording holds (2^48), small enough that sums over 65,536 processes
  // cannot wrap.
  static constexpr uint64_t kMaxCount = uint64_t{1} << 48;
  const std::vector<std::pair<std::string, std::string>>& entries() const { return entries_; }

  std::string encode() const;
  // Returns false (and leaves *error set) when the bytes are not a valid property list.
  static bool decode(std::string_view bytes, Properties* out, std::string* error);
  // Entries one list may hold: far more than any writer puts in one chunk; beyond it a list is
  // refused rather than turned into gigabytes of strings.
  static constexpr size_t kMaxEntries = size_t{1} << 20;

 private:
  std::vector<std::pair<std::string, std::string>> entries_;
  // Key -> position of its first entry: lookups stay constant-time on lists of any length.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  std::unordered_map<std::string, size_t, KeyHash, std::equal_to<>> index_;
};

}  // namespace strata::format
