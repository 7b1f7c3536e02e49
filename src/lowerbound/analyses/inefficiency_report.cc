#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "lowerbound/analyses/framework_inefficiency.h"
#include "lowerbound/harness/bench_plan.h"

namespace strata::lowerbound {

using table::Cell;
using table::Table;

namespace {

struct Mismatch {
  std::string parameter, expected, observed;
};

std::string pads_text(const std::vector<int64_t>& begin, const std::vector<int64_t>& end) {
  return begin == end ? dims_text(begin) : dims_text(begin) + " / " + dims_text(end);
}

// The layer's parameters vs the call's, where the call's tracer recorded them.
std::vector<Mismatch> compare_params(const LayerModel& model, uint32_t li, const ModelEstimate& e,
                                     const CallParams& p) {
  std::vector<Mismatch> out;
  const Layer& layer = model.layers[li];
  const std::string& cls = p.call_class;
  const size_t spatial =
      !layer.input_shapes.empty() && layer.input_shapes[0].size() > 2 ? layer.input_shapes[0].size() - 2 : 0;
  auto spatial_attr = [&](const char* key, int64_t fallback) {
    std::vector<int64_t> v = layer.ints_attr(key);
    if (v.size() != spatial) v.assign(spatial, fallback);
    return v;
  };
  std::vector<int64_t> pads = layer.ints_attr("pads");
  if (pads.size() != 2 * spatial) pads.assign(2 * spatial, 0);
  std::vector<int64_t> pads_begin(pads.begin(), pads.begin() + static_cast<long>(spatial));
  std::vector<int64_t> pads_end(pads.begin() + static_cast<long>(spatial), pads.end());
  const bool global_pool = starts_with(layer.op_type, "Global");

  bool padded_outside = false;
  if (!p.src.empty() && !layer.input_shapes.empty() && cls != "gemm" && cls != "binary" && cls != "concat") {
    const Shape& want = layer.input_shapes[0];
    if (p.src != want) {
      bool grown = (cls == "conv" || cls == "pool") && p.src.size() == want.size() && want.size() > 2 &&
                   p.src[0] == want[0] && p.src[1] == want[1];
      for (size_t d = 2; grown && d < want.size(); ++d) grown = p.src[d] >= want[d];
      if (grown) {
        padded_outside = true;
        out.push_back({"padding", "pads " + pads_text(pads_begin, pads_end) + " inside the call",
                       "input padded outside the call: " + shape_text(want) + " -> " + dims_text(p.src)});
      } else {
        out.push_back({"src shape", shape_text(want), dims_text(p.src)});
      }
    }
  }
  if (!p.weights.empty() && cls == "conv" && !layer.weight_shapes.empty() &&
      p.weights != layer.weight_shapes[0])
    out.push_back({"weights shape", shape_text(layer.weight_shapes[0]), dims_text(p.weights)});
  if (!p.dst.empty() && !layer.output_shapes.empty() && p.dst != layer.output_shapes[0])
    out.push_back({"dst shape", shape_text(layer.output_shapes[0]), dims_text(p.dst)});
  if (cls == "conv") {
    if (!p.pads.empty() && !padded_outside && p.pads != pads_begin)
      out.push_back({"padding", pads_text(pads_begin, pads_end), dims_text(p.pads)});
    else if (p.library == "cudnn" && !p.pads.empty() && !padded_outside && pads_begin != pads_end)
      out.push_back({"padding", "asymmetric " + pads_text(pads_begin, pads_end),
                     "symmetric " + dims_text(p.pads) + " (cannot express it)"});
    if (!p.strides.empty() && p.strides != spatial_attr("strides", 1))
      out.push_back({"strides", dims_text(spatial_attr("strides", 1)), dims_text(p.strides)});
    if (!p.dilations.empty() && p.dilations != spatial_attr("dilations", 1))
      out.push_back({"dilations", dims_text(spatial_attr("dilations", 1)), dims_text(p.dilations)});
    if (p.groups > 0 && p.groups != layer.int_attr("group", 1))
      out.push_back({"groups", std::to_string(layer.int_attr("group", 1)), std::to_string(p.groups)});
  }
  if (cls == "pool" && !global_pool) {
    if (!p.window.empty() && p.window != spatial_attr("kernel_shape", 1))
      out.push_back({"window", dims_text(spatial_attr("kernel_shape", 1)), dims_text(p.window)});
    if (!p.strides.empty() && p.strides != spatial_attr("strides", 1))
      out.push_back({"strides", dims_text(spatial_attr("strides", 1)), dims_text(p.strides)});
    if (!p.pads.empty() && !padded_outside && p.pads != pads_begin)
      out.push_back({"padding", pads_text(pads_begin, pads_end), dims_text(p.pads)});
  }
  if (cls == "gemm" && p.gemm_m > 0 && !layer.input_shapes.empty() && !layer.output_shapes.empty() &&
      layer.input_shapes[0].size() == 2 && layer.output_shapes[0].size() == 2) {
    int64_t n = layer.input_shapes[0][0], k = layer.input_shapes[0][1], o = layer.output_shapes[0][1];
    bool ok = p.gemm_k == k && ((p.gemm_m == n && p.gemm_n == o) || (p.gemm_m == o && p.gemm_n == n));
    if (!ok)
      out.push_back(
          {"gemm m/n/k", "{" + std::to_string(n) + "," + std::to_string(o) + "}/" + std::to_string(k),
           std::to_string(p.gemm_m) + "," + std::to_string(p.gemm_n) + "/" + std::to_string(p.gemm_k)});
  }
  if (!p.dtype.empty() && p.dtype != e.dtype) out.push_back({"data type", e.dtype, p.dtype});
  // The bound's activation layout: nchw/nhwc, or "blocked" (any blocked tag the library picks).
  auto layout_ok = [&](const std::string& seen) {
    return e.layout == "blocked" ? starts_with(seen, "blocked") : seen == e.layout;
  };
  if (!p.layout.empty() && cls != "gemm" && !layout_ok(p.layout))
    out.push_back({"layout", e.layout, p.layout});
  // oneDNN benchmarks let the library pick (and pre-pack) the weights format; cuDNN's is the layout's.
  if (p.library == "cudnn" && cls == "conv" && !p.weights_layout.empty() && p.weights_layout != e.layout)
    out.push_back({"weights layout", e.layout, p.weights_layout});
  if (!p.prop_kind.empty() && p.prop_kind != "forward_inference" && cls != "reorder")
    out.push_back({"propagation kind", "forward_inference", p.prop_kind});
  if (cls == "conv" && !p.post_ops.empty()) {
    std::string want = "none";
    if (e.fused)
      if (std::optional<FusionChain> chain = fusion_chain(model, li)) want = chain->post_ops;
    if (p.library == "cudnn") {
      // cuDNN's spans record the fused activation only (a residual z is not among the attributes), in
      // cuDNN's names.
      std::vector<std::string> ops = split_post_ops(want);
      std::string act = !ops.empty() && ops.back() != "sum" && ops.back() != "none" ? ops.back() : "none";
      want = act == "logistic" ? "sigmoid" : act == "clip" ? "clipped_relu" : act;
    }
    if (p.post_ops != want) out.push_back({"post-ops", want, p.post_ops});
  }
  const BenchRecord* best = li < e.best.size() ? e.best[li] : nullptr;
  if (best && (cls == "conv" || cls == "gemm") && !p.algorithm.empty()) {
    if (p.library == "onednn" && best->backend == "cpu" && !best->implementation.empty() &&
        p.algorithm != best->implementation)
      out.push_back({"algorithm", best->algorithm + " (" + best->implementation + ")", p.algorithm});
    if (p.library == "cudnn" && best->backend == "cuda" && p.algorithm != best->algorithm)
      out.push_back({"algorithm", best->algorithm, p.algorithm});
  }
  return out;
}

std::string layout_expectation(const ModelEstimate& e) {
  return e.layout == "blocked" ? "kept in the library's blocked layout between layers (no reorder)"
                               : e.layout + " as benchmarked (no reorder)";
}

}  // namespace

InefficiencyReport analyze_inefficiencies(const LayerModel& model, const ModelEstimate& e,
                                          const InefficiencyFindings& f) {
  InefficiencyReport r;
  std::string backend = "cpu";
  for (const LayerCalls& lc : f.layers)
    for (const ObservedCall& c : lc.calls)
      if (c.params.library == "cudnn" || c.params.library == "cublas") backend = "cuda";
  std::map<int32_t, std::vector<const ExtraWork*>> extras_of;
  for (const ExtraWork& w : f.extras) {
    if (w.layer >= 0) {
      extras_of[w.layer].push_back(&w);
      (w.category == "reorder" ? r.reorder_ns : r.extra_in_layers_ns) += w.ns;
    } else {
      r.extra_outside_layers_ns += w.ns;
    }
  }
  for (const LayerCalls& lc : f.layers) {
    const Layer& layer = model.layers[lc.layer];
    LayerInefficiency li;
    li.layer = lc.layer;
    li.framework_op = lc.framework_op;
    li.expected_call = plan_layer(layer, backend, e.dtype, e.layout).library_call;
    li.calls = lc.calls.size();
    if (lc.layer < e.status.size() && e.status[lc.layer] == LayerStatus::kMeasured)
      li.bound_ns = e.latency_ns[lc.layer];
    std::set<std::string> deviated;
    if (lc.main_call >= 0) {
      const ObservedCall& main = lc.calls[static_cast<size_t>(lc.main_call)];
      li.main_call_ns = main.time_ns();
      std::vector<Mismatch> mismatches = compare_params(model, lc.layer, e, main.params);
      for (const auto& [kernel, ns] : main.layout_kernels)
        mismatches.push_back({"layout (inside the call)", layout_expectation(e), "converted by " + kernel});
      if (!mismatches.empty()) {
        double excess = li.bound_ns >= 0 ? std::max(0.0, li.main_call_ns - li.bound_ns) : 0;
        li.deviation_excess_ns = excess;
        for (const Mismatch& m : mismatches) {
          r.deviations.push_back({lc.layer, main.name, m.parameter, m.expected, m.observed, main.time_ns(),
                                  excess, mismatches.size() > 1});
          deviated.insert(m.parameter);
        }
      }
    }
    for (const ExtraWork* w : extras_of[static_cast<int32_t>(lc.layer)]) {
      if (w->category != "reorder") {
        li.extra_ns += w->ns;
        continue;
      }
      li.reorder_ns += w->ns;
      std::string parameter = w->role.empty() ? "layout" : w->role + " layout";
      std::string expected =
          w->role == "weights" ? "pre-packed once (reorder not per call)" : layout_expectation(e);
      std::string observed = w->role == "weights" ? "reordered at every call"
                             : w->role == "dst"   ? "reordered after the call"
                             : w->role == "src"   ? "reordered before the call"
                                                  : "reorder around the call";
      if (!w->detail.empty()) observed += " (" + w->detail + ")";
      r.deviations.push_back({lc.layer, w->name, parameter, expected, observed, w->ns, w->ns, false});
      deviated.insert(parameter);
    }
    if (!f.has_device_spans) li.outside_ns = lc.outside_calls_ns;
    li.deviated.assign(deviated.begin(), deviated.end());
    if (!li.deviated.empty()) ++r.deviating_layers;
    r.outside_calls_ns += li.outside_ns;
    r.deviation_excess_ns += li.deviation_excess_ns;
    r.layers.push_back(std::move(li));
  }
  std::stable_sort(r.layers.begin(), r.layers.end(),
                   [](const LayerInefficiency& a, const LayerInefficiency& b) {
                     return a.overhead_ns() > b.overhead_ns();
                   });
  std::stable_sort(
      r.deviations.begin(), r.deviations.end(),
      [](const ParameterDeviation& a, const ParameterDeviation& b) { return a.cost_ns > b.cost_ns; });
  return r;
}

namespace {

constexpr const char* kNoLibrary =
    "no library-level spans in the analysed iteration: record with --level library (oneDNN on CPU; "
    "cuDNN/cuBLAS with the GPU collector) to inspect the calls";

Table deviation_table(const LayerModel& model, const InefficiencyFindings& f, const InefficiencyReport& r,
                      size_t top) {
  const char* no_library = kNoLibrary;
  Table dev;
  dev.name = "parameter_deviations";
  dev.title = "Parameter deviations: library calls that ran differently from what the layer needs";
  dev.columns = {"rank",     "layer",   "call",    "parameter", "expected",
                 "observed", "call_us", "cost_us", "cost_is"};
  for (size_t k = 0; k < r.deviations.size() && k < top; ++k) {
    const ParameterDeviation& d = r.deviations[k];
    bool conversion = call_class_of(d.call) == "reorder";
    dev.rows.push_back({Cell::integer(static_cast<int64_t>(k + 1)), Cell::text(model.layers[d.layer].name),
                        Cell::text(d.call), Cell::text(d.parameter), Cell::text(d.expected),
                        Cell::text(d.observed), Cell::real(d.call_ns / 1e3, 2),
                        Cell::real(d.cost_ns / 1e3, 2),
                        Cell::text(conversion      ? "conversion time"
                                   : d.shared_cost ? "call excess, shared"
                                                   : "call excess")});
  }
  if (!f.has_library_spans && !f.has_device_spans) dev.notes.push_back(no_library);
  // Per parameter: layers and cost (a call's shared excess counted once per layer).
  std::map<std::string, std::pair<std::set<uint32_t>, double>> by_parameter;
  std::set<std::pair<std::string, uint32_t>> counted;
  for (const ParameterDeviation& d : r.deviations) {
    auto& agg = by_parameter[d.parameter];
    agg.first.insert(d.layer);
    if (!d.shared_cost || counted.insert({d.parameter, d.layer}).second) agg.second += d.cost_ns;
  }
  for (const auto& [parameter, agg] : by_parameter) {
    char buf[160];
    std::snprintf(buf, sizeof(buf), "%s: %zu layers, %.2f us", parameter.c_str(), agg.first.size(),
                  agg.second / 1e3);
    dev.notes.push_back(buf);
  }
  if (r.deviations.size() > top)
    dev.notes.push_back(std::to_string(r.deviations.size() - top) + " more deviations not shown (--top)");
  dev.notes.push_back(
      "cost: for a conversion (reorder) its time; for the call's own parameters the call's time over the "
      "benchmarked latency, shared by that call's deviations (counted once in totals)");
  bool onednn = false, onednn_described = false;  // described: data type / format tags were recorded
  for (const LayerCalls& lc : f.layers)
    for (const ObservedCall& c : lc.calls)
      if (c.params.library == "onednn") {
        onednn = true;
        onednn_described = onednn_described || !c.params.dtype.empty() || !c.params.layout.empty();
      }
  if (onednn && !onednn_described)
    dev.notes.push_back(
        "these oneDNN spans record the implementation and logical shapes only: data type, format tags, "
        "strides/padding and post-ops are not compared; layouts are seen through the reorders around a call");
  return dev;
}

Table extra_calls_table(const InefficiencyFindings& f, const InefficiencyReport& r, double end_to_end_ns,
                        size_t top) {
  const char* no_library = kNoLibrary;
  Table extra;
  extra.name = "extra_calls";
  extra.title = "Extra calls and device work: what no layer's expected library call accounts for";
  extra.columns = {"rank", "name", "category", "where", "count", "layers", "total_us", "share_of_measured"};
  struct Agg {
    uint64_t count = 0;
    std::set<int32_t> layers;
    double ns = 0;
  };
  std::map<std::tuple<std::string, std::string, bool>, Agg> groups;
  double extra_total = 0;
  for (const ExtraWork& w : f.extras) {
    Agg& a = groups[{w.name, w.category, w.device}];
    ++a.count;
    if (w.layer >= 0) a.layers.insert(w.layer);
    a.ns += w.ns;
    extra_total += w.ns;
  }
  std::vector<std::pair<std::tuple<std::string, std::string, bool>, Agg>> ranked(groups.begin(),
                                                                                 groups.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.ns > b.second.ns; });
  auto share = [&](double ns) {
    return end_to_end_ns > 0 ? Cell::real(ns / end_to_end_ns, 3) : Cell::empty();
  };
  for (size_t k = 0; k < ranked.size() && k < top; ++k) {
    const auto& [key, a] = ranked[k];
    extra.rows.push_back({Cell::integer(static_cast<int64_t>(k + 1)), Cell::text(std::get<0>(key)),
                          Cell::text(std::get<1>(key)), Cell::text(std::get<2>(key) ? "device" : "host"),
                          Cell::integer(static_cast<int64_t>(a.count)),
                          Cell::integer(static_cast<int64_t>(a.layers.size())), Cell::real(a.ns / 1e3, 2),
                          share(a.ns)});
  }
  if (!ranked.empty())
    extra.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::text(""), Cell::text(""),
                          Cell::integer(static_cast<int64_t>(f.extras.size())), Cell::empty(),
                          Cell::real(extra_total / 1e3, 2), share(extra_total)});
  if (!f.has_library_spans && !f.has_device_spans) extra.notes.push_back(no_library);
  auto ms = [](double ns) {
    char buf[32];
    std::snprintf(buf, sizeof(buf), "%.3f ms", ns / 1e6);
    return std::string(buf);
  };
  extra.notes.push_back(
      "inside matched layers: reorders " + ms(r.reorder_ns) + ", other " + ms(r.extra_in_layers_ns) +
      "; in framework ops without an ONNX layer or outside every op: " + ms(r.extra_outside_layers_ns));
  extra.notes.push_back(
      "counted: library calls other than a layer's one expected call, and (GPU) kernels, copies, memsets and "
      "non-launch runtime calls made outside library calls by a layer that also called the library; a layer "
      "that made no library call ran its own kernels, which are its work, not extra");
  if (r.outside_calls_ns > 0)
    extra.notes.push_back("framework time inside matched ops outside their library calls (host, CPU runs): " +
                          ms(r.outside_calls_ns) + " (per layer: framework_inefficiency.outside_calls_us)");
  return extra;
}

Table layer_inefficiency_table(const LayerModel& model, const InefficiencyFindings& f,
                               const InefficiencyReport& r, size_t top) {
  const char* no_library = kNoLibrary;
  Table per_layer;
  per_layer.name = "framework_inefficiency";
  per_layer.title =
      "Framework inefficiency per layer: deviations, conversions and extra work around each call";
  per_layer.columns = {
      "rank",     "layer",      "type",       "framework_op", "expected_call",    "calls",      "call_us",
      "bound_us", "deviations", "reorder_us", "extra_us",     "outside_calls_us", "overhead_us"};
  double total_overhead = 0, total_reorder = 0, total_extra = 0, total_outside = 0;
  size_t shown = 0;
  for (const LayerInefficiency& li : r.layers) {
    total_overhead += li.overhead_ns();
    total_reorder += li.reorder_ns;
    total_extra += li.extra_ns;
    total_outside += li.outside_ns;
    if (shown >= top || li.overhead_ns() <= 0) continue;
    ++shown;
    std::string deviations;
    for (const std::string& d : li.deviated) deviations += (deviations.empty() ? "" : "; ") + d;
    const Layer& l = model.layers[li.layer];
    per_layer.rows.push_back({Cell::integer(static_cast<int64_t>(shown)), Cell::text(l.name),
                              Cell::text(l.op_type), Cell::text(li.framework_op),
                              Cell::text(li.expected_call), Cell::integer(static_cast<int64_t>(li.calls)),
                              li.main_call_ns >= 0 ? Cell::real(li.main_call_ns / 1e3, 2) : Cell::empty(),
                              li.bound_ns >= 0 ? Cell::real(li.bound_ns / 1e3, 2) : Cell::empty(),
                              Cell::text(deviations), Cell::real(li.reorder_ns / 1e3, 2),
                              Cell::real(li.extra_ns / 1e3, 2), Cell::real(li.outside_ns / 1e3, 2),
                              Cell::real(li.overhead_ns() / 1e3, 2)});
  }
  if (!r.layers.empty())
    per_layer.rows.push_back({Cell::text("TOTAL"), Cell::text(""), Cell::text(""), Cell::text(""),
                              Cell::text(""), Cell::empty(), Cell::empty(), Cell::empty(),
                              Cell::text(std::to_string(r.deviating_layers) + " layers deviate"),
                              Cell::real(total_reorder / 1e3, 2), Cell::real(total_extra / 1e3, 2),
                              Cell::real(total_outside / 1e3, 2), Cell::real(total_overhead / 1e3, 2)});
  if (!f.has_library_spans && !f.has_device_spans) per_layer.notes.push_back(no_library);
  per_layer.notes.push_back(
      "overhead = reorders + extra calls/device work + framework time outside the calls (CPU runs only: on a "
      "GPU "
      "run host gaps overlap device work) + the call's excess over its bound when its parameters deviate");
  per_layer.notes.push_back(
      "call_us: the layer's expected library call as run (device time where it launched "
      "work); empty when the framework ran its own kernel instead");
  return per_layer;
}

}  // namespace

std::vector<Table> inefficiency_tables(const LayerModel& model, const ModelEstimate& e,
                                       const InefficiencyFindings& f, double end_to_end_ns, size_t top) {
  InefficiencyReport r = analyze_inefficiencies(model, e, f);
  return {deviation_table(model, f, r, top), extra_calls_table(f, r, end_to_end_ns, top),
          layer_inefficiency_table(model, f, r, top)};
}

}  // namespace strata::lowerbound
