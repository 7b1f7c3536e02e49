#include "lowerbound/analyses/tensor_cores.h"

#include <algorithm>
#include <cctype>
#include <unordered_map>

#include "core/activity_type.h"
#include "core/kernel_names.h"
#include "core/level.h"
#include "lowerbound/analyses/call_params.h"
#include "lowerbound/analyses/iteration.h"

namespace strata::lowerbound {

using table::Cell;
using table::Table;

namespace {

// Device executions that are kernels (not copies, memsets, syncs or graph records); an execution
// whose source gave no type counts as a kernel.
bool is_kernel(const SpanRecord& s) {
  const auto a = static_cast<ActivityType>(s.activity);
  return a == ActivityType::kKernel || a == ActivityType::kCollective || a == ActivityType::kUnknown;
}

}  // namespace

TensorCoreUsage tensor_core_usage(const LayerModel& model, const Iteration& iteration) {
  TensorCoreUsage u;
  const trace::Trace& trace = iteration.trace();
  const uint8_t device_level = static_cast<uint8_t>(Level::kDevice);
  std::vector<size_t> kernels;
  for (size_t i = 0; i < trace.spans.size(); ++i)
    if (trace.spans[i].level == device_level &&
        trace.spans[i].kind == static_cast<uint8_t>(SpanKind::kExecution) && is_kernel(trace.spans[i]))
      kernels.push_back(i);
  if (kernels.empty()) return u;

  const std::vector<size_t>& ops = iteration.ops();
  std::unordered_map<uint32_t, size_t> slot_of_layer;
  std::vector<int64_t> slot_of_op(ops.size(), -1);
  for (size_t k = 0; k < ops.size(); ++k) {
    int32_t layer = iteration.op_layer()[k];
    if (layer < 0 || static_cast<size_t>(layer) >= model.layers.size()) continue;
    auto [it, added] = slot_of_layer.emplace(static_cast<uint32_t>(layer), u.layers.size());
    if (added) {
      LayerTensorCores l;
      l.layer = static_cast<uint32_t>(layer);
      l.framework_op = std::string(trace.name(trace.spans[ops[k]]));
      u.layers.push_back(std::move(l));
    }
    slot_of_op[k] = static_cast<int64_t>(it->second);
  }

  std::vector<double> longest_any(u.layers.size(), 0), longest_tc(u.layers.size(), 0);
  for (size_t i : kernels) {
    const SpanRecord& s = trace.spans[i];
    // The framework op of the analysed iteration the kernel ran under (its launch's ancestors).
    const int64_t owner = iteration.owner(i);
    if (owner == -2) continue;  // another iteration's work
    u.has_kernels = true;
    const double ns = static_cast<double>(s.duration_ns());
    const std::string name(trace.name(s));
    const std::string marker = tensor_core_marker(name);
    int64_t slot = owner >= 0 ? slot_of_op[static_cast<size_t>(owner)] : -1;
    if (slot < 0) {
      ++u.other_kernels;
      u.other_ns += ns;
      if (!marker.empty()) {
        ++u.other_tensor_core_kernels;
        u.other_tensor_core_ns += ns;
      }
      continue;
    }
    LayerTensorCores& l = u.layers[static_cast<size_t>(slot)];
    ++l.kernels;
    l.device_ns += ns;
    if (!marker.empty()) {
      ++l.tensor_core_kernels;
      l.tensor_core_ns += ns;
      if (ns > longest_tc[static_cast<size_t>(slot)]) {
        longest_tc[static_cast<size_t>(slot)] = ns;
        l.top_kernel = name;
        l.marker = marker;
      }
    } else if (l.tensor_core_kernels == 0 && ns > longest_any[static_cast<size_t>(slot)]) {
      longest_any[static_cast<size_t>(slot)] = ns;
      l.top_kernel = name;
    }
  }
  // Layers whose op ran no kernel (views, ops the framework did on the host) have nothing to report.
  u.layers.erase(std::remove_if(u.layers.begin(), u.layers.end(),
                                [](const LayerTensorCores& l) { return l.kernels == 0; }),
                 u.layers.end());
  std::sort(u.layers.begin(), u.layers.end(),
            [](const LayerTensorCores& a, const LayerTensorCores& b) { return a.layer < b.layer; });
  return u;
}

Table tensor_core_table(const LayerModel& model, const TensorCoreUsage& u) {
  Table t;
  t.name = "tensor_cores";
  t.title =
      "Tensor cores in the framework's run: per layer, kernels recognised by name and their device time";
  t.columns = {"layer",     "type",           "framework_op",      "kernels",           "tensor_core_kernels",
               "device_us", "tensor_core_us", "tensor_core_share", "used_tensor_cores", "recognized_by",
               "kernel"};
  auto share = [](double part, double whole) {
    return whole > 0 ? Cell::real(part / whole, 3) : Cell::empty();
  };
  auto short_name = [](const std::string& name) {
    return name.size() > 96 ? name.substr(0, 93) + "..." : name;
  };
  uint64_t kernels = 0, tc_kernels = 0, layers_using = 0;
  double device = 0, tc = 0;
  for (const LayerTensorCores& l : u.layers) {
    const Layer& layer = model.layers[l.layer];
    kernels += l.kernels;
    tc_kernels += l.tensor_core_kernels;
    device += l.device_ns;
    tc += l.tensor_core_ns;
    layers_using += l.tensor_core_kernels > 0;
    t.rows.push_back({Cell::text(layer.name), Cell::text(layer.op_type), Cell::text(l.framework_op),
                      Cell::integer(static_cast<int64_t>(l.kernels)),
                      Cell::integer(static_cast<int64_t>(l.tensor_core_kernels)),
                      Cell::real(l.device_ns / 1e3, 2), Cell::real(l.tensor_core_ns / 1e3, 2),
                      share(l.tensor_core_ns, l.device_ns),
                      Cell::text(l.tensor_core_kernels > 0 ? "yes" : "no"), Cell::text(l.marker),
                      Cell::text(short_name(l.top_kernel))});
  }
  if (!u.layers.empty())
    t.rows.push_back(
        {Cell::text("TOTAL"), Cell::text(""), Cell::text(""), Cell::integer(static_cast<int64_t>(kernels)),
         Cell::integer(static_cast<int64_t>(tc_kernels)), Cell::real(device / 1e3, 2),
         Cell::real(tc / 1e3, 2), share(tc, device),
         Cell::text(std::to_string(layers_using) + " of " + std::to_string(u.layers.size()) + " layers"),
         Cell::text(""), Cell::text("")});
  if (u.other_kernels > 0)
    t.rows.push_back(
        {Cell::text("(outside matched layers)"), Cell::text(""), Cell::text(""),
         Cell::integer(static_cast<int64_t>(u.other_kernels)),
         Cell::integer(static_cast<int64_t>(u.other_tensor_core_kernels)), Cell::real(u.other_ns / 1e3, 2),
         Cell::real(u.other_tensor_core_ns / 1e3, 2), share(u.other_tensor_core_ns, u.other_ns),
         Cell::text(u.other_tensor_core_kernels > 0 ? "yes" : "no"), Cell::text(""), Cell::text("")});
  t.notes.push_back(
      "tensor-core kernels are recognised by name: MMA families (hmma, imma, dmma, gmma, wgmma, xmma with "
      "f16/bf16/tf32/int8/fp8 types or a tensorMxNxK shape, CUTLASS tensorop, cuBLAS nvjet, FlashAttention, "
      "AMD mfma) and "
      "MMA tiles such as h884, s1688, i8816, h16816; SIMT kernels (ampere_sgemm, scudnn, FFT, CUTLASS simt, "
      "XMMA ffma) and unrecognised names count as not using tensor cores");
  t.notes.push_back(
      "kernel: the longest tensor-core kernel of the layer, else its longest kernel; device time is "
      "kernel time only (copies and memsets apart)");
  if (u.other_kernels > 0)
    t.notes.push_back(
        "outside matched layers: kernels under framework ops with no ONNX layer (a training step's backward "
        "pass and optimizer, input copies) or under no op");
  return t;
}

}  // namespace strata::lowerbound
