// Compares a framework run (a Strata trace with layer-level spans: framework ops such as
// "aten::conv2d", optionally library-level spans such as "onednn::convolution" inside them) with the
// lower bound of the same model: end-to-end vs bound, per-layer gaps, the algorithm the framework's
// library picked vs the best benchmarked one, and framework ops with no ONNX layer (extra work).
#pragma once

#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "lowerbound/analyzer.h"
#include "model/trace.h"

namespace strata::lowerbound {

// ONNX operator a framework op implements ("aten::conv2d" -> "Conv"); empty when unknown.
std::string onnx_op_for_framework_op(const std::string& name);

struct LayerMatch {
  uint32_t layer = 0;        // ONNX layer index
  size_t span = 0;           // index into trace.spans
  double measured_ns = 0;    // framework op duration
  double library_ns = 0;     // library-level spans inside it (0 when none recorded)
  std::string library_impl;  // "impl" attribute of the longest library span inside, if any
  std::string framework_op;  // span name, e.g. "aten::conv2d"
  std::string module;        // "module" attribute (e.g. "layer1.0.conv1") when the tracer recorded it
};

struct TraceComparison {
  double end_to_end_ns = 0;       // one iteration of the model as the framework ran it
  std::string end_to_end_source;  // which spans gave it
  uint64_t iterations_seen = 0;
  std::vector<LayerMatch> matches;
  uint64_t unmatched_layers = 0;  // ONNX layers needing a call with no framework op found
  uint64_t extra_ops = 0;         // framework ops with no ONNX layer (e.g. BatchNorm folded by export)
  double extra_ops_ns = 0;
  std::vector<std::pair<std::string, std::pair<uint64_t, double>>> extra_by_name;  // name -> (count, ns)
  std::vector<std::string> warnings;
};

// False with `error` when the trace has no layer-level spans.
bool compare_with_trace(const LayerModel& model, const model::Trace& trace, TraceComparison* out,
                        std::string* error);

std::vector<analysis::Table> comparison_tables(const LayerModel& model, const ModelEstimate& estimate,
                                               const LatencyIndex& index, const TraceComparison& cmp,
                                               size_t top);

}  // namespace strata::lowerbound
