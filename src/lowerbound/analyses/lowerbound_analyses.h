// The lower-bound analyses, registered like every other analysis (STRATA_REGISTER_ANALYSIS next to
// their factories) and run over the shared workload view:
//   framework_vs_bound      measured end-to-end vs the bounds, per-layer gaps, algorithm selection,
//                           framework ops without an ONNX layer (Benanza IV-A, IV-B)
//   framework_inefficiency  parameter deviations of each layer's library call, extra calls (III-D3)
//   tensor_cores            which layers' kernels ran on tensor cores, by kernel name (IV-E)
// `strata analyze TRACE --analysis NAME --param onnx=MODEL.onnx [--param db=URL dtype= layout=
// fusion=1 backend= system_tag= threads=N top=N]` loads the model and the database itself; `strata lowerbound
// MODEL.onnx --trace TRACE` passes what it has loaded already (run_bound).
#pragma once

#include <span>
#include <string>

#include "analysis/analysis.h"
#include "lowerbound/bounds/bound_inputs.h"
#include "lowerbound/bounds/estimate.h"

namespace strata::lowerbound {

// What the analyses compare a trace with.
struct BoundContext {
  const LayerModel* model = nullptr;
  const ModelEstimate* estimate = nullptr;  // the bound (dtype, layout, fusion) compared with
  size_t top = 10;                          // rows of the ranked tables
};

class BoundAnalysis : public analysis::Analysis {
 public:
  // From --param onnx=... (and db, dtype, layout, fusion, backend, system_tag, threads, top).
  analysis::AnalysisResult run(const analysis::AnalysisInput& input) const override;
  virtual analysis::AnalysisResult run_bound(const analysis::AnalysisInput& input,
                                             const BoundContext& bound) const = 0;
  // False for an analysis that needs the model's layers but no benchmark (tensor_cores): run() then
  // opens no database.
  virtual bool needs_measurements() const { return true; }
  std::span<const std::string_view> param_keys() const override;
};

// The registered analysis NAME as a BoundAnalysis; nullptr when it is not one.
const BoundAnalysis* find_bound_analysis(std::string_view name);

// The three lower-bound analyses, in the order `strata lowerbound --trace` prints them.
inline constexpr std::string_view kBoundAnalyses[] = {"framework_vs_bound", "framework_inefficiency",
                                                      "tensor_cores"};

}  // namespace strata::lowerbound
