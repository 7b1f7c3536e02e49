// `strata lowerbound`: per-layer best latencies from the performance database, the sequential and
// parallel lower bounds, and what-if bounds for fusion and lower precision (Benanza section IV).
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "lowerbound/bounds/bounds.h"
#include "lowerbound/ir/layer_ir.h"
#include "lowerbound/perfdb/perf_db.h"
#include "table/table.h"

namespace strata::lowerbound {

// Database rows indexed by (dtype, layout, signature).
class LatencyIndex {
 public:
  void add(const BenchRecord& record);
  // Fastest supported row; nullptr when none (missing or unsupported).
  const BenchRecord* best(const std::string& dtype, const std::string& layout,
                          const std::string& signature) const;
  // True when some row exists, supported or not.
  bool has(const std::string& dtype, const std::string& layout, const std::string& signature) const;
  const std::vector<BenchRecord>* rows(const std::string& dtype, const std::string& layout,
                                       const std::string& signature) const;

 private:
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<BenchRecord>> rows_;
};

enum class LayerStatus { kMeasured, kFree, kMissing, kUnsupported };

struct ModelEstimate {
  std::string dtype, layout;
  bool fused = false;  // fusion chains (FusionChain) use the fused measurement where it is faster
  std::vector<double> latency_ns;
  std::vector<LayerStatus> status;
  std::vector<const BenchRecord*> best;  // per layer, nullptr unless measured; points into the
                                         // LatencyIndex, which must outlive this and stay unchanged
  Bounds bounds;
  uint64_t measured = 0, free = 0, missing = 0, unsupported = 0;
  // With `fused`: chains that use their fused measurement, and chains whose fused call measured slower
  // than the separate calls (the bound keeps those separate).
  uint64_t fused_chains = 0, chains_kept_separate = 0;
};

ModelEstimate estimate_model(const LayerModel& model, const LatencyIndex& index, const std::string& dtype,
                             const std::string& layout, bool fused);

// Tables: bounds summary per (dtype, layout), per-layer latencies, fusion and precision what-ifs.
table::Table bounds_table(const LayerModel& model, const std::vector<ModelEstimate>& estimates);
table::Table layer_table(const LayerModel& model, const ModelEstimate& estimate);
table::Table fusion_table(const LayerModel& model, const LatencyIndex& index, const std::string& dtype,
                          const std::string& layout);
table::Table precision_table(const LayerModel& model, const LatencyIndex& index, const std::string& layout,
                             const std::vector<std::string>& dtypes);

}  // namespace strata::lowerbound
