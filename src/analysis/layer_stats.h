// Per-layer values of the selected evaluations, summarized across them (position i of every
// evaluation is the same layer: select_evaluations keeps only matching layer sequences).
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis_util.h"

namespace strata::analysis {

struct LayerRow {
  size_t index = 0;
  uint32_t span = 0;  // the layer span in the first selected evaluation
  std::string name, type, shape;
  Summary latency_ms;
  double latency = 0;  // headline statistic
  bool has_alloc = false;
  double alloc_mb = 0;  // headline statistic of the evaluations that recorded it
};

struct LayerStats {
  Selection selection;
  StatOptions options;
  std::string param_error;
  std::vector<LayerRow> rows;
  bool any_alloc = false;
};

LayerStats compute_layer_stats(const Workload& w, const Params& params);

// Is this a convolution layer (type or name mentions "conv", case-insensitive)?
bool is_convolution(std::string_view type);

}  // namespace strata::analysis
