// The nsys-stats-like summaries (gpu_kernel_summary, cuda_api_summary, memcpy_summary,
// range_summary) on a generated trace of 200,000 spans, against statistics computed here by brute
// force (sorted copies, two-pass variance). Spans are selected by activity type: names that look
// like kernels or copies but are typed otherwise must not count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "analysis_test_util.h"
#include "core/attr_keys.h"

namespace strata::testing {
namespace {

struct Expected {
  std::vector<int64_t> d;
  std::vector<int64_t> bytes;
};

struct Generated {
  trace::Trace trace;
  std::map<std::string, Expected> kernels, api, copies, ranges;
};

Generated generate(size_t n, uint32_t seed) {
  Generated g;
  trace::Process p;
  p.pid = 1;
  g.trace.add_process(p);
  std::mt19937_64 rng(seed);
  std::lognormal_distribution<double> dur(8.0, 1.5);
  const ActivityType copy_types[] = {ActivityType::kMemcpyHtoD, ActivityType::kMemcpyDtoH,
                                     ActivityType::kMemcpyDtoD, ActivityType::kMemset};
  int64_t clock = 0;
  for (size_t i = 0; i < n; ++i) {
    SpanRecord s;
    s.span_id = i + 1;
    s.start_ns = clock;
    const int64_t d = static_cast<int64_t>(dur(rng));
    s.end_ns = clock + d;
    clock += d / 3 + 1;
    s.tid = 1;
    std::vector<AttrRecord> attrs;
    const int pick = static_cast<int>(rng() % 6);
    const int variant = static_cast<int>(rng() % 17);
    std::string name;
    if (pick == 0) {  // kernel (a few collectives)
      name = variant == 0 ? "ncclDevKernel_AllReduce" : "gemm_kernel_" + std::to_string(variant);
      s.activity = static_cast<uint8_t>(variant == 0 ? ActivityType::kCollective : ActivityType::kKernel);
      s.level = static_cast<uint8_t>(Level::kDevice);
      s.kind = static_cast<uint8_t>(SpanKind::kExecution);
      g.kernels[name].d.push_back(d);
    } else if (pick == 1) {  // runtime or driver call
      name = (variant % 2 ? "cudaLaunchKernel_" : "cuLaunchKernel_") + std::to_string(variant % 5);
      s.activity = static_cast<uint8_t>(variant % 2 ? ActivityType::kRuntimeCall : ActivityType::kDriverCall);
      s.level = static_cast<uint8_t>(Level::kRuntimeApi);
      s.kind = static_cast<uint8_t>(SpanKind::kLaunch);
      g.api[name].d.push_back(d);
    } else if (pick == 2) {  // copy or memset, most with bytes
      const ActivityType type = copy_types[variant % 4];
      name = "Memcpy something";
      s.activity = static_cast<uint8_t>(type);
      s.level = static_cast<uint8_t>(Level::kDevice);
      s.kind = static_cast<uint8_t>(SpanKind::kExecution);
      Expected& e = g.copies[activity_name(type)];
      e.d.push_back(d);
      if (variant != 16) {
        const int64_t b = static_cast<int64_t>(rng() % 10'000'000);
        attrs.push_back(g.trace.int_attr(attr_keys::kBytes, b));
        e.bytes.push_back(b);
      }
    } else if (pick == 3) {  // annotation range at model or layer level
      const Level level = variant % 2 ? Level::kModel : Level::kLayer;
      name = "range_" + std::to_string(variant % 7);
      s.activity = static_cast<uint8_t>(ActivityType::kAnnotation);
      s.level = static_cast<uint8_t>(level);
      s.kind = static_cast<uint8_t>(SpanKind::kSpan);
      g.ranges[level_name(level) + ":" + name].d.push_back(d);
    } else if (pick == 4) {  // an annotation instant: no range
      name = "range_0";
      s.activity = static_cast<uint8_t>(ActivityType::kAnnotation);
      s.level = static_cast<uint8_t>(Level::kModel);
      s.kind = static_cast<uint8_t>(SpanKind::kInstant);
      s.end_ns = s.start_ns;
    } else {  // CPU ops named like kernels and copies: counted nowhere
      name = variant % 2 ? "gemm_kernel_3" : "cudaLaunchKernel_1";
      s.activity = static_cast<uint8_t>(ActivityType::kCpuOp);
      s.level = static_cast<uint8_t>(Level::kLayer);
      s.kind = static_cast<uint8_t>(SpanKind::kSpan);
    }
    s.name = g.trace.strings.intern(name);
    g.trace.add_span(s, attrs);
  }
  return g;
}

void check(const analysis::Table& t, const std::string& key_column, const std::map<std::string, Expected>& want,
           bool with_bytes) {
  ASSERT_EQ(t.rows.size(), want.size()) << t.name;
  double all = 0;
  for (const auto& [k, e] : want)
    for (int64_t d : e.d) all += static_cast<double>(d);
  double previous_total = INFINITY;
  for (size_t r = 0; r < t.rows.size(); ++r) {
    const std::string key = text(t, r, key_column);
    ASSERT_TRUE(want.count(key)) << key;
    std::vector<int64_t> d = want.at(key).d;
    std::sort(d.begin(), d.end());
    long double sum = 0;
    for (int64_t x : d) sum += x;
    const double mean = static_cast<double>(sum / d.size());
    long double ss = 0;
    for (int64_t x : d) ss += (x - static_cast<long double>(mean)) * (x - static_cast<long double>(mean));
    const double stddev = d.size() > 1 ? std::sqrt(static_cast<double>(ss / (d.size() - 1))) : 0;
    const double med = d.size() % 2 ? d[d.size() / 2] : (d[d.size() / 2 - 1] + d[d.size() / 2]) / 2.0;
    EXPECT_EQ(num(t, r, "instances"), static_cast<double>(d.size())) << key;
    EXPECT_EQ(num(t, r, "total_ns"), static_cast<double>(sum)) << key;
    EXPECT_NEAR(num(t, r, "avg_ns"), mean, 1e-6 * mean) << key;
    EXPECT_EQ(num(t, r, "med_ns"), med) << key;
    EXPECT_EQ(num(t, r, "min_ns"), static_cast<double>(d.front())) << key;
    EXPECT_EQ(num(t, r, "max_ns"), static_cast<double>(d.back())) << key;
    EXPECT_NEAR(num(t, r, "stddev_ns"), stddev, 1e-6 * stddev + 1e-9) << key;
    EXPECT_NEAR(num(t, r, "time_pct"), 100.0 * static_cast<double>(sum) / all, 1e-9) << key;
    EXPECT_LE(static_cast<double>(sum), previous_total) << "rows are sorted by total time";
    previous_total = static_cast<double>(sum);
    if (with_bytes) {
      const std::vector<int64_t>& b = want.at(key).bytes;
      int64_t total = 0;
      for (int64_t x : b) total += x;
      EXPECT_EQ(num(t, r, "total_bytes"), static_cast<double>(total)) << key;
      EXPECT_EQ(num(t, r, "min_bytes"), static_cast<double>(*std::min_element(b.begin(), b.end()))) << key;
      EXPECT_EQ(num(t, r, "max_bytes"), static_cast<double>(*std::max_element(b.begin(), b.end()))) << key;
      EXPECT_NEAR(num(t, r, "avg_bytes"), static_cast<double>(total) / b.size(), 1e-6) << key;
    }
  }
}

TEST(SummaryAnalyses, MatchBruteForceOnGeneratedTrace) {
  Generated g = generate(200'000, 7);
  check(run_analysis(g.trace, "gpu_kernel_summary").table(), "name", g.kernels, false);
  check(run_analysis(g.trace, "cuda_api_summary").table(), "name", g.api, false);
  check(run_analysis(g.trace, "memcpy_summary").table(), "operation", g.copies, true);
  check(run_analysis(g.trace, "range_summary").table(), "level:name", g.ranges, false);
}

TEST(SummaryAnalyses, SingleInstanceAndMissingInput) {
  Generated g = generate(1, 3);  // one span: stddev 0 for a single instance, the other reports say what is missing
  int reports = 0;
  for (const char* name : {"gpu_kernel_summary", "cuda_api_summary", "memcpy_summary", "range_summary"}) {
    AnalysisRun r = run_analysis(g.trace, name);
    if (r.result.missing_input) continue;
    ++reports;
    EXPECT_EQ(num(r.table(), 0, "stddev_ns"), 0.0) << name;
  }
  EXPECT_LE(reports, 1);
  trace::Trace empty;
  for (const char* name : {"gpu_kernel_summary", "cuda_api_summary", "memcpy_summary", "range_summary"})
    EXPECT_TRUE(run_analysis(empty, name).result.missing_input.has_value()) << name;
}

}  // namespace
}  // namespace strata::testing
