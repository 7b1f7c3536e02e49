// Known answers for the shared statistics and the optimal-batch rule (worked out by hand).
#include "analysis/stats.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <vector>

#include "analysis/workload.h"

namespace strata::analysis {
namespace {

TEST(Stats, TrimmedMeanDropsBothEnds) {
  std::vector<double> v = {10, 1, 2, 3, 4, 5, 6, 7, 8, 9};  // unsorted on purpose
  Summary s = summarize(v, 0.1);
  EXPECT_EQ(s.count, 10u);
  EXPECT_EQ(s.trimmed, 1u);
  EXPECT_DOUBLE_EQ(s.trimmed_mean, 44.0 / 8);  // 2..9
  EXPECT_DOUBLE_EQ(s.mean, 5.5);
  EXPECT_DOUBLE_EQ(s.median, 5.5);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 10);
  EXPECT_DOUBLE_EQ(s.total, 55);
}

TEST(Stats, OutlierIsTrimmed) {
  std::vector<double> v = {10, 10, 10, 10, 50};
  EXPECT_DOUBLE_EQ(summarize(v, 0.1).trimmed_mean, 18);  // floor(0.5) = 0 values trimmed
  EXPECT_DOUBLE_EQ(summarize(v, 0.2).trimmed_mean, 10);  // one value trimmed at each end
  EXPECT_DOUBLE_EQ(summarize(v, 0.2).median, 10);
}

TEST(Stats, SampleStandardDeviation) {
  std::vector<double> v = {2, 4, 4, 4, 5, 5, 7, 9};  // sum of squared deviations 32, n - 1 = 7
  EXPECT_NEAR(summarize(v, 0).stddev, std::sqrt(32.0 / 7), 1e-12);
  std::vector<double> one = {3};
  EXPECT_EQ(summarize(one, 0.1).stddev, 0);
  EXPECT_EQ(summarize(one, 0.1).trimmed_mean, 3);
}

TEST(Stats, EmptyAndDegenerateTrim) {
  EXPECT_EQ(summarize(std::vector<double>{}, 0.1).count, 0u);
  std::vector<double> v = {1, 2, 3};
  EXPECT_DOUBLE_EQ(summarize(v, 0.49).trimmed_mean, 2);  // trims one at each end: the middle value
  EXPECT_DOUBLE_EQ(summarize(v, 7).trimmed_mean, 2);     // clamped below one half
  EXPECT_DOUBLE_EQ(summarize(v, -1).trimmed_mean, 2);    // negative: no trimming
  EXPECT_DOUBLE_EQ(summarize(v, std::nan("")).trimmed_mean, 2);
}

TEST(Stats, PickAndParse) {
  std::vector<double> v = {1, 2, 3, 10};
  Summary s = summarize(v, 0.25);
  EXPECT_DOUBLE_EQ(pick(s, Statistic::kTrimmedMean), 2.5);
  EXPECT_DOUBLE_EQ(pick(s, Statistic::kMean), 4);
  EXPECT_DOUBLE_EQ(pick(s, Statistic::kMedian), 2.5);
  EXPECT_DOUBLE_EQ(pick(s, Statistic::kMin), 1);
  EXPECT_DOUBLE_EQ(pick(s, Statistic::kMax), 10);
  EXPECT_EQ(parse_statistic("median"), Statistic::kMedian);
  EXPECT_FALSE(parse_statistic("average").has_value());
}

// n evaluations of one batch size at latency_ms x (1 + spread x g), g on an even grid over [-1, 1].
BatchRow row(int64_t batch, double latency_ms, size_t n = 20, double spread = 0.005) {
  BatchRow r;
  r.batch = batch;
  for (size_t k = 0; k < n; ++k) {
    const double g = n == 1 ? 0 : -1 + 2 * static_cast<double>(k) / static_cast<double>(n - 1);
    r.samples_ms.push_back(latency_ms * (1 + spread * g));
  }
  r.latency_ms = summarize(r.samples_ms, 0.1);
  r.latency = r.latency_ms.trimmed_mean;
  r.throughput = static_cast<double>(batch) / (r.latency / 1e3);
  r.runs = 1;
  return r;
}

BatchChoice choose(const std::vector<BatchRow>& rows, double threshold, std::optional<double> target = {}) {
  BatchRule rule;
  rule.threshold = threshold;
  rule.latency_target_ms = target;
  return choose_batch(rows, rule);
}

TEST(OptimalBatch, SmallestWhereDoublingGainsLessThanThreshold) {
  // Throughputs 100, 166.7, 200, 205.1: doubling 4 -> 8 gains 2.6% < 5%. Each batch's 20 evaluations
  // lie within +-0.5% of its latency, so every comparison below has its two samples entirely apart.
  std::vector<BatchRow> rows = {row(1, 10), row(2, 12), row(4, 20), row(8, 39)};
  BatchChoice c = choose(rows, 0.05);
  EXPECT_EQ(c.pick, 2);
  EXPECT_TRUE(c.decided);
  ASSERT_EQ(c.comparisons.size(), 3u);
  EXPECT_NEAR(c.comparisons[2].effect, 8 / 39.0 / (4 / 20.0) - 1, 1e-9);
  EXPECT_EQ(choose(rows, 0.25).pick, 1);     // 2 -> 4 gains 20% < 25%
  BatchChoice largest = choose(rows, 0.01);  // every doubling gains more: the largest
  EXPECT_EQ(largest.pick, 3);
  EXPECT_TRUE(largest.decided);
  EXPECT_NE(largest.notes[0].find("larger batch sizes were not measured"), std::string::npos)
      << largest.notes[0];
  BatchChoice target = choose(rows, 0.05, 15.0);  // latency target: largest meeting 15 ms
  EXPECT_EQ(target.pick, 1);
  EXPECT_TRUE(target.decided);
  BatchChoice none = choose(rows, 0.05, 5.0);
  EXPECT_EQ(none.pick, -1);
  EXPECT_TRUE(none.decided);
  EXPECT_NE(none.notes[0].find("no batch size meets the 5.000 ms"), std::string::npos) << none.notes[0];
  EXPECT_EQ(choose({}, 0.05).pick, -1);
}

TEST(OptimalBatch, ComparesWithNextLargerWhenDoubleMissing) {
  // 1 -> 3 (no batch 2 measured): 100/s -> 103/s gains 3% < 5%.
  std::vector<BatchRow> rows = {row(1, 10), row(3, 29.1)};
  BatchChoice c = choose(rows, 0.05);
  EXPECT_EQ(c.pick, 0);
  EXPECT_TRUE(c.decided);
}

TEST(OptimalBatch, InterleavedEvaluationsAreInsideTheNoise) {
  // Batch 8's 20 evaluations spread +-30% around 39 ms: its throughputs 158-293/s straddle 1.05 x
  // batch 4's 200/s (210/s), 9 above and 11 below, so the test cannot tell whether doubling gains 5%.
  std::vector<BatchRow> rows = {row(1, 10), row(2, 12), row(4, 20), row(8, 39, 20, 0.3)};
  BatchChoice c = choose(rows, 0.05);
  EXPECT_EQ(c.pick, 2);  // the statistics alone still say 4
  EXPECT_FALSE(c.decided);
  ASSERT_EQ(c.comparisons.size(), 3u);
  EXPECT_TRUE(c.comparisons[0].significant);
  EXPECT_FALSE(c.comparisons[2].significant);
  EXPECT_GT(c.comparisons[2].p, 0.5);
  EXPECT_NE(
      c.notes[0].find("no optimal batch size: 4 -> 8 (+2.6% throughput, threshold 5.0%) is inside the noise"),
      std::string::npos)
      << c.notes[0];
  EXPECT_NE(c.notes[0].find("the rule picks 4"), std::string::npos) << c.notes[0];
}

TEST(OptimalBatch, TooFewEvaluationsCannotDecide) {
  // Three evaluations each, entirely apart: the exact test's smallest p is 2 / C(6, 3) = 0.1.
  std::vector<BatchRow> rows = {row(1, 10, 3), row(2, 40, 3)};
  BatchChoice c = choose(rows, 0.05);
  EXPECT_FALSE(c.decided);
  EXPECT_NEAR(c.comparisons[0].p, 0.1, 1e-12);
  EXPECT_NEAR(c.comparisons[0].best_p, 0.1, 1e-12);
  EXPECT_NE(c.notes[0].find("3 and 3 evaluations cannot reach p < 0.05 whatever their latencies: record at "
                            "least 4 per batch size"),
            std::string::npos)
      << c.notes[0];
  EXPECT_EQ(min_evaluations_for(0.05), 4u);  // 2 / C(8, 4) = 0.029; 2 / C(6, 3) = 0.1
  EXPECT_EQ(min_evaluations_for(0.01), 5u);  // 2 / C(10, 5) = 0.0079; 2 / C(8, 4) = 0.029
  // A latency target by the sign test: 5 evaluations all below give p = 2 / 2^5 = 0.0625.
  BatchChoice target = choose({row(1, 10, 5)}, 0.05, 15.0);
  EXPECT_EQ(target.pick, 0);
  EXPECT_FALSE(target.decided);
  EXPECT_NEAR(target.comparisons[0].p, 0.0625, 1e-12);
  EXPECT_NE(target.notes[0].find("record at least 6"), std::string::npos) << target.notes[0];
}

TEST(OptimalBatch, OneBatchSizeIsNoChoice) {
  BatchChoice c = choose({row(2, 10, 50)}, 0.05);
  EXPECT_EQ(c.pick, 0);
  EXPECT_FALSE(c.decided);
  EXPECT_NE(c.notes[0].find("only batch size 2 was measured (50 evaluations)"), std::string::npos)
      << c.notes[0];
}

}  // namespace
}  // namespace strata::analysis
