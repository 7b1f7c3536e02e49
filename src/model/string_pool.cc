#include "model/string_pool.h"

namespace strata::model {

StringPool::StringPool() { intern(""); }

uint32_t StringPool::intern(std::string_view text) {
  auto it = index_.find(text);
  if (it != index_.end()) return it->second;
  storage_.emplace_back(text);
  std::string_view view = storage_.back();
  uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(view);
  index_.emplace(view, id);
  return id;
}

uint32_t StringPool::find(std::string_view text) const {
  auto it = index_.find(text);
  return it == index_.end() ? UINT32_MAX : it->second;
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

}  // namespace strata::model
