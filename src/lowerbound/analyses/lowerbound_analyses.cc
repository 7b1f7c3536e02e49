#include "lowerbound/analyses/lowerbound_analyses.h"

#include <algorithm>
#include <memory>

#include "analysis/workload.h"
#include "lowerbound/analyses/trace_compare.h"
#include "lowerbound/harness/bench_plan.h"
#include "lowerbound/harness/measure.h"
#include "lowerbound/ir/onnx_loader.h"

namespace strata::lowerbound {

using analysis::AnalysisInput;
using analysis::AnalysisResult;

namespace {

constexpr const char* kNeedOnnx =
    "needs the ONNX model the trace ran: --param onnx=MODEL.onnx (and --param db=URL unless "
    "$STRATA_PERF_DB or ~/.cache/strata/perf.sqlite holds its benchmarks; see strata bench run)";

// The comparison of one trace with one model, shared by the three analyses.
bool compare(const AnalysisInput& input, const BoundContext& bound, TraceComparison* cmp, AnalysisResult* r) {
  analysis::WorkloadRef workload(input);
  std::string error;
  if (!compare_with_workload(*bound.model, *workload, cmp, &error)) {
    r->missing_input = error;
    return false;
  }
  return true;
}

class FrameworkVsBound final : public BoundAnalysis {
 public:
  std::string_view name() const override { return "framework_vs_bound"; }
  std::string_view description() const override {
    return "lower bound vs the framework's run: end-to-end, per-layer gaps, algorithm selection, extra ops "
           "(--param onnx=MODEL.onnx)";
  }
  AnalysisResult run_bound(const AnalysisInput& input, const BoundContext& bound) const override {
    AnalysisResult r;
    TraceComparison cmp;
    if (compare(input, bound, &cmp, &r))
      r.tables = framework_vs_bound_tables(*bound.model, *bound.estimate, cmp, bound.top);
    return r;
  }
};

class FrameworkInefficiency final : public BoundAnalysis {
 public:
  std::string_view name() const override { return "framework_inefficiency"; }
  std::string_view description() const override {
    return "library calls per layer vs the bound's: parameter deviations, reorders, extra calls and work "
           "(--param onnx=MODEL.onnx; needs --level library)";
  }
  AnalysisResult run_bound(const AnalysisInput& input, const BoundContext& bound) const override {
    AnalysisResult r;
    TraceComparison cmp;
    if (compare(input, bound, &cmp, &r))
      r.tables =
          inefficiency_tables(*bound.model, *bound.estimate, cmp.inefficiency, cmp.end_to_end_ns, bound.top);
    return r;
  }
};

class TensorCores final : public BoundAnalysis {
 public:
  std::string_view name() const override { return "tensor_cores"; }
  std::string_view description() const override {
    return "per layer, whether its GPU kernels ran on tensor cores, by kernel name (--param onnx=MODEL.onnx; "
           "no "
           "database needed)";
  }
  AnalysisResult run_bound(const AnalysisInput& input, const BoundContext& bound) const override {
    AnalysisResult r;
    TraceComparison cmp;
    if (!compare(input, bound, &cmp, &r)) return r;
    if (!cmp.tensor_cores.has_kernels) {
      r.missing_input =
          "no GPU kernels in the compared iteration: tensor cores need a GPU trace (record with "
          "--level device, or import a Kineto GPU trace)";
      return r;
    }
    r.tables.push_back(tensor_core_table(*bound.model, cmp.tensor_cores));
    return r;
  }
  bool needs_measurements() const override { return false; }
};

}  // namespace

std::span<const std::string_view> BoundAnalysis::param_keys() const {
  static constexpr std::string_view kKeys[] = {"onnx",   "db",     "backend", "system_tag", "dtype",
                                               "layout", "fusion", "threads", "top"};
  return kKeys;
}

AnalysisResult BoundAnalysis::run(const AnalysisInput& input) const {
  const analysis::Params& p = input.params;
  BoundRequest request;
  request.onnx_path = p.get("onnx", "");
  if (request.onnx_path.empty()) {
    AnalysisResult r;
    r.missing_input = kNeedOnnx;
    return r;
  }
  request.db_url = p.get("db", "");
  request.backend = p.get("backend", "cpu");
  request.system_tag = p.get("system_tag", "");
  request.dtype = normalize_dtype(p.get("dtype", "f32"));
  request.layout = p.get("layout", "nchw");
  request.fusion = p.get("fusion", "0") == "1";
  request.threads = static_cast<int>(p.get_int("threads", default_threads()));
  AnalysisResult r;
  if (request.threads < 1) {
    r.missing_input = "--param threads=" + p.get("threads", "") + " is not a positive thread count";
    return r;
  }
  if (request.dtype.empty()) {
    r.missing_input = "--param dtype=" + p.get("dtype", "") + " is not a data type (use fp32, fp16, bf16)";
    return r;
  }
  BoundInputs inputs;
  std::string error;
  const size_t top = static_cast<size_t>(std::max<int64_t>(1, p.get_int("top", 10)));
  if (!needs_measurements()) {  // the model's layers only
    if (!load_onnx_file(request.onnx_path, &inputs.model, &error)) {
      r.missing_input = error;
      return r;
    }
    ModelEstimate none = estimate_model(inputs.model, inputs.index, request.dtype, request.layout, false);
    return run_bound(input, BoundContext{&inputs.model, &none, top});
  }
  if (!load_bound_inputs(request, &inputs, &error)) {
    r.missing_input = error;
    return r;
  }
  ModelEstimate estimate = estimate_model(inputs.model, inputs.index, request.dtype, request.layout, false);
  if (std::string none = no_measurement_error(request, inputs, estimate); !none.empty()) {
    r.missing_input = none;
    return r;
  }
  BoundContext bound{&inputs.model, &estimate,
                     static_cast<size_t>(std::max<int64_t>(1, p.get_int("top", 10)))};
  r = run_bound(input, bound);
  if (std::string w = untrusted_rows_warning(request, inputs, estimate); !w.empty() && !r.tables.empty())
    r.tables[0].notes.push_back("warning: " + w);
  return r;
}

const BoundAnalysis* find_bound_analysis(std::string_view name) {
  return dynamic_cast<const BoundAnalysis*>(analysis::find_analysis(name));
}

// Factories, each registered next to it (order keys after gpu_stalls: see analysis.h).
std::unique_ptr<analysis::Analysis> make_framework_vs_bound() { return std::make_unique<FrameworkVsBound>(); }
STRATA_REGISTER_ANALYSIS(make_framework_vs_bound, 3200);
std::unique_ptr<analysis::Analysis> make_framework_inefficiency() {
  return std::make_unique<FrameworkInefficiency>();
}
STRATA_REGISTER_ANALYSIS(make_framework_inefficiency, 3300);
std::unique_ptr<analysis::Analysis> make_tensor_cores() { return std::make_unique<TensorCores>(); }
STRATA_REGISTER_ANALYSIS(make_tensor_cores, 3400);

}  // namespace strata::lowerbound
