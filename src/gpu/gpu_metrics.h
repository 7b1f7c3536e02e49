// Per-kernel GPU metrics (opt-in, kernel replay): which hardware metrics to ask the CUPTI Range
// Profiler for, how to turn their values into Strata metrics (the keys the roofline analyses read:
// flops, dram_read_bytes, dram_write_bytes, achieved_occupancy), and how to pair the profiler's
// ranges (one per kernel, in launch order, named after the kernel) with the kernels' execution spans.
#pragma once

#include <cupti.h>

#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpu/span_sink.h"

namespace strata::gpu {

enum class GpuMetric { kFlopsSingle, kFlopsDouble, kFlopsHalf, kDramRead, kDramWrite, kOccupancy };

struct MetricRequest {
  std::vector<GpuMetric> metrics;  // no duplicates, in request order
  bool empty() const { return metrics.empty(); }
};

// "flops,dram,occupancy" (also flops_sp, flops_dp, flops_hp, dram_read, dram_write). An unknown
// name -> false with one line naming it and the accepted names.
bool parse_metric_request(std::string_view text, MetricRequest* request, std::string* error);
// The hardware metric names (NVPerf) the request needs, without duplicates.
std::vector<std::string> raw_metric_names(const MetricRequest& request);
// Strata metrics from the raw values (given in raw_metric_names order). flops: add + mul + 2*fma
// thread instructions of each requested precision, summed into "flops" (and "flops_sp"/... each).
std::vector<std::pair<std::string, double>> evaluate_metrics(const MetricRequest& request,
                                                             std::span<const double> raw);

struct RangeValues {
  std::string name;         // the kernel's name (auto range)
  std::vector<double> raw;  // in raw_metric_names order
};

// The Range Profiler behind a seam (real one: range_profiler_real.cc, only in libstrata_cupti.so).
class RangeProfilerInterface {
 public:
  virtual ~RangeProfilerInterface() = default;
  // Auto range + kernel replay on `context` for these metrics; false with one error line.
  virtual bool start(CUcontext context, const std::vector<std::string>& raw_metrics, std::string* error) = 0;
  // Ends collection and returns one entry per profiled kernel, in launch order.
  virtual bool stop_and_decode(std::vector<RangeValues>* ranges, uint64_t* dropped_ranges,
                               std::string* error) = 0;
};

// The libcupti-backed profiler (defined only in libstrata_cupti.so).
std::unique_ptr<RangeProfilerInterface> make_real_range_profiler();

// Holds kernel execution spans until their range arrives, then emits them with the metrics as
// kMetric attributes. Pairs in order by name: kernel replay serializes kernels, so the i-th range
// with a name belongs to the i-th kernel with that name.
class KernelMetricJoiner {
 public:
  KernelMetricJoiner(SpanSink* sink, MetricRequest request) : sink_(sink), request_(std::move(request)) {}
  void hold(const SpanRecord& record, std::string_view name, std::span<const collect::AttrDraft> attrs);
  void add_ranges(std::vector<RangeValues> ranges);
  // Emits every held kernel (those without a range: no metrics, counted) and forgets unused ranges (counted).
  void finish();
  uint64_t kernels_with_metrics() const { return joined_; }
  uint64_t kernels_without_metrics() const { return kernels_unmatched_; }
  uint64_t ranges_without_kernel() const { return ranges_unmatched_; }

 private:
  struct HeldKernel {
    SpanRecord record;
    std::string name;
    std::vector<std::pair<std::string, collect::AttrDraft>> attrs;  // key storage + draft
    std::vector<std::string> strings;
  };
  void emit(HeldKernel& k, const RangeValues* range);
  void match();

  SpanSink* sink_;
  MetricRequest request_;
  std::deque<HeldKernel> kernels_;
  std::deque<RangeValues> ranges_;
  uint64_t joined_ = 0, kernels_unmatched_ = 0, ranges_unmatched_ = 0;
};

}  // namespace strata::gpu
