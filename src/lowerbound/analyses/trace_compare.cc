#include "lowerbound/analyses/trace_compare.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "core/level.h"
#include "lowerbound/harness/bench_plan.h"

namespace strata::lowerbound {

using table::Cell;
using table::Table;

std::string onnx_op_for_framework_op(const std::string& raw) {
  std::string name = raw;
  if (auto colon = name.rfind("::"); colon != std::string::npos) name = name.substr(colon + 2);
  while (!name.empty() && name.back() == '_') name.pop_back();  // in-place variants: relu_ -> relu
  static const std::unordered_map<std::string, std::string> kMap = {
      {"conv2d", "Conv"},
      {"convolution", "Conv"},
      {"linear", "Gemm"},
      {"addmm", "Gemm"},
      {"matmul", "MatMul"},
      {"bmm", "MatMul"},
      {"relu", "Relu"},
      {"hardtanh", "Clip"},
      {"relu6", "Clip"},
      {"sigmoid", "Sigmoid"},
      {"tanh", "Tanh"},
      {"max_pool2d", "MaxPool"},
      {"avg_pool2d", "AveragePool"},
      {"adaptive_avg_pool2d", "GlobalAveragePool"},
      {"batch_norm", "BatchNormalization"},
      {"add", "Add"},
      {"mul", "Mul"},
      {"cat", "Concat"},
      {"softmax", "Softmax"},
      {"dropout", "Dropout"},
      {"flatten", "Flatten"},
      {"reshape", "Reshape"},
      {"view", "Reshape"},
      {"lrn", "LRN"},
      {"local_response_norm", "LRN"}};
  auto it = kMap.find(name);
  return it == kMap.end() ? "" : it->second;
}

namespace {

// Whether a framework op (by the ONNX operator it implements) can be the given ONNX layer. The
// exporter turns an adaptive average pool into GlobalAveragePool when the output is 1x1, and into a
// plain AveragePool when the input already has the output size (vgg16's and alexnet's 7x7 / 6x6).
bool implements(const std::string& framework_onnx_op, const std::string& layer_op) {
  return framework_onnx_op == layer_op ||
         (framework_onnx_op == "GlobalAveragePool" && layer_op == "AveragePool");
}

}  // namespace

bool compare_with_trace(const LayerModel& model, const model::Trace& trace, TraceComparison* out,
                        std::string* error) {
  const uint8_t layer_level = static_cast<uint8_t>(Level::kLayer);
  const uint8_t model_level = static_cast<uint8_t>(Level::kModel);
  const uint8_t library_level = static_cast<uint8_t>(Level::kLibrary);
  std::vector<size_t> layer_spans, model_spans, library_spans;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    uint8_t level = trace.spans[i].level;
    if (level == layer_level)
      layer_spans.push_back(i);
    else if (level == model_level)
      model_spans.push_back(i);
    else if (level == library_level)
      library_spans.push_back(i);
  }
  if (layer_spans.empty()) {
    *error =
        "the trace has no layer-level spans: record the framework run with `strata record --level layer`";
    return false;
  }
  auto by_start = [&](size_t a, size_t b) {
    const SpanRecord &x = trace.spans[a], &y = trace.spans[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
  };
  std::sort(layer_spans.begin(), layer_spans.end(), by_start);
  std::sort(library_spans.begin(), library_spans.end(), by_start);

  // Window of one iteration: the last model-level span (steady state), else the whole trace.
  int64_t window_start = INT64_MIN, window_end = INT64_MAX;
  if (!model_spans.empty()) {
    std::sort(model_spans.begin(), model_spans.end(), by_start);
    const SpanRecord& last = trace.spans[model_spans.back()];
    window_start = last.start_ns;
    window_end = last.end_ns;
    out->iterations_seen = model_spans.size();
    out->end_to_end_source = "last of " + std::to_string(model_spans.size()) + " model-level spans";
  }
  // Outermost framework ops inside the window (nested ops such as aten::_convolution are the same layer).
  std::vector<size_t> ops;
  std::map<std::pair<uint16_t, uint32_t>, int64_t>
      open_until;  // per (process, thread): end of the enclosing op
  for (size_t i : layer_spans) {
    const SpanRecord& s = trace.spans[i];
    if (s.start_ns < window_start || s.end_ns > window_end) continue;
    int64_t& until = open_until[{s.process, s.tid}];
    if (s.start_ns < until) continue;  // nested inside the previous outermost op
    until = s.end_ns;
    ops.push_back(i);
  }
  // Without model spans, several iterations may be in the trace: keep the last one, found by
  // counting convolutions (or all ops when the model has none).
  if (model_spans.empty()) {
    size_t onnx_anchor = 0;
    for (const Layer& l : model.layers) onnx_anchor += l.op_type == "Conv" || l.op_type == "Gemm";
    std::vector<size_t> anchors;
    for (size_t k = 0; k < ops.size(); ++k) {
      std::string op = onnx_op_for_framework_op(std::string(trace.name(trace.spans[ops[k]])));
      if (op == "Conv" || op == "Gemm") anchors.push_back(k);
    }
    out->iterations_seen = onnx_anchor ? anchors.size() / onnx_anchor : 1;
    if (onnx_anchor && anchors.size() >= 2 * onnx_anchor) {
      size_t first = anchors[anchors.size() - onnx_anchor];
      // Ops of the last iteration begin right after the previous iteration's last anchor op.
      size_t begin = anchors[anchors.size() - onnx_anchor - 1] + 1;
      while (begin < first &&
             onnx_op_for_framework_op(std::string(trace.name(trace.spans[ops[begin]]))).empty())
        ++begin;
      ops.erase(ops.begin(), ops.begin() + static_cast<long>(begin));
    }
    if (anchors.size() % std::max<size_t>(onnx_anchor, 1) != 0)
      out->warnings.push_back("the trace holds " + std::to_string(anchors.size()) +
                              " conv/linear ops, not a multiple of the model's " +
                              std::to_string(onnx_anchor) + ": is it the same model?");
    out->end_to_end_source = "framework ops of the last of " + std::to_string(out->iterations_seen) +
                             " iterations (no model-level span)";
  }
  if (ops.empty()) {
    *error = "no framework ops inside the model span; was the trace recorded with --level layer?";
    return false;
  }
  if (!model_spans.empty()) {
    out->end_to_end_ns = static_cast<double>(window_end - window_start);
  } else {
    out->end_to_end_ns =
        static_cast<double>(trace.spans[ops.back()].end_ns - trace.spans[ops.front()].start_ns);
  }

  // A leveled trace re-times each level from its own run, shifted to the first model span: spans of
  // different levels no longer nest in time within later iterations, and matching here goes by time.
  for (const model::Process& p : trace.processes)
    if (p.properties.get("leveled")) {
      out->warnings.push_back(
          "this is a --leveled trace: its layer and library spans come from different runs and only line up "
          "with the model spans at the start; compare a trace recorded with `strata record --level library` "
          "(without --leveled) for per-layer results");
      break;
    }

  // Greedy in-order matching of ONNX layers (that need a library call) to framework ops of the same
  // operator, looking a few ops ahead so that ops without an ONNX layer are skipped, not mismatched.
  constexpr size_t kLookahead = 8;
  std::vector<bool> used(ops.size(), false);
  std::vector<int32_t> op_layer(ops.size(), -1);
  size_t cursor = 0;
  for (uint32_t li = 0; li < model.layers.size(); ++li) {
    const Layer& layer = model.layers[li];
    if (plan_layer(layer, "cpu", "f32", "nchw").cost == LayerCost::kFree) continue;
    bool found = false;
    for (size_t k = cursor; k < ops.size() && k < cursor + kLookahead; ++k) {
      if (used[k] ||
          !implements(onnx_op_for_framework_op(std::string(trace.name(trace.spans[ops[k]]))), layer.op_type))
        continue;
      const SpanRecord& s = trace.spans[ops[k]];
      LayerMatch m{li, ops[k], static_cast<double>(s.duration_ns()), 0, "", std::string(trace.name(s)), ""};
      if (auto module = trace.find_attr(ops[k], "module")) m.module = trace.attr_value_string(*module);
      // The implementation is the longest call of the class the layer needs (a reorder around a
      // convolution can take longer than the convolution itself).
      const std::string want = expected_call_class(layer.op_type);
      double longest = 0;
      auto first = std::lower_bound(library_spans.begin(), library_spans.end(), s.start_ns,
                                    [&](size_t a, int64_t t) { return trace.spans[a].start_ns < t; });
      for (auto it = first; it != library_spans.end() && trace.spans[*it].start_ns < s.end_ns; ++it) {
        const SpanRecord& lib = trace.spans[*it];
        if (lib.tid != s.tid || lib.process != s.process || lib.end_ns > s.end_ns) continue;
        m.library_ns += static_cast<double>(lib.duration_ns());
        if (static_cast<double>(lib.duration_ns()) > longest && call_class_of(trace.name(lib)) == want) {
          longest = static_cast<double>(lib.duration_ns());
          if (auto impl = trace.find_attr(*it, "impl")) m.library_impl = trace.attr_value_string(*impl);
        }
      }
      out->matches.push_back(std::move(m));
      used[k] = true;
      op_layer[k] = static_cast<int32_t>(li);
      cursor = k + 1;
      found = true;
      break;
    }
    if (!found) ++out->unmatched_layers;
  }
  std::map<std::string, std::pair<uint64_t, double>> extra;
  for (size_t k = 0; k < ops.size(); ++k) {
    if (used[k]) continue;
    const SpanRecord& s = trace.spans[ops[k]];
    if (is_metadata_op(onnx_op_for_framework_op(std::string(trace.name(s))))) continue;  // views: no work
    auto& e = extra[std::string(trace.name(s))];
    ++e.first;
    e.second += static_cast<double>(s.duration_ns());
    ++out->extra_ops;
    out->extra_ops_ns += static_cast<double>(s.duration_ns());
  }
  out->extra_by_name.assign(extra.begin(), extra.end());
  std::sort(out->extra_by_name.begin(), out->extra_by_name.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  if (model_spans.empty()) {
    window_start = trace.spans[ops.front()].start_ns;
    window_end = window_start;
    for (size_t i : ops) window_end = std::max(window_end, trace.spans[i].end_ns);
  }
  out->window_start_ns = window_start;
  out->window_end_ns = window_end;
  out->inefficiency = find_inefficiencies(model, trace, ops, op_layer, window_start, window_end);
  out->ops = std::move(ops);
  out->op_layer = std::move(op_layer);
  out->tensor_cores = tensor_core_usage(model, trace, *out);
  if (out->unmatched_layers)
    out->warnings.push_back(
        std::to_string(out->unmatched_layers) +
        " ONNX layers had no framework op of the same type in order: their gap is not ranked");
  return true;
}

std::vector<Table> comparison_tables(const LayerModel& model, const ModelEstimate& e,
                                     const LatencyIndex& index, const TraceComparison& cmp, size_t top) {
  std::vector<Table> tables;
  Table summary;
  summary.name = "framework_vs_bound";
  summary.title = "Framework end-to-end latency vs lower bound (" + e.dtype + ", " + e.layout + ")";
  summary.columns = {"model",
                     "measured_ms",
                     "sequential_bound_ms",
                     "parallel_bound_ms",
                     "normalized_sequential",
                     "normalized_parallel",
                     "matched_layers",
                     "unmatched_layers",
                     "extra_framework_ops",
                     "extra_ops_ms"};
  auto ratio = [&](double bound) {
    return cmp.end_to_end_ns > 0 ? Cell::real(bound / cmp.end_to_end_ns, 3) : Cell::empty();
  };
  summary.rows.push_back(
      {Cell::text(model.name), Cell::real(cmp.end_to_end_ns / 1e6, 3),
       Cell::real(e.bounds.sequential_ns / 1e6, 3), Cell::real(e.bounds.parallel_ns / 1e6, 3),
       ratio(e.bounds.sequential_ns), ratio(e.bounds.parallel_ns),
       Cell::integer(static_cast<int64_t>(cmp.matches.size())),
       Cell::integer(static_cast<int64_t>(cmp.unmatched_layers)),
       Cell::integer(static_cast<int64_t>(cmp.extra_ops)), Cell::real(cmp.extra_ops_ns / 1e6, 3)});
  summary.notes.push_back("measured: " + cmp.end_to_end_source);
  summary.notes.push_back("normalized = bound / measured (1.0: the framework reaches the bound)");
  for (const std::string& w : cmp.warnings) summary.notes.push_back("warning: " + w);
  tables.push_back(std::move(summary));

  Table gaps;
  gaps.name = "layer_gaps";
  gaps.title = "Top per-layer gaps: framework op time minus best benchmarked latency";
  gaps.columns = {"rank",        "layer",    "type",   "framework_op",
                  "measured_us", "bound_us", "gap_us", "share_of_total_gap"};
  std::vector<std::pair<double, const LayerMatch*>> ranked;
  double total_gap = 0;
  for (const LayerMatch& m : cmp.matches) {
    if (e.status[m.layer] != LayerStatus::kMeasured) continue;
    double gap = m.measured_ns - e.latency_ns[m.layer];
    ranked.push_back({gap, &m});
    if (gap > 0) total_gap += gap;
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (size_t r = 0; r < ranked.size() && r < top; ++r) {
    const LayerMatch& m = *ranked[r].second;
    const Layer& l = model.layers[m.layer];
    gaps.rows.push_back(
        {Cell::integer(static_cast<int64_t>(r + 1)), Cell::text(l.name), Cell::text(l.op_type),
         Cell::text(m.framework_op + (m.module.empty() ? "" : " (" + m.module + ")")),
         Cell::real(m.measured_ns / 1e3, 2), Cell::real(e.latency_ns[m.layer] / 1e3, 2),
         Cell::real(ranked[r].first / 1e3, 2),
         total_gap > 0 ? Cell::real(std::max(0.0, ranked[r].first) / total_gap, 3) : Cell::empty()});
  }
  tables.push_back(std::move(gaps));

  // Algorithm selection compares the library's convolution/GEMM primitive as the framework ran it
  // with the best benchmarked algorithm for the same layer. Layout conversions the framework ran
  // around it (oneDNN reorders, cudnnTransformTensor, nchwToNhwc kernels inside a cuDNN call) are
  // not an algorithm's time: they are listed on their own, and a second speedup includes them.
  Table algo;
  algo.name = "algorithm_selection";
  algo.title =
      "Algorithm selection: the library primitive the framework ran vs the best benchmarked algorithm "
      "(layout conversions apart)";
  algo.columns = {"layer",          "framework_impl",    "framework_primitive_us",
                  "conversions_us", "best_algorithm",    "best_impl",
                  "best_us",        "potential_speedup", "speedup_with_conversions"};
  double primitive_total = 0, conversion_total = 0, best_total = 0;
  uint64_t listed = 0;
  for (const LayerCalls& lc : cmp.inefficiency.layers) {
    if (lc.main_call < 0 || e.status[lc.layer] != LayerStatus::kMeasured) continue;
    const Layer& l = model.layers[lc.layer];
    if (l.op_type != "Conv" && l.op_type != "Gemm" && l.op_type != "MatMul") continue;
    const ObservedCall& main = lc.calls[static_cast<size_t>(lc.main_call)];
    double layout_kernels = 0;
    for (const auto& k : main.layout_kernels) layout_kernels += k.second;
    double primitive = std::max(0.0, main.time_ns() - (main.device_ns > 0 ? layout_kernels : 0));
    double conversions = main.device_ns > 0 ? layout_kernels : 0;
    for (const ObservedCall& c : lc.calls)
      if (c.params.call_class == "reorder") conversions += c.time_ns();
    const BenchRecord* best = e.best[lc.layer];
    if (primitive <= 0 || !best || best->median_ns <= 0) continue;
    ++listed;
    primitive_total += primitive;
    conversion_total += conversions;
    best_total += best->median_ns;
    algo.rows.push_back({Cell::text(l.name), Cell::text(main.params.algorithm),
                         Cell::real(primitive / 1e3, 2), Cell::real(conversions / 1e3, 2),
                         Cell::text(best->algorithm), Cell::text(best->implementation),
                         Cell::real(best->median_ns / 1e3, 2), Cell::real(primitive / best->median_ns, 2),
                         Cell::real((primitive + conversions) / best->median_ns, 2)});
  }
  if (best_total > 0) {
    algo.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::real(primitive_total / 1e3, 2),
                         Cell::real(conversion_total / 1e3, 2), Cell::text(""), Cell::text(""),
                         Cell::real(best_total / 1e3, 2), Cell::real(primitive_total / best_total, 2),
                         Cell::real((primitive_total + conversion_total) / best_total, 2)});
    algo.notes.push_back(
        "TOTAL: the " + std::to_string(listed) +
        " listed Conv/Gemm/MatMul layers only, summed: the framework's primitive time vs the best "
        "benchmarked latencies (potential_speedup: the algorithm choice alone); speedup_with_conversions "
        "adds the layout conversions the framework ran around those calls (reorders, transform kernels), "
        "which the benchmark, with its weights pre-packed and activations in the benchmarked layout, does "
        "not pay. "
        "Neither is the model's end-to-end speedup (framework_vs_bound is)");
    algo.notes.push_back(
        "framework_primitive_us: the layer's main library call (host time on CPU; on GPU its kernels' "
        "device time less the layout kernels inside it)");
  } else {
    algo.notes.push_back(
        "no library-level spans in the trace: record with --level library to compare algorithms");
  }
  (void)index;
  tables.push_back(std::move(algo));

  Table extra;
  extra.name = "extra_framework_ops";
  extra.title = "Framework ops with no ONNX layer (work the exported graph does not need)";
  extra.columns = {"framework_op", "count", "total_us"};
  for (size_t r = 0; r < cmp.extra_by_name.size() && r < top; ++r)
    extra.rows.push_back({Cell::text(cmp.extra_by_name[r].first),
                          Cell::integer(static_cast<int64_t>(cmp.extra_by_name[r].second.first)),
                          Cell::real(cmp.extra_by_name[r].second.second / 1e3, 2)});
  tables.push_back(std::move(extra));
  for (Table& t : inefficiency_tables(model, e, cmp.inefficiency, cmp.end_to_end_ns, top))
    tables.push_back(std::move(t));
  if (cmp.tensor_cores.has_kernels) tables.push_back(tensor_core_table(model, cmp.tensor_cores));
  return tables;
}

}  // namespace strata::lowerbound
