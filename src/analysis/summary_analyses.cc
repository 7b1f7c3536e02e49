// Summary reports like `nsys stats` over any trace (native, Kineto, nsys, ...): per name (or per copy
// direction) the count, total, average, median, min, max and sample standard deviation of the
// durations, and the share of the table's total time.
//   gpu_kernel_summary  device kernels (ActivityType kernel, collective), by kernel name
//   cuda_api_summary    host runtime and driver calls (runtime_call, driver_call), by call name
//   memcpy_summary      copies by direction and memsets (memcpy_*, memset), time and bytes
//   range_summary       named ranges (annotation: NVTX, record_function, user annotations,
//                       ProfilerStep) that are not instants, by level and name
// Which spans count is decided by the activity type only, never by names.
#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/analysis.h"
#include "analysis/analysis_util.h"
#include "core/attr_keys.h"

namespace strata::analysis {
namespace {

// Durations of one group, and bytes for copies.
struct Group {
  std::vector<int64_t> durations_ns;
  double bytes = 0;
  std::vector<double> sizes;  // bytes of the spans that state them
};

// Sample standard deviation (n - 1 in the denominator, as nsys stats); 0 for one instance.
double sample_stddev(const std::vector<int64_t>& v, double mean) {
  if (v.size() < 2) return 0;
  double sum_sq = 0;
  for (int64_t x : v) sum_sq += (static_cast<double>(x) - mean) * (static_cast<double>(x) - mean);
  return std::sqrt(sum_sq / static_cast<double>(v.size() - 1));
}

// Median of sorted values: the middle one, or the mean of the two middle ones.
double median(const std::vector<int64_t>& sorted) {
  const size_t n = sorted.size();
  if (n == 0) return 0;
  if (n % 2 == 1) return static_cast<double>(sorted[n / 2]);
  return (static_cast<double>(sorted[n / 2 - 1]) + static_cast<double>(sorted[n / 2])) / 2;
}

std::optional<double> number_attr(const trace::Trace& trace, size_t i, uint32_t key) {
  for (const AttrRecord& a : trace.attributes(i)) {
    if (a.key != key) continue;
    if (a.type == static_cast<uint8_t>(AttrType::kInt)) return static_cast<double>(a.value.i);
    if (a.type == static_cast<uint8_t>(AttrType::kDouble) || a.type == static_cast<uint8_t>(AttrType::kMetric))
      return a.value.d;
  }
  return std::nullopt;
}

std::vector<std::string> time_columns(std::string_view key_column) {
  return {"time_pct", "total_ns", "instances", "avg_ns", "med_ns", "min_ns", "max_ns", "stddev_ns",
          std::string(key_column)};
}

// One row per group, largest total first (ties by key); the time columns, then `extra` cells.
Table summary_table(std::string name, std::string title, std::string_view key_column,
                    std::map<std::string, Group>& groups, bool with_bytes) {
  std::vector<std::string> columns = time_columns(key_column);
  if (with_bytes)
    for (const char* c : {"total_bytes", "avg_bytes", "min_bytes", "max_bytes"}) columns.emplace_back(c);
  Table t = make_table(std::move(name), std::move(title), std::move(columns));
  double all_ns = 0;
  for (auto& [key, g] : groups)
    for (int64_t d : g.durations_ns) all_ns += static_cast<double>(d);
  std::vector<std::pair<double, const std::string*>> order;
  for (auto& [key, g] : groups) {
    double total = 0;
    for (int64_t d : g.durations_ns) total += static_cast<double>(d);
    order.emplace_back(total, &key);
  }
  std::stable_sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (const auto& [total, key] : order) {
    Group& g = groups[*key];
    std::sort(g.durations_ns.begin(), g.durations_ns.end());
    const double n = static_cast<double>(g.durations_ns.size());
    const double mean = total / n;
    std::vector<Cell> row = {Cell::real(all_ns > 0 ? 100.0 * total / all_ns : 0, 2),
                             Cell::integer(static_cast<int64_t>(total)),
                             Cell::integer(static_cast<int64_t>(g.durations_ns.size())),
                             Cell::real(mean, 1),
                             Cell::real(median(g.durations_ns), 1),
                             Cell::integer(g.durations_ns.front()),
                             Cell::integer(g.durations_ns.back()),
                             Cell::real(sample_stddev(g.durations_ns, mean), 1),
                             Cell::text(*key)};
    if (with_bytes) {
      if (g.sizes.empty()) {
        for (int c = 0; c < 4; ++c) row.push_back(Cell::empty());
      } else {
        const auto [lo, hi] = std::minmax_element(g.sizes.begin(), g.sizes.end());
        row.push_back(Cell::integer(static_cast<int64_t>(g.bytes)));
        row.push_back(Cell::real(g.bytes / static_cast<double>(g.sizes.size()), 1));
        row.push_back(Cell::integer(static_cast<int64_t>(*lo)));
        row.push_back(Cell::integer(static_cast<int64_t>(*hi)));
      }
    }
    t.rows.push_back(std::move(row));
  }
  return t;
}

// Spans whose activity `select` accepts, grouped by `key_of`.
template <typename Select, typename KeyOf>
std::map<std::string, Group> collect(const trace::Trace& trace, Select select, KeyOf key_of,
                                     bool with_bytes) {
  std::map<std::string, Group> groups;
  const uint32_t bytes_key = with_bytes ? trace.strings.find(attr_keys::kBytes) : UINT32_MAX;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (!select(s)) continue;
    Group& g = groups[key_of(s)];
    g.durations_ns.push_back(std::max<int64_t>(s.duration_ns(), 0));
    if (bytes_key != UINT32_MAX)
      if (std::optional<double> b = number_attr(trace, i, bytes_key)) {
        g.bytes += *b;
        g.sizes.push_back(*b);
      }
  }
  return groups;
}

bool not_instant(const SpanRecord& s) { return s.kind != static_cast<uint8_t>(SpanKind::kInstant); }

class GpuKernelSummary final : public Analysis {
 public:
  std::string_view name() const override { return "gpu_kernel_summary"; }
  std::string_view description() const override {
    return "GPU kernels by name: count, total, avg, median, min, max, stddev, % of kernel time (nsys "
           "stats cuda_gpu_kern_sum)";
  }
  AnalysisResult run(const AnalysisInput& in) const override {
    auto groups = collect(
        in.trace,
        [](const SpanRecord& s) {
          return not_instant(s) &&
                 (s.activity_type() == ActivityType::kKernel || s.activity_type() == ActivityType::kCollective);
        },
        [&](const SpanRecord& s) { return std::string(in.trace.name(s)); }, false);
    if (groups.empty())
      return missing("no GPU kernels in the trace: record with --level device or import a Kineto, nsys or ncu "
                     "trace of a GPU run");
    AnalysisResult r;
    r.tables.push_back(summary_table("gpu_kernel_summary", "GPU kernel summary", "name", groups, false));
    return r;
  }
};

class CudaApiSummary final : public Analysis {
 public:
  std::string_view name() const override { return "cuda_api_summary"; }
  std::string_view description() const override {
    return "CUDA runtime and driver API calls by name: count, total, avg, median, min, max, stddev, % (nsys "
           "stats cuda_api_sum)";
  }
  AnalysisResult run(const AnalysisInput& in) const override {
    auto groups = collect(
        in.trace,
        [](const SpanRecord& s) {
          return not_instant(s) && (s.activity_type() == ActivityType::kRuntimeCall ||
                                    s.activity_type() == ActivityType::kDriverCall);
        },
        [&](const SpanRecord& s) { return std::string(in.trace.name(s)); }, false);
    if (groups.empty())
      return missing("no CUDA runtime or driver calls in the trace: record with --level runtime_api or import "
                     "a Kineto or nsys trace of a GPU run");
    AnalysisResult r;
    r.tables.push_back(summary_table("cuda_api_summary", "CUDA API summary", "name", groups, false));
    return r;
  }
};

class MemcpySummary final : public Analysis {
 public:
  std::string_view name() const override { return "memcpy_summary"; }
  std::string_view description() const override {
    return "GPU copies by direction and memsets: count, time statistics, % of copy time, and bytes (nsys stats "
           "cuda_gpu_mem_time_sum / mem_size_sum)";
  }
  AnalysisResult run(const AnalysisInput& in) const override {
    auto groups = collect(
        in.trace,
        [](const SpanRecord& s) { return not_instant(s) && is_memory_transfer(s.activity_type()); },
        [](const SpanRecord& s) { return activity_name(s.activity); }, true);
    if (groups.empty())
      return missing("no GPU copies or memsets in the trace: record with --level device or import a Kineto or "
                     "nsys trace of a GPU run");
    AnalysisResult r;
    r.tables.push_back(summary_table("memcpy_summary", "GPU memory operations by direction", "operation",
                                     groups, true));
    return r;
  }
};

class RangeSummary final : public Analysis {
 public:
  std::string_view name() const override { return "range_summary"; }
  std::string_view description() const override {
    return "Named ranges (NVTX, record_function, annotations) by level and name: count, time statistics, % "
           "(nsys stats nvtx_sum)";
  }
  AnalysisResult run(const AnalysisInput& in) const override {
    auto groups = collect(
        in.trace,
        [](const SpanRecord& s) { return not_instant(s) && s.activity_type() == ActivityType::kAnnotation; },
        [&](const SpanRecord& s) {
          return level_name(s.level) + ":" + std::string(in.trace.name(s));
        },
        false);
    if (groups.empty())
      return missing("no named ranges in the trace: mark regions with the span API, record_function or NVTX");
    AnalysisResult r;
    r.tables.push_back(summary_table("range_summary", "Range summary", "level:name", groups, false));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_gpu_kernel_summary() { return std::make_unique<GpuKernelSummary>(); }
STRATA_REGISTER_ANALYSIS(make_gpu_kernel_summary, 2700);
std::unique_ptr<Analysis> make_cuda_api_summary() { return std::make_unique<CudaApiSummary>(); }
STRATA_REGISTER_ANALYSIS(make_cuda_api_summary, 2800);
std::unique_ptr<Analysis> make_memcpy_summary() { return std::make_unique<MemcpySummary>(); }
STRATA_REGISTER_ANALYSIS(make_memcpy_summary, 2900);
std::unique_ptr<Analysis> make_range_summary() { return std::make_unique<RangeSummary>(); }
STRATA_REGISTER_ANALYSIS(make_range_summary, 3000);

}  // namespace strata::analysis
