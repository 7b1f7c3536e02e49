// Lower bounds from per-layer latencies (Benanza section III-D): the sequential bound sums every
// layer's best latency; the parallel bound is the longest (critical) path through the layer DAG,
// found in one pass over the layers in topological order (linear in layers + edges).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lowerbound/ir/layer_ir.h"

namespace strata::lowerbound {

struct Bounds {
  double sequential_ns = 0;
  double parallel_ns = 0;
  std::vector<uint32_t> critical_path;  // layer indices, first to last
  std::vector<double> finish_ns;        // earliest finish time of each layer
};

// `latency_ns[i]` is layer i's latency (0 for free or unknown layers). Layers must be in
// topological order (preds before the layer), as the ONNX loader guarantees.
Bounds compute_bounds(const LayerModel& model, const std::vector<double>& latency_ns);

// Graphviz DOT of the layer DAG with the critical path drawn bold red; latencies in labels.
std::string critical_path_dot(const LayerModel& model, const std::vector<double>& latency_ns,
                              const Bounds& bounds);

}  // namespace strata::lowerbound
