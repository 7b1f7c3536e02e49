// Compares a framework run (a Strata trace with layer-level spans: framework ops such as
// "aten::conv2d", optionally library-level spans such as "onednn::convolution" inside them) with the
// lower bound of the same model: end-to-end vs bound, per-layer gaps, the algorithm the framework's
// library picked vs the best benchmarked one, framework ops with no ONNX layer (extra work), and the
// library calls inside each layer's op inspected for parameter deviations and extra calls
// (framework_inefficiency.h), and on GPU runs the kernels each layer ran on tensor cores
// (tensor_cores.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/workload.h"
#include "lowerbound/analyses/framework_inefficiency.h"
#include "lowerbound/analyses/tensor_cores.h"
#include "lowerbound/bounds/estimate.h"
#include "table/table.h"
#include "trace/trace.h"

namespace strata::lowerbound {

// ONNX operator a framework op implements ("aten::conv2d" -> "Conv"); empty when unknown.
std::string onnx_op_for_framework_op(const std::string& name);

struct LayerMatch {
  uint32_t layer = 0;        // ONNX layer index
  size_t span = 0;           // index into trace.spans
  double measured_ns = 0;    // framework op duration
  double library_ns = 0;     // all library-level spans inside it, reorders included (0: none recorded)
  std::string library_impl;  // "impl" of the longest library span of the class the layer needs, if any
  std::string framework_op;  // span name, e.g. "aten::conv2d"
  std::string module;        // "module" attribute (e.g. "layer1.0.conv1") when the tracer recorded it
};

struct TraceComparison {
  double end_to_end_ns = 0;       // one iteration of the model as the framework ran it
  std::string end_to_end_source;  // which spans gave it
  uint64_t iterations_seen = 0;   // evaluations with framework ops in the trace
  int framework_threads = 0;      // the compared model span's "threads" attribute (0: not recorded)
  std::vector<LayerMatch> matches;
  uint64_t unmatched_layers = 0;  // ONNX layers needing a call with no framework op found
  uint64_t extra_ops = 0;         // framework ops with no ONNX layer (e.g. BatchNorm folded by export)
  double extra_ops_ns = 0;
  std::vector<std::pair<std::string, std::pair<uint64_t, double>>> extra_by_name;  // name -> (count, ns)
  std::vector<std::string> warnings;
  // The analysed iteration (an evaluation of the workload view): its time window and outermost
  // framework ops (trace.spans indices, by start), each with the ONNX layer matched to it (-1: none).
  int64_t window_start_ns = INT64_MIN, window_end_ns = INT64_MAX;
  std::vector<size_t> ops;
  std::vector<int32_t> op_layer;
  InefficiencyFindings inefficiency;  // the library calls/device work of that iteration, per layer
  TensorCoreUsage tensor_cores;       // GPU runs: each layer's kernels, tensor-core ones by name
};

// The evaluation compared: the last one (steady state) among those with layer spans, preferring
// evaluations of model-level spans. False with `error` when the trace has no layer-level spans.
bool compare_with_workload(const LayerModel& model, const analysis::Workload& workload, TraceComparison* out,
                           std::string* error);
// The same for a trace on its own (builds the span tree and the workload view).
bool compare_with_trace(const LayerModel& model, const trace::Trace& trace, TraceComparison* out,
                        std::string* error);

// When the sequential bound exceeds the measured run (normalized > 1: the bound is not one): the
// warning, naming the layers benchmarked slower than the framework ran them; empty otherwise.
std::string bound_check(const LayerModel& model, const ModelEstimate& estimate, const TraceComparison& cmp);

// framework_vs_bound, layer_gaps, algorithm_selection, extra_framework_ops.
std::vector<table::Table> framework_vs_bound_tables(const LayerModel& model, const ModelEstimate& estimate,
                                                    const TraceComparison& cmp, size_t top);
// Those, the framework inefficiency tables and, on a GPU run, tensor_cores.
std::vector<table::Table> comparison_tables(const LayerModel& model, const ModelEstimate& estimate,
                                            const TraceComparison& cmp, size_t top);

}  // namespace strata::lowerbound
