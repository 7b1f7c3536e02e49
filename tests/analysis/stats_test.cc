// Known answers for the shared statistics and the optimal-batch rule (worked out by hand).
#include "analysis/stats.h"

#include <gtest/gtest.h>

#include <cmath>
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

BatchRow row(int64_t batch, double latency_ms) {
  BatchRow r;
  r.batch = batch;
  r.latency = latency_ms;
  r.throughput = static_cast<double>(batch) / (latency_ms / 1e3);
  return r;
}

TEST(OptimalBatch, SmallestWhereDoublingGainsLessThanThreshold) {
  // Throughputs 100, 166.7, 200, 205.1: doubling 4 -> 8 gains 2.6% < 5%.
  std::vector<BatchRow> rows = {row(1, 10), row(2, 12), row(4, 20), row(8, 39)};
  EXPECT_EQ(optimal_batch_index(rows, 0.05, std::nullopt), 2);
  EXPECT_EQ(optimal_batch_index(rows, 0.25, std::nullopt), 1);  // 2 -> 4 gains 20% < 25%
  EXPECT_EQ(optimal_batch_index(rows, 0.01, std::nullopt), 3);  // every doubling gains more: the largest
  EXPECT_EQ(optimal_batch_index(rows, 0.05, 15.0), 1);          // latency target: largest meeting 15 ms
  EXPECT_EQ(optimal_batch_index(rows, 0.05, 5.0), -1);
  EXPECT_EQ(optimal_batch_index({}, 0.05, std::nullopt), -1);
}

TEST(OptimalBatch, ComparesWithNextLargerWhenDoubleMissing) {
  // 1 -> 3 (no batch 2 measured): 100/s -> 103/s gains 3% < 5%.
  std::vector<BatchRow> rows = {row(1, 10), row(3, 29.1)};
  EXPECT_EQ(optimal_batch_index(rows, 0.05, std::nullopt), 0);
}

}  // namespace
}  // namespace strata::analysis
