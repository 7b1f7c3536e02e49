#include "lowerbound/analyses/framework_inefficiency.h"

#include <algorithm>
#include <unordered_map>

#include "core/level.h"
#include "lowerbound/analyses/iteration.h"

namespace strata::lowerbound {
namespace {

constexpr uint8_t kLibraryLevel = static_cast<uint8_t>(Level::kLibrary);
constexpr uint8_t kRuntimeLevel = static_cast<uint8_t>(Level::kRuntimeApi);
constexpr uint8_t kDeviceLevel = static_cast<uint8_t>(Level::kDevice);

// Attributes the iteration's library calls, runtime calls and device work to the matched layers.
class Attribution {
 public:
  Attribution(const LayerModel& model, const Iteration& it, InefficiencyFindings* f)
      : model_(model), it_(it), trace_(it.trace()), f_(*f) {
    slot_of_op_.assign(it.ops().size(), -1);
    std::vector<std::pair<int32_t, size_t>> matched;
    for (size_t k = 0; k < it.ops().size(); ++k)
      if (it.op_layer()[k] >= 0 && static_cast<size_t>(it.op_layer()[k]) < model.layers.size())
        matched.push_back({it.op_layer()[k], k});
    std::sort(matched.begin(), matched.end());
    for (auto& [layer, k] : matched) {
      slot_of_op_[k] = static_cast<int32_t>(f_.layers.size());
      LayerCalls lc;
      lc.layer = static_cast<uint32_t>(layer);
      lc.framework_op = std::string(trace_.name(trace_.spans[it.ops()[k]]));
      lc.op_ns = static_cast<double>(trace_.spans[it.ops()[k]].duration_ns());
      f_.layers.push_back(std::move(lc));
    }
  }

  void library_calls(std::vector<size_t> library);
  void device_work(const std::vector<size_t>& device);
  void runtime_calls(const std::vector<size_t>& runtime);
  void layer_extras();
  void orphan_extras();

 private:
  // Work in another iteration (or under an op outside the analysed one) is not this iteration's.
  bool elsewhere(int64_t owner) const { return owner == -2; }
  std::string owner_name(int64_t owner) const {
    return owner >= 0 ? std::string(trace_.name(trace_.spans[it_.ops()[static_cast<size_t>(owner)]]))
                      : std::string();
  }
  int32_t slot(int64_t owner) const { return owner >= 0 ? slot_of_op_[static_cast<size_t>(owner)] : -1; }
  int32_t owner_layer(int64_t owner) const {
    int32_t s = slot(owner);
    return s >= 0 ? static_cast<int32_t>(f_.layers[static_cast<size_t>(s)].layer) : -1;
  }
  // Work the framework did itself inside a layer that made library calls is extra; inside a layer
  // that made none it is the layer's own implementation (e.g. PyTorch's native ReLU), not extra.
  bool layer_made_calls(int64_t owner) const {
    int32_t s = slot(owner);
    return s < 0 || !f_.layers[static_cast<size_t>(s)].calls.empty();
  }
  // The (outermost) library call a runtime call or device work happened inside; kNoParent when none.
  int32_t library_ancestor(size_t i) const {
    const trace::SpanTree& tree = it_.workload().tree();
    int32_t found = trace::kNoParent;
    int32_t cur = tree.parent(i);
    for (int guard = 0; cur != trace::kNoParent && guard < 4096; ++guard) {
      uint8_t level = trace_.spans[static_cast<size_t>(cur)].level;
      if (level == kLibraryLevel) found = cur;
      if (level < kLibraryLevel) break;
      cur = tree.parent(static_cast<size_t>(cur));
    }
    return found;
  }

  struct Orphan {
    ObservedCall call;
    int64_t owner;
  };
  const LayerModel& model_;
  const Iteration& it_;
  const trace::Trace& trace_;
  InefficiencyFindings& f_;
  std::vector<int32_t> slot_of_op_;  // position in ops -> f.layers
  std::vector<Orphan> orphans_;      // library calls outside every matched layer
  std::unordered_map<size_t, std::pair<int32_t, size_t>> call_at_;  // span -> (slot or -1, index)
};

// Library calls: a layer's own calls, or calls made outside every matched layer.
void Attribution::library_calls(std::vector<size_t> library) {
  const trace::SpanTree& tree = it_.workload().tree();
  std::sort(library.begin(), library.end(),
            [&](size_t a, size_t b) { return trace_.spans[a].start_ns < trace_.spans[b].start_ns; });
  for (size_t i : library) {
    int32_t parent = tree.parent(i);
    if (parent != trace::kNoParent && trace_.spans[static_cast<size_t>(parent)].level == kLibraryLevel)
      continue;  // a call the library made to itself: part of the outer call
    int64_t owner = it_.owner(i);
    if (elsewhere(owner)) continue;
    f_.has_library_spans = true;
    ObservedCall c;
    c.span = i;
    c.name = std::string(trace_.name(trace_.spans[i]));
    c.params = parse_call(trace_, i);
    c.start_ns = trace_.spans[i].start_ns;
    c.host_ns = static_cast<double>(trace_.spans[i].duration_ns());
    int32_t s = slot(owner);
    if (s >= 0) {
      call_at_[i] = {s, f_.layers[static_cast<size_t>(s)].calls.size()};
      f_.layers[static_cast<size_t>(s)].calls.push_back(std::move(c));
    } else {
      call_at_[i] = {-1, orphans_.size()};
      orphans_.push_back({std::move(c), owner});
    }
  }
}

// Kernels, copies and memsets: inside a library call they are the call's device time; launched by a
// layer that also called the library, outside any call, they are extra work.
void Attribution::device_work(const std::vector<size_t>& device) {
  for (size_t i : device) {
    const SpanRecord& s = trace_.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kInstant) ||
        s.kind == static_cast<uint8_t>(SpanKind::kCounter))
      continue;
    int64_t owner = it_.owner(i);
    if (elsewhere(owner)) continue;
    f_.has_device_spans = true;
    double ns = static_cast<double>(s.duration_ns());
    std::string name(trace_.name(s));
    int32_t lib = library_ancestor(i);
    if (lib != trace::kNoParent) {
      auto at = call_at_.find(static_cast<size_t>(lib));
      if (at == call_at_.end()) continue;  // inside a call of another iteration
      ObservedCall& c = at->second.first >= 0
                            ? f_.layers[static_cast<size_t>(at->second.first)].calls[at->second.second]
                            : orphans_[at->second.second].call;
      c.device_ns += ns;
      if (is_layout_kernel(name)) c.layout_kernels.push_back({name, ns});
      continue;
    }
    if (!layer_made_calls(owner)) continue;
    f_.extras.push_back(
        {name, device_category(trace_, i), true, owner_layer(owner), owner_name(owner), "", ns, i, ""});
  }
}

void Attribution::runtime_calls(const std::vector<size_t>& runtime) {
  for (size_t i : runtime) {
    const SpanRecord& s = trace_.spans[i];
    if (s.kind == static_cast<uint8_t>(SpanKind::kLaunch)) continue;  // its device work is counted
    if (library_ancestor(i) != trace::kNoParent) continue;
    int64_t owner = it_.owner(i);
    if (elsewhere(owner) || !layer_made_calls(owner)) continue;
    f_.extras.push_back({std::string(trace_.name(s)), "runtime_api", false, owner_layer(owner),
                         owner_name(owner), "", static_cast<double>(s.duration_ns()), i, ""});
  }
}

// The operand a reorder inside a layer converts, by its shape: src (before the main call), weights
// (also in oneDNN's grouped G x O/G x ... form) or dst.
std::string reorder_role(const Layer& layer, const ObservedCall* main, const ObservedCall& call) {
  auto operand = [&](const Shape& observed, const std::vector<Shape>& layer_shapes) {
    return !observed.empty() ? observed : layer_shapes.empty() ? Shape{} : layer_shapes[0];
  };
  Shape src = operand(main ? main->params.src : Shape{}, layer.input_shapes);
  Shape dst = operand(main ? main->params.dst : Shape{}, layer.output_shapes);
  Shape weights = operand(main ? main->params.weights : Shape{}, layer.weight_shapes);
  Shape raw_weights;
  if (main && main->params.groups > 1 && !weights.empty()) {
    raw_weights = weights;
    raw_weights[0] /= main->params.groups;
    raw_weights.insert(raw_weights.begin(), main->params.groups);
  }
  const Shape& d = !call.params.src.empty() ? call.params.src : call.params.dst;
  bool before = !main || call.start_ns < main->start_ns;
  if (!d.empty() && (d == weights || d == raw_weights) && d != src && d != dst) return "weights";
  if (!d.empty() && d == src && (before || d != dst)) return "src";
  if (!d.empty() && d == dst) return "dst";
  if (!d.empty() && (d == weights || d == raw_weights)) return "weights";
  return "";
}

// Each layer: its main call (the longest of the class it needs), and the rest as extra calls.
void Attribution::layer_extras() {
  for (LayerCalls& lc : f_.layers) {
    const Layer& layer = model_.layers[lc.layer];
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
        w.role = reorder_role(layer, main, call);
      }
      f_.extras.push_back(std::move(w));
    }
  }
}

void Attribution::orphan_extras() {
  for (Orphan& o : orphans_) {
    bool reorder = o.call.params.call_class == "reorder";
    f_.extras.push_back({o.call.name, reorder ? "reorder" : "library_call", o.call.device_ns > 0, -1,
                         owner_name(o.owner), "", o.call.time_ns(), o.call.span, o.call.params.conversion});
  }
}

}  // namespace

InefficiencyFindings find_inefficiencies(const LayerModel& model, const Iteration& iteration) {
  InefficiencyFindings f;
  const trace::Trace& trace = iteration.trace();
  std::vector<size_t> library, runtime, device;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    uint8_t level = trace.spans[i].level;
    if (level == kLibraryLevel)
      library.push_back(i);
    else if (level == kRuntimeLevel)
      runtime.push_back(i);
    else if (level == kDeviceLevel)
      device.push_back(i);
  }
  Attribution a(model, iteration, &f);
  if (library.empty() && runtime.empty() && device.empty())
    return f;  // layer-level trace: nothing to inspect
  a.library_calls(std::move(library));
  a.device_work(device);
  a.runtime_calls(runtime);
  a.layer_extras();
  a.orphan_extras();
  return f;
}

}  // namespace strata::lowerbound
