#include "lowerbound/ir/unique_layers.h"

#include <unordered_set>

namespace strata::lowerbound {

void UniqueLayerSet::add_model(const LayerModel& model) {
  ModelUniqueStats stats;
  stats.model = model.name;
  stats.layers = model.layers.size();
  std::unordered_set<uint32_t> seen;
  for (uint32_t i = 0; i < model.layers.size(); ++i) {
    std::string sig = model.layers[i].signature();
    auto [it, inserted] = index_.try_emplace(sig, static_cast<uint32_t>(unique_.size()));
    if (inserted) {
      unique_.push_back(UniqueLayer{sig, model.layers[i].op_type, models_, i, 0, {}});
      ++stats.new_unique;
    }
    UniqueLayer& u = unique_[it->second];
    ++u.occurrences;
    if (seen.insert(it->second).second) {
      ++stats.unique;
      u.models.push_back(models_);
    }
  }
  total_layers_ += model.layers.size();
  stats_.push_back(stats);
  ++models_;
}

const std::vector<ModelUniqueStats>& UniqueLayerSet::per_model() const {
  for (auto& s : stats_) s.shared = 0;
  for (const UniqueLayer& u : unique_)
    if (u.models.size() > 1)
      for (uint32_t m : u.models) ++stats_[m].shared;
  return stats_;
}

int64_t UniqueLayerSet::find(const std::string& signature) const {
  auto it = index_.find(signature);
  return it == index_.end() ? -1 : it->second;
}

}  // namespace strata::lowerbound
