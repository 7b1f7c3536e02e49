// launch_stats, kernel_distribution and step_time against brute-force references on generated
// ranks (rank_gen.h): launches joined by correlation id here, not through the span tree.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "rank_gen.h"
#include "trace/span_tree.h"

namespace strata::testing {
namespace {

int64_t owner_of_row(const analysis::Cell& rank, int ranks) {
  return has_rank(rank) ? std::get<int64_t>(rank.value) : -1 - ranks;
}

struct LaunchRef {
  std::vector<double> delay, cpu, gpu;
  int64_t unlinked = 0, shorts = 0, negative = 0;
};

TEST(LaunchStats, MatchesBruteForceOnGeneratedRanks) {
  const int ranks = 3;
  const GenTrace g = generate_ranks(ranks, true, 150, 41);
  analysis::Params params;
  params.set("k", "4");
  params.set("top", "0");
  const auto result = run_analysis(g.trace, "launch_stats", params);
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  std::map<int64_t, LaunchRef> ref;
  size_t linked = 0;
  for (const GenWork& w : g.work) {
    LaunchRef& r = ref[w.owner];
    if (!w.linked) {
      ++r.unlinked;
      continue;
    }
    ++linked;
    r.delay.push_back(static_cast<double>(w.start - w.call_start) * 1e3);
    r.cpu.push_back(static_cast<double>(w.call_end - w.call_start) * 1e3);
    r.gpu.push_back(static_cast<double>(w.end - w.start) * 1e3);
    r.shorts += (w.end - w.start) < (w.call_end - w.call_start);
    r.negative += w.start < w.call_start;
  }
  const analysis::Table& summary = table_named(result, "launch_stats");
  ASSERT_EQ(summary.rows.size(), ref.size());
  std::map<int64_t, double> threshold, cpu_threshold;
  for (const auto& row : summary.rows) {
    const int64_t owner = owner_of_row(row[0], ranks);
    const LaunchRef& r = ref.at(owner);
    const double median = ref_percentile(r.delay, 50);
    std::vector<double> dev;
    for (double d : r.delay) dev.push_back(std::fabs(d - median));
    const double mad = ref_percentile(dev, 50);
    threshold[owner] = median + 4 * std::max(mad, 1000.0);
    int64_t outliers = 0;
    for (double d : r.delay) outliers += d > threshold[owner];
    const double cpu_median = ref_percentile(r.cpu, 50);
    std::vector<double> cpu_dev;
    for (double c : r.cpu) cpu_dev.push_back(std::fabs(c - cpu_median));
    cpu_threshold[owner] = cpu_median + 4 * std::max(ref_percentile(cpu_dev, 50), 1000.0);
    int64_t cpu_outliers = 0;
    for (double c : r.cpu) cpu_outliers += c > cpu_threshold[owner];
    SCOPED_TRACE("owner " + std::to_string(owner));
    EXPECT_EQ(num(row[column(summary, "launches")]), static_cast<double>(r.delay.size()));
    EXPECT_EQ(num(row[column(summary, "unlinked")]), static_cast<double>(r.unlinked));
    EXPECT_NEAR(num(row[column(summary, "delay_p50_us")]), median / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(summary, "delay_p90_us")]), ref_percentile(r.delay, 90) / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(summary, "delay_mad_us")]), mad / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(summary, "outlier_threshold_us")]), threshold[owner] / 1e3, 1e-9);
    EXPECT_EQ(num(row[column(summary, "delay_outliers")]), static_cast<double>(outliers));
    EXPECT_EQ(num(row[column(summary, "short_kernels")]), static_cast<double>(r.shorts));
    EXPECT_EQ(num(row[column(summary, "negative_delays")]), static_cast<double>(r.negative));
    EXPECT_NEAR(num(row[column(summary, "cpu_p50_us")]), ref_percentile(r.cpu, 50) / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(summary, "gpu_p50_us")]), ref_percentile(r.gpu, 50) / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(summary, "cpu_outlier_threshold_us")]), cpu_threshold[owner] / 1e3, 1e-9);
    EXPECT_EQ(num(row[column(summary, "cpu_outliers")]), static_cast<double>(cpu_outliers));
    EXPECT_GT(outliers, 0);
    EXPECT_GT(cpu_outliers, 0);
    EXPECT_GT(r.shorts, 0);
    EXPECT_GT(r.negative, 0);
  }
  // Every launch listed (top=0), longest delay first, flags as the reference says.
  const analysis::Table& launches = table_named(result, "launch_stats_launches");
  ASSERT_EQ(launches.rows.size(), linked);
  double previous = INFINITY;
  for (const auto& row : launches.rows) {
    const double delay = num(row[column(launches, "launch_delay_us")]);
    EXPECT_LE(delay, previous);
    previous = delay;
    const int64_t owner = owner_of_row(row[0], ranks);
    EXPECT_EQ(num(row[column(launches, "delay_outlier")]), delay * 1e3 > threshold[owner] ? 1 : 0);
    EXPECT_EQ(num(row[column(launches, "cpu_outlier")]),
              num(row[column(launches, "cpu_us")]) * 1e3 > cpu_threshold[owner] ? 1 : 0);
    EXPECT_EQ(num(row[column(launches, "short")]),
              num(row[column(launches, "gpu_us")]) < num(row[column(launches, "cpu_us")]) ? 1 : 0);
  }
  params.set("top", "7");
  EXPECT_EQ(table_named(run_analysis(g.trace, "launch_stats", params), "launch_stats_launches").rows.size(),
            7u);
}

TEST(KernelDistribution, MatchesBruteForceOnGeneratedRanks) {
  const int ranks = 4;
  GenTrace g = generate_ranks(ranks, false, 80, 9);
  // Rank 2's gemm runs 5x longer: the outlier of gemm.
  for (size_t i = 0; i < g.trace.spans.size(); ++i) {
    SpanRecord& s = g.trace.spans[i];
    if (s.process == 2 && g.trace.name(s) == "gemm") s.end_ns = s.start_ns + 5 * s.duration_ns();
  }
  for (GenWork& w : g.work)
    if (w.owner == 2 && w.name == "gemm") w.end = w.start + 5 * (w.end - w.start);
  g.trace.invalidate_structure();
  analysis::Params params;
  params.set("top", "0");
  const auto result = run_analysis(g.trace, "kernel_distribution", params);
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  std::map<std::string, std::map<int64_t, std::vector<double>>> ref;
  for (const GenWork& w : g.work)
    if (w.type == ActivityType::kKernel || w.type == ActivityType::kCollective)
      ref[w.name][w.owner].push_back(static_cast<double>(w.end - w.start) * 1e3);
  const analysis::Table& per_rank = table_named(result, "kernel_distribution");
  size_t rows = 0;
  for (const auto& [name, owners] : ref) rows += owners.size();
  ASSERT_EQ(per_rank.rows.size(), rows);
  for (const auto& row : per_rank.rows) {
    const auto& d = ref.at(std::get<std::string>(row[0].value)).at(std::get<int64_t>(row[1].value));
    EXPECT_EQ(num(row[column(per_rank, "count")]), static_cast<double>(d.size()));
    EXPECT_NEAR(num(row[column(per_rank, "p50_us")]), ref_percentile(d, 50) / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(per_rank, "p90_us")]), ref_percentile(d, 90) / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(per_rank, "max_us")]), ref_percentile(d, 100) / 1e3, 1e-9);
  }
  const analysis::Table& spread = table_named(result, "kernel_distribution_spread");
  ASSERT_EQ(spread.rows.size(), ref.size());
  for (const auto& row : spread.rows) {
    const std::string name = std::get<std::string>(row[0].value);
    std::vector<std::pair<double, int64_t>> medians;
    for (const auto& [owner, d] : ref.at(name)) medians.emplace_back(ref_percentile(d, 50), owner);
    std::sort(medians.begin(), medians.end());
    EXPECT_NEAR(num(row[column(spread, "min_p50_us")]), medians.front().first / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(spread, "max_p50_us")]), medians.back().first / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(spread, "spread_pct")]),
                100 * (medians.back().first - medians.front().first) / medians.front().first, 1e-9);
    if (name == "gemm") {
      EXPECT_EQ(num(row[column(spread, "outlier_rank")]), 2);
      EXPECT_EQ(num(row[column(spread, "max_p50_rank")]), 2);
    }
  }
  // Ranked by total time: gemm (5x on one rank) first.
  EXPECT_EQ(std::get<std::string>(spread.rows.front()[0].value), "gemm");
}

// ProfilerStep-style marks: rank r's step n lasts 100 + 10 n + 7 r us, except rank 1's step 2 (+500).
TEST(StepTime, MarkedStepsMatchBruteForce) {
  trace::Trace t;
  const int ranks = 3, steps = 4;
  std::map<int64_t, std::map<int64_t, int64_t>> duration;  // step -> rank -> us
  for (int r = 0; r < ranks; ++r) {
    trace::Process p;
    p.properties.set_int("rank", r);
    t.add_process(std::move(p));
  }
  for (int r = 0; r < ranks; ++r) {
    int64_t at = 1000 * r;
    for (int n = 0; n < steps; ++n) {
      const int64_t d = 100 + 10 * n + 7 * r + (r == 1 && n == 2 ? 500 : 0);
      duration[n + 10][r] = d;
      SpanRecord s;
      s.span_id = t.spans.size() + 1;
      s.process = static_cast<uint16_t>(r);
      s.name = t.strings.intern("ProfilerStep#" + std::to_string(n + 10));
      s.start_ns = at * 1000, s.end_ns = (at + d) * 1000;
      s.level = static_cast<uint8_t>(Level::kModel);
      s.kind = static_cast<uint8_t>(SpanKind::kSpan);
      s.activity = static_cast<uint8_t>(ActivityType::kAnnotation);
      const AttrRecord step = t.int_attr("step", n + 10);
      t.add_span(s, std::span(&step, 1));
      at += d + 20;
    }
  }
  const auto result = run_analysis(t, "step_time");
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  const analysis::Table& rows = table_named(result, "step_time");
  ASSERT_EQ(rows.rows.size(), static_cast<size_t>(ranks * steps));
  for (const auto& row : rows.rows) {
    EXPECT_EQ(std::get<std::string>(row[column(rows, "source")].value), "ProfilerStep");
    const int64_t n = std::get<int64_t>(row[1].value), r = std::get<int64_t>(row[0].value);
    EXPECT_NEAR(num(row[column(rows, "duration_ms")]), duration[n][r] / 1e3, 1e-12);
  }
  const analysis::Table& across = table_named(result, "step_time_ranks");
  ASSERT_EQ(across.rows.size(), static_cast<size_t>(steps));
  for (const auto& row : across.rows) {
    const auto& d = duration[std::get<int64_t>(row[0].value)];
    std::vector<double> v;
    int64_t slowest = 0;
    for (const auto& [r, us] : d) {
      v.push_back(static_cast<double>(us));
      if (us > d.at(slowest)) slowest = r;
    }
    EXPECT_NEAR(num(row[column(across, "median_ms")]), ref_percentile(v, 50) / 1e3, 1e-12);
    EXPECT_NEAR(num(row[column(across, "spread_ms")]), (ref_percentile(v, 100) - ref_percentile(v, 0)) / 1e3,
                1e-12);
    EXPECT_EQ(num(row[column(across, "slowest_rank")]), static_cast<double>(slowest));
  }
  const analysis::Table& summary = table_named(result, "step_time_summary");
  EXPECT_EQ(num(summary.rows.at(2)[column(summary, "slowest_in_steps")]), 3);  // rank 2 in steps 10, 11, 13
  EXPECT_EQ(num(summary.rows.at(1)[column(summary, "slowest_in_steps")]), 1);  // rank 1 in step 12
}

// No marks: each rank's iterations mined from its own kernels. Rank r repeats the same six kernels
// eight times, each iteration 60 + 5 r us long followed by a 40 us pause; rank 1 has one slow step.
TEST(StepTime, MinedWhenUnmarked) {
  trace::Trace t;
  const int ranks = 2, iterations = 8;
  const char* names[] = {"conv", "bn", "relu", "conv2", "pool", "fc"};
  std::map<int64_t, std::vector<int64_t>> truth;
  for (int r = 0; r < ranks; ++r) {
    trace::Process p;
    p.properties.set_int("rank", r);
    t.add_process(std::move(p));
  }
  for (int r = 0; r < ranks; ++r) {
    int64_t at = 0;
    for (int it = 0; it < iterations; ++it) {
      const int64_t each = 10 + r + (r == 1 && it == 5 ? 20 : 0);
      for (const char* n : names) {
        add_gen_span(t, static_cast<uint16_t>(r), n, Level::kDevice, SpanKind::kExecution,
                     ActivityType::kKernel, 7, 0, at, at + each - 1);
        at += each;
      }
      truth[r].push_back(6 * each - 1);
      at += 40;
    }
  }
  const auto result = run_analysis(t, "step_time");
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  const analysis::Table& rows = table_named(result, "step_time");
  std::map<int64_t, std::vector<double>> mined;
  for (const auto& row : rows.rows) {
    EXPECT_EQ(std::get<std::string>(row[column(rows, "source")].value), "mined");
    mined[std::get<int64_t>(row[0].value)].push_back(num(row[column(rows, "duration_ms")]) * 1e3);
  }
  ASSERT_EQ(mined.size(), 2u);
  for (const auto& [r, d] : mined) {
    ASSERT_EQ(d.size(), static_cast<size_t>(iterations)) << "rank " << r;
    for (size_t k = 0; k < d.size(); ++k)
      EXPECT_EQ(d[k], static_cast<double>(truth[r][k])) << "rank " << r << " step " << k;
  }
  const analysis::Table& across = table_named(result, "step_time_ranks");
  ASSERT_EQ(across.rows.size(), static_cast<size_t>(iterations));
  for (const auto& row : across.rows) {
    const auto k = static_cast<size_t>(std::get<int64_t>(row[0].value));
    EXPECT_EQ(num(row[column(across, "slowest_rank")]), 1);  // 11 us kernels against 10
    EXPECT_NEAR(num(row[column(across, "spread_ms")]), (truth[1][k] - truth[0][k]) / 1e3, 1e-12);
  }
}

TEST(StepTime, NothingToFindSaysWhy) {
  trace::Trace empty;
  const auto r = run_analysis(empty, "step_time");
  ASSERT_TRUE(r.missing_input);
  EXPECT_NE(r.missing_input->find("no processes"), std::string::npos) << *r.missing_input;
  trace::Trace host_only;
  host_only.add_process({});
  add_gen_span(host_only, 0, "op", Level::kLayer, SpanKind::kSpan, ActivityType::kCpuOp, kNoStream, 0, 0, 10);
  const auto h = run_analysis(host_only, "step_time");
  ASSERT_TRUE(h.missing_input);
  EXPECT_NE(h.missing_input->find("no ProfilerStep marks and no iterations mined: "), std::string::npos);
}

}  // namespace
}  // namespace strata::testing
