// Framework inefficiency inspection (Benanza III-D3, IV-C): the library calls a framework made for
// each layer, compared with the call the lower bound measured for it. Two findings:
//  - parameter deviations: the call ran with other parameters than the layer needs (shapes, data
//    type, layout, padding, strides, groups, post-ops, algorithm), or its operands were converted
//    around it (oneDNN reorders, cudnnTransformTensor, nchwToNhwc kernels), with the time that costs;
//  - extra work: library calls, kernels, copies, memsets and runtime calls that belong to no layer's
//    expected call (reorders, a second primitive, the framework's own kernels between library calls),
//    per layer and in total.
// It reads only what the tracers record (src/onednn: "impl", "shapes", and where available "dtype",
// "formats", "attrs", "desc", "prop_kind" in oneDNN's verbose notation; src/gpu: cuDNN descriptor
// attributes such as "x.shape", "x.dtype", "conv.pads", "algorithm"; cuBLAS "m", "n", "k",
// "a.dtype"). A parameter a tracer does not record is not compared, never guessed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "lowerbound/analyses/call_params.h"
#include "lowerbound/bounds/estimate.h"
#include "lowerbound/ir/layer_ir.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::lowerbound {

struct ObservedCall {
  size_t span = 0;
  std::string name;
  CallParams params;
  int64_t start_ns = 0;
  double host_ns = 0;
  double device_ns = 0;  // kernels/copies launched inside the call (GPU); 0 on CPU
  std::vector<std::pair<std::string, double>> layout_kernels;  // layout conversions inside the call
  // The time to compare with the benchmarked latency: device time where the call launched work.
  double time_ns() const { return device_ns > 0 ? device_ns : host_ns; }
};

struct ExtraWork {
  std::string name;
  std::string category;  // reorder, library_call, kernel, memcpy, memset, sync, runtime_api
  bool device = false;   // device time (kernels, copies) rather than host time
  int32_t layer = -1;    // ONNX layer whose framework op ran it; -1: an op without a layer, or no op
  std::string owner;     // framework op that ran it; empty when outside every op
  std::string role;      // reorders/transforms: the operand they convert (src, weights, dst), if known
  double ns = 0;
  size_t span = 0;
  std::string detail;  // reorders: the conversion, when recorded ("abcd -> aBcd16b")
};

struct LayerCalls {
  uint32_t layer = 0;
  std::string framework_op;
  double op_ns = 0;
  std::vector<ObservedCall> calls;  // library calls inside the op, by start
  int32_t main_call = -1;           // index into calls: the longest of the layer's expected class
  double outside_calls_ns = 0;      // op time not covered by its library calls (host; 0 without calls)
};

struct InefficiencyFindings {
  bool has_library_spans = false;  // any library-level span in the analysed iteration
  bool has_device_spans = false;   // any device-level span (GPU run): host gaps are then not costs
  std::vector<LayerCalls> layers;  // matched layers, in model order
  std::vector<ExtraWork> extras;
};

class Iteration;  // iteration.h: the analysed evaluation's framework ops and window

// Every library call, runtime call and device span of the iteration, attributed through the span
// tree to the framework op it ran under and that op's ONNX layer.
InefficiencyFindings find_inefficiencies(const LayerModel& model, const Iteration& iteration);

struct ParameterDeviation {
  uint32_t layer = 0;
  std::string call;  // span name of the call showing it (the reorder's, for layout conversions)
  std::string parameter, expected, observed;
  double call_ns = 0;
  // Layout conversions: the converting call's time. Parameters of the layer's call itself: the
  // call's excess over the benchmarked latency, shared by every deviation of that call.
  double cost_ns = 0;
  bool shared_cost = false;
};

struct LayerInefficiency {
  uint32_t layer = 0;
  std::string framework_op, expected_call;
  size_t calls = 0;
  double main_call_ns = -1;  // < 0: the expected call was not seen
  double bound_ns = -1;      // < 0: no measurement
  double reorder_ns = 0, extra_ns = 0, outside_ns = 0, deviation_excess_ns = 0;
  std::vector<std::string> deviated;  // parameters that deviate
  double overhead_ns() const { return reorder_ns + extra_ns + outside_ns + deviation_excess_ns; }
};

struct InefficiencyReport {
  std::vector<ParameterDeviation> deviations;
  std::vector<LayerInefficiency> layers;  // ranked by overhead, largest first
  double reorder_ns = 0, extra_in_layers_ns = 0, extra_outside_layers_ns = 0, outside_calls_ns = 0,
         deviation_excess_ns = 0;
  uint64_t deviating_layers = 0;
};

// Compares each layer's calls with what the layer needs under `estimate` (dtype, layout, fusion, best
// algorithm) and totals the extra work.
InefficiencyReport analyze_inefficiencies(const LayerModel& model, const ModelEstimate& estimate,
                                          const InefficiencyFindings& findings);

// parameter_deviations, extra_calls (grouped by name, ranked) and framework_inefficiency (per
// layer, ranked, with a TOTAL row).
std::vector<table::Table> inefficiency_tables(const LayerModel& model, const ModelEstimate& estimate,
                                              const InefficiencyFindings& findings, double end_to_end_ns,
                                              size_t top);

}  // namespace strata::lowerbound
