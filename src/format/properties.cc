#include "format/properties.h"

#include <charconv>
#include <cstring>

namespace strata::format {

void Properties::set(std::string key, std::string value) {
  auto [it, inserted] = index_.try_emplace(key, entries_.size());
  if (!inserted) {
    entries_[it->second].second = std::move(value);
    return;
  }
  entries_.emplace_back(std::move(key), std::move(value));
}

std::optional<std::string_view> Properties::get(std::string_view key) const {
  auto it = index_.find(key);
  if (it == index_.end()) return std::nullopt;
  return std::string_view(entries_[it->second].second);
}

std::optional<int64_t> Properties::get_int(std::string_view key) const {
  auto text = get(key);
  if (!text) return std::nullopt;
  int64_t value = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
  if (ec != std::errc() || ptr != text->data() + text->size()) return std::nullopt;
  return value;
}

std::optional<uint64_t> Properties::get_count(std::string_view key) const {
  auto value = get_int(key);
  if (!value || *value < 0 || static_cast<uint64_t>(*value) > kMaxCount) return std::nullopt;
  return static_cast<uint64_t>(*value);
}

namespace {
void put_u32(std::string* out, uint32_t v) { out->append(reinterpret_cast<const char*>(&v), 4); }
}  // namespace

std::string Properties::encode() const {
  std::string out;
  for (const auto& [key, value] : entries_) {
    put_u32(&out, static_cast<uint32_t>(key.size()));
    out += key;
    put_u32(&out, static_cast<uint32_t>(value.size()));
    out += value;
  }
  return out;
}

bool Properties::decode(std::string_view bytes, Properties* out, std::string* error) {
  size_t pos = 0;
  auto take = [&](std::string* field) -> bool {
    if (bytes.size() - pos < 4) return false;
    uint32_t len;
    std::memcpy(&len, bytes.data() + pos, 4);
    pos += 4;
    if (bytes.size() - pos < len) return false;
    field->assign(bytes.data() + pos, len);
    pos += len;
    return true;
  };
  while (pos < bytes.size()) {
    if (out->entries_.size() >= kMaxEntries) {
      *error = "property list holds more than " + std::to_string(kMaxEntries) + " entries; refused";
      return false;
    }
    std::string key, value;
    if (!take(&key) || !take(&value)) {
      *error = "property list cut short at byte " + std::to_string(pos);
      return false;
    }
    // A repeated key stays in the list (readers see what was written); lookups find the first.
    out->index_.try_emplace(key, out->entries_.size());
    out->entries_.emplace_back(std::move(key), std::move(value));
  }
  return true;
}

}  // namespace strata::format
