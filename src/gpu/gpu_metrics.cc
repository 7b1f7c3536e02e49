#include "gpu/gpu_metrics.h"

#include <algorithm>

namespace strata::gpu {
namespace {

struct MetricName {
  std::string_view text;
  std::vector<GpuMetric> metrics;
};

const std::vector<MetricName>& names() {
  static const std::vector<MetricName> table = {
      {"flops", {GpuMetric::kFlopsSingle, GpuMetric::kFlopsDouble, GpuMetric::kFlopsHalf}},
      {"flops_sp", {GpuMetric::kFlopsSingle}},
      {"flops_dp", {GpuMetric::kFlopsDouble}},
      {"flops_hp", {GpuMetric::kFlopsHalf}},
      {"dram", {GpuMetric::kDramRead, GpuMetric::kDramWrite}},
      {"dram_bytes", {GpuMetric::kDramRead, GpuMetric::kDramWrite}},
      {"dram_read", {GpuMetric::kDramRead}},
      {"dram_write", {GpuMetric::kDramWrite}},
      {"occupancy", {GpuMetric::kOccupancy}},
  };
  return table;
}

// Thread-level instruction counts per precision: add, mul, fma (an fma is two flops).
const char* const kSingle[] = {"smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
                               "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
                               "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"};
const char* const kDouble[] = {"smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
                               "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum",
                               "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"};
const char* const kHalf[] = {"smsp__sass_thread_inst_executed_op_hadd_pred_on.sum",
                             "smsp__sass_thread_inst_executed_op_hmul_pred_on.sum",
                             "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"};
const char* const kDramReadName = "dram__bytes_read.sum";
const char* const kDramWriteName = "dram__bytes_write.sum";
const char* const kOccupancyName = "sm__warps_active.avg.pct_of_peak_sustained_active";

std::vector<const char*> raw_for(GpuMetric m) {
  switch (m) {
    case GpuMetric::kFlopsSingle:
      return {std::begin(kSingle), std::end(kSingle)};
    case GpuMetric::kFlopsDouble:
      return {std::begin(kDouble), std::end(kDouble)};
    case GpuMetric::kFlopsHalf:
      return {std::begin(kHalf), std::end(kHalf)};
    case GpuMetric::kDramRead:
      return {kDramReadName};
    case GpuMetric::kDramWrite:
      return {kDramWriteName};
    case GpuMetric::kOccupancy:
      return {kOccupancyName};
  }
  return {};
}

}  // namespace

bool parse_metric_request(std::string_view text, MetricRequest* request, std::string* error) {
  request->metrics.clear();
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    std::string_view item =
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    if (item.empty()) continue;
    auto it =
        std::find_if(names().begin(), names().end(), [&](const MetricName& n) { return n.text == item; });
    if (it == names().end()) {
      std::string known;
      for (const auto& n : names()) known += (known.empty() ? "" : ", ") + std::string(n.text);
      *error = "unknown GPU metric '" + std::string(item) + "' (known: " + known + ")";
      return false;
    }
    for (GpuMetric m : it->metrics)
      if (std::find(request->metrics.begin(), request->metrics.end(), m) == request->metrics.end())
        request->metrics.push_back(m);
  }
  return true;
}

std::vector<std::string> raw_metric_names(const MetricRequest& request) {
  std::vector<std::string> out;
  for (GpuMetric m : request.metrics)
    for (const char* name : raw_for(m))
      if (std::find(out.begin(), out.end(), name) == out.end()) out.emplace_back(name);
  return out;
}

std::vector<std::pair<std::string, double>> evaluate_metrics(const MetricRequest& request,
                                                             std::span<const double> raw) {
  std::vector<std::string> order = raw_metric_names(request);
  auto value = [&](const char* name) -> double {
    auto it = std::find(order.begin(), order.end(), name);
    size_t i = static_cast<size_t>(it - order.begin());
    return it != order.end() && i < raw.size() ? raw[i] : 0.0;
  };
  std::vector<std::pair<std::string, double>> out;
  double flops = 0;
  bool any_flops = false;
  for (GpuMetric m : request.metrics) {
    const char* key = nullptr;
    const char* const* counts = nullptr;
    switch (m) {
      case GpuMetric::kFlopsSingle:
        key = "flops_sp", counts = kSingle;
        break;
      case GpuMetric::kFlopsDouble:
        key = "flops_dp", counts = kDouble;
        break;
      case GpuMetric::kFlopsHalf:
        key = "flops_hp", counts = kHalf;
        break;
      case GpuMetric::kDramRead:
        out.emplace_back("dram_read_bytes", value(kDramReadName));
        break;
      case GpuMetric::kDramWrite:
        out.emplace_back("dram_write_bytes", value(kDramWriteName));
        break;
      case GpuMetric::kOccupancy:
        out.emplace_back("achieved_occupancy", value(kOccupancyName));
        break;
    }
    if (counts != nullptr) {
      double f = value(counts[0]) + value(counts[1]) + 2 * value(counts[2]);
      out.emplace_back(key, f);
      flops += f;
      any_flops = true;
    }
  }
  if (any_flops) out.emplace_back("flops", flops);
  return out;
}

void KernelMetricJoiner::hold(const SpanRecord& record, std::string_view name,
                              std::span<const collect::AttrDraft> attrs) {
  HeldKernel k;
  k.record = record;
  k.name = std::string(name);
  // Copy the strings the drafts point to: the caller's storage is gone after this call.
  k.strings.reserve(attrs.size());
  for (const auto& a : attrs) {
    k.strings.emplace_back(a.s);
    collect::AttrDraft d = a;
    k.attrs.emplace_back(std::string(a.key), d);
  }
  kernels_.push_back(std::move(k));
  match();
}

void KernelMetricJoiner::add_ranges(std::vector<RangeValues> ranges) {
  for (auto& r : ranges) ranges_.push_back(std::move(r));
  match();
}

void KernelMetricJoiner::match() {
  // Pair the oldest held kernel with the oldest range of its name.
  while (!kernels_.empty() && !ranges_.empty()) {
    HeldKernel& k = kernels_.front();
    auto it =
        std::find_if(ranges_.begin(), ranges_.end(), [&](const RangeValues& r) { return r.name == k.name; });
    if (it == ranges_.end()) return;  // its range has not arrived yet
    emit(k, &*it);
    ranges_.erase(it);
    kernels_.pop_front();
    ++joined_;
  }
}

void KernelMetricJoiner::emit(HeldKernel& k, const RangeValues* range) {
  AttrList list;
  for (size_t i = 0; i < k.attrs.size(); ++i) {
    collect::AttrDraft d = k.attrs[i].second;
    d.key = k.attrs[i].first;
    d.s = k.strings[i];
    if (d.type == AttrType::kString)
      list.add_string(d.key, d.s);
    else if (d.type == AttrType::kInt)
      list.add_int(d.key, d.i);
    else if (d.type == AttrType::kMetric)
      list.add_metric(d.key, d.d);
    else
      list.add_double(d.key, d.d);
  }
  std::vector<std::pair<std::string, double>> metrics;
  if (range != nullptr) metrics = evaluate_metrics(request_, range->raw);
  for (const auto& [key, value] : metrics) list.add_metric(key, value);
  sink_->emit(k.record, k.name, list.view());
}

void KernelMetricJoiner::finish() {
  match();
  for (auto& k : kernels_) {
    emit(k, nullptr);
    ++kernels_unmatched_;
  }
  kernels_.clear();
  ranges_unmatched_ += ranges_.size();
  ranges_.clear();
}

}  // namespace strata::gpu
