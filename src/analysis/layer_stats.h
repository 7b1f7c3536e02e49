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
  // Net, self net and peak memory (docs/memory.md), same statistic; has_net: recorded at all.
  bool has_net = false;
  double net_mb = 0;       // allocated - freed while the layer ran (torch.profiler "CPU Mem")
  double self_net_mb = 0;  // ... nested ops excluded ("Self CPU Mem")
  double peak_mb = 0;      // highest allocated - freed reached while it ran
};

struct LayerStats {
  Selection selection;
  StatOptions options;
  std::string param_error;
  std::vector<LayerRow> rows;
  bool any_alloc = false;
  bool any_net = false;
};

// The note a memory table adds when memory was recorded without its net/self/peak attributes, or
// not at all; empty when there is nothing to say.
std::vector<std::string> memory_notes(const LayerStats& s);

LayerStats compute_layer_stats(const Workload& w, const Params& params);

// Is this a convolution layer (type or name mentions "conv", case-insensitive)?
bool is_convolution(std::string_view type);

}  // namespace strata::analysis
