#include "lowerbound/analyses/trace_compare.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "core/attr_keys.h"
#include "core/level.h"
#include "lowerbound/analyses/iteration.h"
#include "lowerbound/harness/bench_plan.h"
#include "trace/span_tree.h"

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

Iteration::Iteration(const analysis::Workload& workload, std::vector<size_t> ops,
                     std::vector<int32_t> op_layer, int64_t window_start_ns, int64_t window_end_ns)
    : workload_(workload),
      ops_(std::move(ops)),
      op_layer_(std::move(op_layer)),
      start_(window_start_ns),
      end_(window_end_ns) {
  for (size_t k = 0; k < ops_.size(); ++k) op_of_[ops_[k]] = k;
  op_layer_.resize(ops_.size(), -1);
}

bool Iteration::in_window(size_t span) const {
  const SpanRecord& s = trace().spans[span];
  return s.start_ns >= start_ && s.end_ns <= end_;
}

int64_t Iteration::owner(size_t i) const {
  int32_t top = workload_.top_layer(i);
  if (top >= 0) {
    auto it = op_of_.find(static_cast<size_t>(top));
    return it == op_of_.end() ? -2 : static_cast<int64_t>(it->second);
  }
  return in_window(i) ? -1 : -2;
}

namespace {

// The framework's intra-op thread count, on the model span (run_torch_model.py sets it).

// The evaluation to compare: the last (steady state) of those with framework ops, model-level ones
// first. Sets the comparison's window, end-to-end time and source.
const analysis::Evaluation* choose_evaluation(const analysis::Workload& w, TraceComparison* out) {
  const analysis::Evaluation* chosen = nullptr;
  uint64_t with_model_span = 0, with_layers = 0;
  for (const analysis::Evaluation& ev : w.evaluations()) {
    if (ev.layers.empty()) continue;
    ++with_layers;
    with_model_span += ev.model_span >= 0;
    bool better = !chosen || (ev.model_span >= 0) > (chosen->model_span >= 0) ||
                  ((ev.model_span >= 0) == (chosen->model_span >= 0) && ev.start_ns >= chosen->start_ns);
    if (better) chosen = &ev;
  }
  if (!chosen) return nullptr;
  out->window_start_ns = chosen->start_ns;
  out->window_end_ns = chosen->start_ns + chosen->latency_ns;
  out->end_to_end_ns = static_cast<double>(chosen->latency_ns);
  if (chosen->model_span >= 0) {
    if (std::optional<double> t = w.number(static_cast<size_t>(chosen->model_span), attr_keys::kThreads);
        t && *t >= 1)
      out->framework_threads = static_cast<int>(*t);
    out->iterations_seen = with_model_span;
    out->end_to_end_source = "last of " + std::to_string(with_model_span) + " model-level spans";
    for (const std::string& note : w.evaluation_notes()) out->warnings.push_back(note);
  } else {
    out->iterations_seen = with_layers;
    out->end_to_end_source = "first to last framework op of the process (no model-level span)";
    out->warnings.push_back(
        "no model-level spans: the whole run (" + std::to_string(chosen->layers.size()) +
        " framework ops) is compared as one iteration; mark each prediction with strata.span(\"predict\", "
        "level=\"model\") or strata.torch.predict_step() to compare one");
  }
  return chosen;
}

// The impl of the longest library call of the class a layer needs, and the time of every library
// call in the op (reorders included); nested library calls are part of their outer call.
void library_calls_of_ops(const analysis::Workload& w, const std::vector<size_t>& ops,
                          std::vector<double>* library_ns, std::vector<std::pair<double, size_t>>* longest,
                          const std::vector<std::string>& want) {
  const trace::Trace& trace = w.trace();
  const uint8_t library_level = static_cast<uint8_t>(Level::kLibrary);
  std::unordered_map<size_t, size_t> op_of;
  for (size_t k = 0; k < ops.size(); ++k) op_of[ops[k]] = k;
  library_ns->assign(ops.size(), 0);
  longest->assign(ops.size(), {0.0, SIZE_MAX});
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != library_level) continue;
    int32_t parent = w.tree().parent(i);
    if (parent >= 0 && trace.spans[static_cast<size_t>(parent)].level == library_level) continue;
    int32_t top = w.top_layer(i);
    auto it = top >= 0 ? op_of.find(static_cast<size_t>(top)) : op_of.end();
    if (it == op_of.end()) continue;
    const size_t k = it->second;
    const double ns = static_cast<double>(s.duration_ns());
    (*library_ns)[k] += ns;
    if (!want[k].empty() && ns > (*longest)[k].first && call_class_of(trace.name(s)) == want[k])
      (*longest)[k] = {ns, i};
  }
}

// Greedy in-order matching of ONNX layers (that need a library call) to framework ops of the same
// operator, looking a few ops ahead so that ops without an ONNX layer are skipped, not mismatched.
void match_layers(const LayerModel& model, const analysis::Workload& w, TraceComparison* out) {
  const trace::Trace& trace = w.trace();
  const std::vector<size_t>& ops = out->ops;
  constexpr size_t kLookahead = 8;
  std::vector<std::string> op_onnx(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    op_onnx[k] = onnx_op_for_framework_op(std::string(trace.name(trace.spans[ops[k]])));
  out->op_layer.assign(ops.size(), -1);
  size_t cursor = 0;
  for (uint32_t li = 0; li < model.layers.size(); ++li) {
    const Layer& layer = model.layers[li];
    if (plan_layer(layer, "cpu", "f32", "nchw").cost == LayerCost::kFree) continue;
    bool found = false;
    for (size_t k = cursor; k < ops.size() && k < cursor + kLookahead; ++k) {
      if (out->op_layer[k] >= 0 || !implements(op_onnx[k], layer.op_type)) continue;
      out->op_layer[k] = static_cast<int32_t>(li);
      cursor = k + 1;
      found = true;
      break;
    }
    if (!found) ++out->unmatched_layers;
  }
  std::vector<std::string> want(ops.size());
  for (size_t k = 0; k < ops.size(); ++k)
    if (out->op_layer[k] >= 0)
      want[k] = expected_call_class(model.layers[static_cast<size_t>(out->op_layer[k])].op_type);
  std::vector<double> library_ns;
  std::vector<std::pair<double, size_t>> longest;
  library_calls_of_ops(w, ops, &library_ns, &longest, want);
  for (size_t k = 0; k < ops.size(); ++k) {
    if (out->op_layer[k] < 0) continue;
    const SpanRecord& s = trace.spans[ops[k]];
    LayerMatch m{static_cast<uint32_t>(out->op_layer[k]),
                 ops[k],
                 static_cast<double>(s.duration_ns()),
                 library_ns[k],
                 "",
                 std::string(trace.name(s)),
                 ""};
    if (auto module = trace.find_attr(ops[k], "module")) m.module = trace.attr_value_string(*module);
    // The implementation is the longest call of the class the layer needs (a reorder around a
    // convolution can take longer than the convolution itself).
    if (longest[k].second != SIZE_MAX)
      if (auto impl = trace.find_attr(longest[k].second, "impl"))
        m.library_impl = trace.attr_value_string(*impl);
    out->matches.push_back(std::move(m));
  }
  std::sort(out->matches.begin(), out->matches.end(),
            [](const LayerMatch& a, const LayerMatch& b) { return a.layer < b.layer; });
}

// Framework ops with no ONNX layer (views apart: no work), by name.
void count_extra_ops(const trace::Trace& trace, TraceComparison* out) {
  std::map<std::string, std::pair<uint64_t, double>> extra;
  for (size_t k = 0; k < out->ops.size(); ++k) {
    if (out->op_layer[k] >= 0) continue;
    const SpanRecord& s = trace.spans[out->ops[k]];
    if (is_metadata_op(onnx_op_for_framework_op(std::string(trace.name(s))))) continue;
    auto& e = extra[std::string(trace.name(s))];
    ++e.first;
    e.second += static_cast<double>(s.duration_ns());
    ++out->extra_ops;
    out->extra_ops_ns += static_cast<double>(s.duration_ns());
  }
  out->extra_by_name.assign(extra.begin(), extra.end());
  std::sort(out->extra_by_name.begin(), out->extra_by_name.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
}

}  // namespace

bool compare_with_workload(const LayerModel& model, const analysis::Workload& w, TraceComparison* out,
                           std::string* error) {
  if (!w.has_layers()) {
    *error =
        "the trace has no layer-level spans: record the framework run with `strata record --level layer`";
    return false;
  }
  const analysis::Evaluation* ev = choose_evaluation(w, out);
  if (!ev) {
    *error = "no evaluation of the trace holds framework ops; was the trace recorded with --level layer?";
    return false;
  }
  out->ops.assign(ev->layers.begin(), ev->layers.end());
  // A leveled trace re-times each level from its own run, shifted to the first model span: spans of
  // different levels no longer nest in time within later iterations.
  for (const trace::Process& p : w.trace().processes)
    if (p.properties.get("leveled")) {
      out->warnings.push_back(
          "this is a --leveled trace: its layer and library spans come from different runs and only line up "
          "with the model spans at the start; compare a trace recorded with `strata record --level library` "
          "(without --leveled) for per-layer results");
      break;
    }
  match_layers(model, w, out);
  count_extra_ops(w.trace(), out);
  Iteration iteration(w, out->ops, out->op_layer, out->window_start_ns, out->window_end_ns);
  out->inefficiency = find_inefficiencies(model, iteration);
  out->tensor_cores = tensor_core_usage(model, iteration);
  if (out->unmatched_layers)
    out->warnings.push_back(
        std::to_string(out->unmatched_layers) +
        " ONNX layers had no framework op of the same type in order: their gap is not ranked");
  return true;
}

bool compare_with_trace(const LayerModel& model, const trace::Trace& trace, TraceComparison* out,
                        std::string* error) {
  const analysis::Workload workload(trace, trace.tree());  // the tree built when the trace was opened
  return compare_with_workload(model, workload, out, error);
}

namespace {

// The library thread count of the benchmark rows behind the bound (the most common one), 0 if unknown.
int bench_threads(const ModelEstimate& e) {
  std::map<int, size_t> count;
  for (const BenchRecord* r : e.best)
    if (r && r->threads > 0) ++count[r->threads];
  int best = 0;
  size_t most = 0;
  for (const auto& [threads, n] : count)
    if (n > most) best = threads, most = n;
  return best;
}

std::string thread_note(const ModelEstimate& e, const TraceComparison& cmp) {
  const int bench = bench_threads(e);
  std::string text =
      "threads: benchmarks " + (bench > 0 ? std::to_string(bench) : std::string("not recorded")) +
      ", framework " +
      (cmp.framework_threads > 0 ? std::to_string(cmp.framework_threads)
                                 : std::string("not recorded (pass threads=torch.get_num_threads() to "
                                               "strata.torch.predict_step)"));
  if (bench > 0 && cmp.framework_threads > 0 && bench != cmp.framework_threads)
    text = "warning: " + text + ": the bound is not for the framework's setting; benchmark with --threads " +
           std::to_string(cmp.framework_threads);
  return text;
}

}  // namespace

std::string bound_check(const LayerModel& model, const ModelEstimate& e, const TraceComparison& cmp) {
  if (!(cmp.end_to_end_ns > 0) || e.bounds.sequential_ns <= cmp.end_to_end_ns) return "";
  char head[256];
  std::snprintf(
      head, sizeof head,
      "the sequential bound (%.3f ms) exceeds the measured run (%.3f ms): normalized %.3f > 1 means the "
      "bound is not one",
      e.bounds.sequential_ns / 1e6, cmp.end_to_end_ns / 1e6, e.bounds.sequential_ns / cmp.end_to_end_ns);
  // The layers whose benchmarked latency is furthest above the framework's own op for them.
  std::vector<std::pair<double, const LayerMatch*>> above;
  for (const LayerMatch& m : cmp.matches)
    if (m.layer < e.status.size() && e.status[m.layer] == LayerStatus::kMeasured &&
        e.latency_ns[m.layer] > m.measured_ns)
      above.push_back({e.latency_ns[m.layer] - m.measured_ns, &m});
  std::sort(above.begin(), above.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string text = head;
  if (!above.empty()) {
    text +=
        "; " + std::to_string(above.size()) + " layers benchmarked slower than the framework ran them, e.g.";
    for (size_t i = 0; i < above.size() && i < 3; ++i) {
      char one[200];
      std::snprintf(one, sizeof one, "%s %s (bound %.1f us, framework %.1f us)", i ? "," : "",
                    model.layers[above[i].second->layer].name.c_str(),
                    e.latency_ns[above[i].second->layer] / 1e3, above[i].second->measured_ns / 1e3);
      text += one;
    }
  }
  return text +
         "; the benchmarks were disturbed or ran with other settings (threads, layout): re-measure them with "
         "`strata bench run MODEL --recheck` (and the framework's --threads)";
}

namespace {

Table summary_table(const LayerModel& model, const ModelEstimate& e, const TraceComparison& cmp) {
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
  summary.notes.push_back(thread_note(e, cmp));
  for (const std::string& w : cmp.warnings) summary.notes.push_back("warning: " + w);
  if (std::string w = bound_check(model, e, cmp); !w.empty()) summary.notes.push_back("warning: " + w);
  return summary;
}

Table gap_table(const LayerModel& model, const ModelEstimate& e, const TraceComparison& cmp, size_t top) {
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
  return gaps;
}

Table algorithm_table(const LayerModel& model, const ModelEstimate& e, const TraceComparison& cmp) {
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
  return algo;
}

Table extra_ops_table(const TraceComparison& cmp, size_t top) {
  Table extra;
  extra.name = "extra_framework_ops";
  extra.title = "Framework ops with no ONNX layer (work the exported graph does not need)";
  extra.columns = {"framework_op", "count", "total_us"};
  for (size_t r = 0; r < cmp.extra_by_name.size() && r < top; ++r)
    extra.rows.push_back({Cell::text(cmp.extra_by_name[r].first),
                          Cell::integer(static_cast<int64_t>(cmp.extra_by_name[r].second.first)),
                          Cell::real(cmp.extra_by_name[r].second.second / 1e3, 2)});
  return extra;
}

}  // namespace

std::vector<Table> framework_vs_bound_tables(const LayerModel& model, const ModelEstimate& e,
                                             const TraceComparison& cmp, size_t top) {
  std::vector<Table> tables;
  tables.push_back(summary_table(model, e, cmp));
  tables.push_back(gap_table(model, e, cmp, top));
  tables.push_back(algorithm_table(model, e, cmp));
  tables.push_back(extra_ops_table(cmp, top));
  return tables;
}

std::vector<Table> comparison_tables(const LayerModel& model, const ModelEstimate& e,
                                     const TraceComparison& cmp, size_t top) {
  std::vector<Table> tables = framework_vs_bound_tables(model, e, cmp, top);
  for (Table& t : inefficiency_tables(model, e, cmp.inefficiency, cmp.end_to_end_ns, top))
    tables.push_back(std::move(t));
  if (cmp.tensor_cores.has_kernels) tables.push_back(tensor_core_table(model, cmp.tensor_cores));
  return tables;
}

}  // namespace strata::lowerbound
