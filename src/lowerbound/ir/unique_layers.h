// Unique layers (Benanza Figure 4): layers with equal type, shapes and parameters are benchmarked
// once. Counted per model and across a set of models.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "lowerbound/ir/layer_ir.h"

namespace strata::lowerbound {

struct UniqueLayer {
  std::string signature;
  std::string op_type;
  uint32_t model = 0;  // first model and layer that has it
  uint32_t layer = 0;
  uint64_t occurrences = 0;      // across all models
  std::vector<uint32_t> models;  // models that contain it (ascending, no repeats)
};

struct ModelUniqueStats {
  std::string model;
  uint64_t layers = 0;
  uint64_t unique = 0;      // distinct signatures within the model
  uint64_t new_unique = 0;  // not in any earlier model of the set
  uint64_t shared = 0;      // distinct signatures also found in some other model of the set
};

class UniqueLayerSet {
 public:
  void add_model(const LayerModel& model);
  const std::vector<UniqueLayer>& layers() const { return unique_; }
  const std::vector<ModelUniqueStats>& per_model() const;  // shared counts are filled here
  uint64_t total_layers() const { return total_layers_; }
  // Index of a signature in layers(), -1 when unknown.
  int64_t find(const std::string& signature) const;

 private:
  std::vector<UniqueLayer> unique_;
  std::unordered_map<std::string, uint32_t> index_;
  mutable std::vector<ModelUniqueStats> stats_;
  uint32_t models_ = 0;
  uint64_t total_layers_ = 0;
};

}  // namespace strata::lowerbound
