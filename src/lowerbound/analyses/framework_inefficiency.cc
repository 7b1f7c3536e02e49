#include "lowerbound/analyses/framework_inefficiency.h"

#include <algorithm>
#include <unordered_map>

#include "core/level.h"
#include "model/span_tree.h"

namespace strata::lowerbound {

InefficiencyFindings find_inefficiencies(const LayerModel& model, const model::Trace& trace,
                                         const std::vector<size_t>& ops, const std::vector<int32_t>& op_layer,
                                         int64_t window_start, int64_t window_end) {
  InefficiencyFindings f;
  const uint8_t layer_level = static_cast<uint8_t>(Level::kLayer);
  const uint8_t library_level = static_cast<uint8_t>(Level::kLibrary);
  const uint8_t runtime_level = static_cast<uint8_t>(Level::kRuntimeApi);
  const uint8_t device_level = static_cast<uint8_t>(Level::kDevice);

  std::unordered_map<size_t, size_t> op_of;  // span index -> position in ops
  for (size_t k = 0; k < ops.size(); ++k) op_of[ops[k]] = k;
  std::vector<int32_t> slot_of_op(ops.size(), -1);  // position in ops -> f.layers
  std::vector<std::pair<int32_t, size_t>> matched;
  for (size_t k = 0; k < ops.size() && k < op_layer.size(); ++k)
    if (op_layer[k] >= 0 && static_cast<size_t>(op_layer[k]) < model.layers.size())
      matched.push_back({op_layer[k], k});
  std::sort(matched.begin(), matched.end());
  for (auto& [layer, k] : matched) {
    slot_of_op[k] = static_cast<int32_t>(f.layers.size());
    LayerCalls lc;
    lc.layer = static_cast<uint32_t>(layer);
    lc.framework_op = std::string(trace.name(trace.spans[ops[k]]));
    lc.op_ns = static_cast<double>(trace.spans[ops[k]].duration_ns());
    f.layers.push_back(std::move(lc));
  }

  std::vector<size_t> library, runtime, device;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    uint8_t level = trace.spans[i].level;
    if (level == library_level)
      library.push_back(i);
    else if (level == runtime_level)
      runtime.push_back(i);
    else if (level == device_level)
      device.push_back(i);
  }
  if (library.empty() && runtime.empty() && device.empty())
    return f;  // layer-level trace: nothing to inspect

  const model::SpanTree tree = model::build_span_tree(trace);
  auto in_window = [&](size_t i) {
    return trace.spans[i].start_ns >= window_start && trace.spans[i].end_ns <= window_end;
  };
  // The framework op (outermost, in this iteration) a span ran under: its position in ops; -1 when it
  // ran under none; -2 when it ran under a framework op outside the analysed iteration.
  auto owner_of = [&](size_t i) -> int64_t {
    bool under_op = false;
    int32_t cur = tree.parent(i);
    for (int guard = 0; cur != model::kNoParent && guard < 4096; ++guard) {
      auto it = op_of.find(static_cast<size_t>(cur));
      if (it != op_of.end()) return static_cast<int64_t>(it->second);
      if (trace.spans[static_cast<size_t>(cur)].level == layer_level) under_op = true;
      cur = tree.parent(static_cast<size_t>(cur));
    }
    return under_op ? -2 : -1;
  };
  // The (outermost) library call a runtime call or device work happened inside; kNoParent when none.
  auto library_ancestor = [&](size_t i) -> int32_t {
    int32_t found = model::kNoParent;
    int32_t cur = tree.parent(i);
    for (int guard = 0; cur != model::kNoParent && guard < 4096; ++guard) {
      uint8_t level = trace.spans[static_cast<size_t>(cur)].level;
      if (level == library_level) found = cur;
      if (level < library_level) break;
      cur = tree.parent(static_cast<size_t>(cur));
    }
    return found;
  };

  // Library calls: a layer's own calls, or calls made outside every matched layer.
  struct Orphan {
    ObservedCall call;
    int64_t owner;
  };
  std::vector<Orphan> orphans;
  std::unordered_map<size_t, std::pair<int32_t, size_t>> call_at;  // span -> (slot or -1, call/orphan index)
  std::sort(library.begin(), library.end(),
            [&](size_t a, size_t b) { return trace.spans[a].start_ns < trace.spans[b].start_ns; });
  for (size_t i : library) {
    int32_t parent = tree.parent(i);
    if (parent != model::kNoParent && trace.spans[static_cast<size_t>(parent)].level == library_level)
      continue;  // a call the library made to itself: part of the outer call
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i))) continue;  // another iteration
    f.has_library_spans = true;
    ObservedCall c;
    c.span = i;
    c.name = std::string(trace.name(trace.spans[i]));
    c.params = parse_call(trace, i);
    c.start_ns = trace.spans[i].start_ns;
    c.host_ns = static_cast<double>(trace.spans[i].duration_ns());
    int32_t slot = owner >= 0 ? slot_of_op[static_cast<size_t>(owner)] : -1;
    if (slot >= 0) {
      call_at[i] = {slot, f.layers[static_cast<size_t>(slot)].calls.size()};
      f.layers[static_cast<size_t>(slot)].calls.push_back(std::move(c));
    } else {
      call_at[i] = {-1, orphans.size()};
      orphans.push_back({std::move(c), owner});
    }
  }
  auto owner_name = [&](int64_t owner) {
    return owner >= 0 ? std::string(trace.name(trace.spans[ops[static_cast<size_t>(owner)]])) : std::string();
  };
  auto owner_layer = [&](int64_t owner) -> int32_t {
    if (owner < 0) return -1;
    int32_t slot = slot_of_op[static_cast<size_t>(owner)];
    return slot >= 0 ? static_cast<int32_t>(f.layers[static_cast<size_t>(slot)].layer) : -1;
  };
  // Work the framework did itself inside a layer that made library calls is extra; inside a layer
  // that made none it is the layer's own implementation (e.g. PyTorch's native ReLU), not extra.
  auto layer_made_calls = [&](int64_t owner) {
    int32_t slot = owner >= 0 ? slot_of_op[static_cast<size_t>(owner)] : -1;
    return slot < 0 || !f.layers[static_cast<size_t>(slot)].calls.empty();
  };

  for (size_t i : device) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
        s.kind == static_cast<uint8_t>(SpanKind::kCounter))
      continue;
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i))) continue;
    f.has_device_spans = true;
    double ns = static_cast<double>(s.duration_ns());
    std::string name(trace.name(s));
    int32_t lib = library_ancestor(i);
    if (lib != model::kNoParent) {
      auto it = call_at.find(static_cast<size_t>(lib));
      if (it == call_at.end()) continue;  // inside a call of another iteration
      ObservedCall& c = it->second.first >= 0
                            ? f.layers[static_cast<size_t>(it->second.first)].calls[it->second.second]
                            : orphans[it->second.second].call;
      c.device_ns += ns;
      if (is_layout_kernel(name)) c.layout_kernels.push_back({name, ns});
      continue;
    }
    if (!layer_made_calls(owner)) continue;
    f.extras.push_back(
        {name, device_category(trace, i), true, owner_layer(owner), owner_name(owner), "", ns, i, ""});
  }
  for (size_t i : runtime) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kLaunch)) continue;  // its device work is counted
    if (library_ancestor(i) != model::kNoParent) continue;
    int64_t owner = owner_of(i);
    if (owner == -2 || (owner == -1 && !in_window(i)) || !layer_made_calls(owner)) continue;
    f.extras.push_back({std::string(trace.name(s)), "runtime_api", false, owner_layer(owner),
                        owner_name(owner), "", static_cast<double>(s.duration_ns()), i, ""});
  }

  // Each layer: its main call, and the rest as extra calls (reorders labelled with the operand).
  for (LayerCalls& lc : f.layers) {
    const Layer& layer = model.layers[lc.layer];
    const std::string want = expected_call_class(layer.op_type);
    double covered = 0, longest = -1;
    for (size_t c = 0; c < lc.calls.size(); ++c) {
      covered += lc.calls[c].host_ns;
      if (!want.empty() && lc.calls[c].params.call_class == want && lc.calls[c].time_ns() > longest) {
        longest = lc.calls[c].time_ns();
        lc.main_call = static_cast<int32_t>(c);
      }
    }
    lc.outside_calls_ns = lc.calls.empty() ? 0 : std::max(0.0, lc.op_ns - covered);
    const ObservedCall* main = lc.main_call >= 0 ? &lc.calls[static_cast<size_t>(lc.main_call)] : nullptr;
    // Operand shapes to recognise a reorder by: the main call's, else the layer's.
    Shape src = main && !main->params.src.empty() ? main->params.src
                : layer.input_shapes.empty()      ? Shape{}
                                                  : layer.input_shapes[0];
    Shape dst = main && !main->params.dst.empty() ? main->params.dst
                : layer.output_shapes.empty()     ? Shape{}
                                                  : layer.output_shapes[0];
    Shape weights = main && !main->params.weights.empty() ? main->params.weights
                    : layer.weight_shapes.empty()         ? Shape{}
                                                          : layer.weight_shapes[0];
    Shape raw_weights;  // oneDNN reorders grouped weights in their G x O/G x ... form
    if (main && main->params.groups > 1 && !weights.empty()) {
      raw_weights = weights;
      raw_weights[0] /= main->params.groups;
      raw_weights.insert(raw_weights.begin(), main->params.groups);
    }
    for (size_t c = 0; c < lc.calls.size(); ++c) {
      if (static_cast<int32_t>(c) == lc.main_call) continue;
      const ObservedCall& call = lc.calls[c];
      ExtraWork w{call.name,
                  "library_call",
                  call.device_ns > 0,
                  static_cast<int32_t>(lc.layer),
                  lc.framework_op,
                  "",
                  call.time_ns(),
                  call.span,
                  ""};
      if (call.params.call_class == "reorder") {
        w.category = "reorder";
        w.detail = call.params.conversion;
        const Shape& d = !call.params.src.empty() ? call.params.src : call.params.dst;
        bool before = !main || call.start_ns < main->start_ns;
        if (!d.empty() && (d == weights || d == raw_weights) && d != src && d != dst)
          w.role = "weights";
        else if (!d.empty() && d == src && (before || d != dst))
          w.role = "src";
        else if (!d.empty() && d == dst)
          w.role = "dst";
        else if (!d.empty() && (d == weights || d == raw_weights))
          w.role = "weights";
      }
      f.extras.push_back(std::move(w));
    }
  }
  for (Orphan& o : orphans) {
    bool reorder = o.call.params.call_class == "reorder";
    f.extras.push_back({o.call.name, reorder ? "reorder" : "library_call", o.call.device_ns > 0, -1,
                        owner_name(o.owner), "", o.call.time_ns(), o.call.span, o.call.params.conversion});
  }
  return f;
}

}  // namespace strata::lowerbound
