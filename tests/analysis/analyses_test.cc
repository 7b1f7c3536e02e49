// Known answers: every expected number below is worked out by hand from the fixture definitions
// in fixture_traces.h, not copied from the program's output.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "analysis_test_util.h"
#include "fixture_traces.h"

namespace strata::testing {
namespace {

class CpuFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { trace_ = new trace::Trace(cpu_model_trace()); }
  static void TearDownTestSuite() { delete trace_; }
  static trace::Trace* trace_;
};
trace::Trace* CpuFixture::trace_ = nullptr;

TEST_F(CpuFixture, ModelTableMeanWithoutTrimmingAtFiveEvaluations) {
  // trim 0.1 of 5 values drops none: latency = (4L + 5L) / 5 = 1.8 L.
  auto run = run_analysis(*trace_, "model_table");
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), 4u);
  const double base[] = {10, 12, 20, 39};
  const double batch[] = {1, 2, 4, 8};
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_DOUBLE_EQ(num(t, r, "batch"), batch[r]);
    EXPECT_DOUBLE_EQ(num(t, r, "evaluations"), 5);
    EXPECT_NEAR(num(t, r, "latency_ms"), 1.8 * base[r], 1e-9);
    EXPECT_NEAR(num(t, r, "median_ms"), base[r], 1e-9);
    EXPECT_NEAR(num(t, r, "max_ms"), 5 * base[r], 1e-9);
    EXPECT_NEAR(num(t, r, "stddev_ms"), std::sqrt(3.2) * base[r], 1e-9);  // deviations -0.8L x4, 3.2L
    EXPECT_NEAR(num(t, r, "throughput_per_s"), batch[r] / (1.8 * base[r] / 1e3), 1e-6);
  }
  // The statistics alone pick 4 (4 -> 8 gains 2.6% < 5%), but the first comparison is inside the noise:
  // 1 -> 2 gains 66.7%, yet of the 25 pairs of batch 2's throughputs against 1.05 x batch 1's, 21 are
  // larger (166.7 > 105 x4 x5, 33.3 > 21), and with four tied values in each sample the normal
  // approximation gives z = (|21 - 12.5| - 0.5) / sqrt(25 / 12 x (11 - 120 / 90)) = 1.783, p = 0.0746.
  for (size_t r = 0; r < 4; ++r) {
    EXPECT_EQ(text(t, r, "optimal"), "") << r;
    EXPECT_DOUBLE_EQ(num(t, r, "runs"), 1);
  }
  EXPECT_TRUE(
      has_note(t,
               "no optimal batch size: 1 -> 2 (+66.7% throughput, threshold 5.0%) is inside the noise "
               "(Mann-Whitney p = 0.0746 over 5 and 5 evaluations, alpha 0.05); on the statistics "
               "alone the rule picks 4"));
  EXPECT_TRUE(has_note(t, "noise: 5 evaluations per batch size from 1 run(s)"));
}

TEST_F(CpuFixture, ModelTableTrimmedAndLatencyTarget) {
  auto run = run_analysis(*trace_, "model_table", {{"trim", "0.2"}});
  EXPECT_NEAR(num(run.table(), 0, "latency_ms"), 10, 1e-9);  // the 5L outlier is trimmed
  EXPECT_NEAR(num(run.table(), 3, "throughput_per_s"), 8 / 0.039, 1e-6);
  auto target = run_analysis(*trace_, "model_table", {{"trim", "0.2"}, {"latency_target_ms", "15"}});
  // Batch 2 (12 ms) is the largest within 15 ms on the statistics, but 4 of its 5 evaluations below the
  // target give the sign test p = 2 x P(X <= 1 | 5, 1/2) = 2 x 6 / 32 = 0.375.
  EXPECT_EQ(text(target.table(), 1, "optimal"), "");
  EXPECT_TRUE(has_note(target.table(),
                       "no optimal batch size: whether batch size 2 meets the 15.000 ms target is "
                       "inside the noise (sign test p = 0.375: 4 of 5 evaluations below it"));
  EXPECT_TRUE(has_note(target.table(), "on the statistics alone the rule picks 2"));
  auto strict = run_analysis(*trace_, "model_table", {{"threshold", "0.01"}});
  EXPECT_EQ(text(strict.table(), 3, "optimal"), "");
  EXPECT_TRUE(has_note(strict.table(), "the rule picks 8"));
  auto median = run_analysis(*trace_, "model_table", {{"stat", "median"}});
  EXPECT_NEAR(num(median.table(), 1, "latency_ms"), 12, 1e-9);
}

TEST_F(CpuFixture, LayerTableAtOptimalBatch) {
  // Batch 4, trim 0.2: s = 20 ms / 20 = 1 ms; alloc = 4 MB x (index + 1). Nested aten::convolution
  // is not a top-level layer.
  auto run = run_analysis(*trace_, "layer_table", {{"trim", "0.2"}});
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), 5u);
  const char* names[] = {"conv1", "relu1", "conv2", "add", "fc"};
  const double ms[] = {3, 1, 3, 1, 2};
  for (size_t r = 0; r < 5; ++r) {
    EXPECT_EQ(text(t, r, "name"), names[r]);
    EXPECT_NEAR(num(t, r, "latency_ms"), ms[r], 1e-9);
    EXPECT_NEAR(num(t, r, "alloc_mb"), 4.0 * static_cast<double>(r + 1), 1e-9);
  }
  EXPECT_EQ(text(t, 0, "type"), "aten::conv2d");
  EXPECT_EQ(text(t, 0, "shape"), "[1,64,56,56]");
  // Untrimmed mean of s, s, s, s, 5s = 1.8 s.
  auto mean = run_analysis(*trace_, "layer_table", {{"batch", "1"}});
  EXPECT_NEAR(num(mean.table(), 0, "latency_ms"), 3 * 0.5 * 1.8, 1e-9);
  EXPECT_NEAR(num(mean.table(), 0, "min_ms"), 1.5, 1e-9);
  auto sorted = run_analysis(*trace_, "layer_table", {{"trim", "0.2"}, {"sort", "latency"}, {"top", "2"}});
  ASSERT_EQ(sorted.table().rows.size(), 2u);
  EXPECT_EQ(text(sorted.table(), 1, "name"), "conv2");  // ties keep execution order
}

TEST_F(CpuFixture, ByTypeStagesConvShare) {
  auto agg = run_analysis(*trace_, "layer_type_aggregate", {{"trim", "0.2"}});
  size_t conv = row_where(agg.table(), "type", "aten::conv2d");
  EXPECT_DOUBLE_EQ(num(agg.table(), conv, "count"), 2);
  EXPECT_NEAR(num(agg.table(), conv, "latency_ms"), 6, 1e-9);
  EXPECT_NEAR(num(agg.table(), conv, "latency_pct"), 60, 1e-9);
  EXPECT_NEAR(num(agg.table(), conv, "alloc_mb"), 16, 1e-9);  // 4 + 12 of 60 MB
  EXPECT_NEAR(num(agg.table(), conv, "alloc_pct"), 100.0 * 16 / 60, 1e-9);
  auto dist = run_analysis(*trace_, "layer_type_distribution");
  EXPECT_NEAR(num(dist.table(), row_where(dist.table(), "type", "aten::relu"), "count_pct"), 20, 1e-9);

  auto stages = run_analysis(*trace_, "stages", {{"trim", "0.2"}});
  // Layers 0,1 | 2,3 | 4: 4 ms, 4 ms, 2 ms.
  EXPECT_NEAR(num(stages.table(), 0, "latency_ms"), 4, 1e-9);
  EXPECT_NEAR(num(stages.table(), 1, "latency_ms"), 4, 1e-9);
  EXPECT_NEAR(num(stages.table(), 2, "latency_pct"), 20, 1e-9);
  EXPECT_DOUBLE_EQ(num(stages.table(), 2, "first_layer"), 4);

  auto share = run_analysis(*trace_, "conv_share", {{"trim", "0.2"}});
  EXPECT_NEAR(num(share.table(), 0, "latency_pct"), 60, 1e-9);
  EXPECT_DOUBLE_EQ(num(share.table(), 0, "layers"), 2);
}

TEST_F(CpuFixture, OpStatsCountsNestedOps) {
  auto run = run_analysis(*trace_, "op_stats", {{"top", "0"}});
  const auto& t = run.table();
  // conv1 per evaluation: 3 s = 3 latency / 20; summed over all 20 evaluations: 3/20 * 9 * (10+12+20+39).
  size_t conv1 = row_where(t, "name", "conv1");
  EXPECT_DOUBLE_EQ(num(t, conv1, "count"), 20);
  EXPECT_NEAR(num(t, conv1, "total_ms"), 0.15 * 9 * 81, 1e-9);
  size_t nested = row_where(t, "name", "aten::convolution");
  EXPECT_DOUBLE_EQ(num(t, nested, "count"), 40);
  EXPECT_NEAR(num(t, nested, "total_ms"), 2 * 0.9 * 0.15 * 9 * 81, 1e-9);
  EXPECT_EQ(text(t, 0, "name"), "aten::convolution");  // largest total first
  // Batch 1 conv1 instances: 1.5 ms x4 and 7.5 ms; min over all is 1.5 ms.
  EXPECT_NEAR(num(t, conv1, "min_ms"), 1.5, 1e-9);
  auto lib = run_analysis(*trace_, "op_stats", {{"level", "library"}});
  EXPECT_DOUBLE_EQ(num(lib.table(), 0, "count"), 40);
}

TEST_F(CpuFixture, LibrarySpansPlayTheKernelRole) {
  // Batch 4, trim 0.2: two oneDNN spans per evaluation, 0.8 x 3 ms each; flops 2 x 16e6, bytes 2 x 4e6.
  auto run = run_analysis(*trace_, "kernels_by_name", {{"trim", "0.2"}});
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(text(t, 0, "kernel"), "onednn::convolution");
  EXPECT_NEAR(num(t, 0, "count"), 2, 1e-9);
  EXPECT_NEAR(num(t, 0, "latency_ms"), 4.8, 1e-9);
  EXPECT_NEAR(num(t, 0, "gflop"), 0.032, 1e-12);
  EXPECT_NEAR(num(t, 0, "flop_per_byte"), 4, 1e-12);
  EXPECT_NEAR(num(t, 0, "gflop_per_s"), 3.2e7 / 4.8e-3 / 1e9, 1e-9);
  EXPECT_EQ(text(t, 0, "memory_bound"), "yes");  // CPU nominal ridge 128 / 25.6 = 5 > 4
  auto split = run_analysis(*trace_, "layer_device_split", {{"trim", "0.2"}});
  EXPECT_NEAR(num(split.table(), 0, "kernel_ms"), 2.4, 1e-9);
  EXPECT_NEAR(num(split.table(), 0, "non_kernel_ms"), 0.6, 1e-9);
  EXPECT_NEAR(num(split.table(), 1, "kernel_ms"), 0, 1e-9);
  auto roof = run_analysis(*trace_, "kernel_roofline",
                           {{"trim", "0.2"}, {"peak_gflops", "100"}, {"peak_gbps", "10"}});
  // Ridge 10 flop/byte; attainable = min(100, 4 x 10) = 40 GFLOP/s.
  EXPECT_NEAR(num(roof.table(), 0, "attainable_gflop_per_s"), 40, 1e-9);
  EXPECT_EQ(text(roof.table(), 0, "bound"), "memory");
}

class GpuFixture : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { trace_ = new trace::Trace(gpu_model_trace()); }
  static void TearDownTestSuite() { delete trace_; }
  static trace::Trace* trace_;
};
trace::Trace* GpuFixture::trace_ = nullptr;

TEST_F(GpuFixture, KernelTable) {
  auto run = run_analysis(*trace_, "kernel_table");
  const auto& t = run.table();
  ASSERT_EQ(t.rows.size(), 2u);
  size_t sgemm = row_where(t, "kernel", "sgemm");
  EXPECT_DOUBLE_EQ(num(t, sgemm, "layer_index"), 0);
  EXPECT_NEAR(num(t, sgemm, "latency_ms"), 1, 1e-12);
  EXPECT_NEAR(num(t, sgemm, "gflop"), 2, 1e-12);
  EXPECT_NEAR(num(t, sgemm, "dram_read_mb"), 100, 1e-9);
  EXPECT_NEAR(num(t, sgemm, "occupancy_pct"), 50, 1e-12);
  EXPECT_NEAR(num(t, sgemm, "flop_per_byte"), 10, 1e-12);
  EXPECT_NEAR(num(t, sgemm, "gflop_per_s"), 2000, 1e-9);
  EXPECT_EQ(text(t, sgemm, "memory_bound"), "yes");  // A100 ridge 19500 / 1555 = 12.5
  size_t relu = row_where(t, "kernel", "relu_kernel");
  EXPECT_DOUBLE_EQ(num(t, relu, "layer_index"), 1);
  EXPECT_NEAR(num(t, relu, "flop_per_byte"), 0.125, 1e-12);
}

TEST_F(GpuFixture, RooflinesUseDevicePeaks) {
  auto run = run_analysis(*trace_, "kernel_roofline");
  const auto& t = run.table();
  size_t sgemm = row_where(t, "kernel", "sgemm");
  EXPECT_NEAR(num(t, sgemm, "attainable_gflop_per_s"), 15550, 1e-9);  // 10 flop/B x 1555 GB/s
  EXPECT_NEAR(num(t, sgemm, "pct_of_attainable"), 100.0 * 2000 / 15550, 1e-9);
  size_t relu = row_where(t, "kernel", "relu_kernel");
  EXPECT_NEAR(num(t, relu, "attainable_gflop_per_s"), 194.375, 1e-9);
  auto h100 = run_analysis(*trace_, "kernel_roofline", {{"device", "h100"}});
  EXPECT_EQ(text(h100.table(), row_where(h100.table(), "kernel", "sgemm"), "bound"),
            "memory");  // ridge 19.97
  auto layer = run_analysis(*trace_, "layer_roofline");
  // Layer 0: 2e9 flops over the layer's 4 ms = 500 GFLOP/s.
  EXPECT_NEAR(num(layer.table(), 0, "gflop_per_s"), 500, 1e-9);
  EXPECT_EQ(text(layer.table(), 0, "layer"), "linear");
}

TEST_F(GpuFixture, KernelAggregates) {
  auto by_layer = run_analysis(*trace_, "kernels_by_layer");
  EXPECT_NEAR(num(by_layer.table(), 0, "kernel_ms"), 1, 1e-12);
  EXPECT_NEAR(num(by_layer.table(), 0, "layer_ms"), 4, 1e-12);
  auto by_model = run_analysis(*trace_, "kernels_by_model");
  EXPECT_DOUBLE_EQ(num(by_model.table(), 0, "evaluations"), 3);
  EXPECT_NEAR(num(by_model.table(), 0, "kernel_ms"), 1.5, 1e-12);
  EXPECT_NEAR(num(by_model.table(), 0, "kernel_pct"), 15, 1e-9);
  EXPECT_NEAR(num(by_model.table(), 0, "gflop"), 2.01, 1e-12);
  auto split = run_analysis(*trace_, "layer_device_split");
  EXPECT_NEAR(num(split.table(), 1, "non_kernel_ms"), 1.5, 1e-12);
  EXPECT_NEAR(num(split.table(), 1, "kernel_pct"), 25, 1e-9);
  auto metrics = run_analysis(*trace_, "metrics_by_layer");
  EXPECT_NEAR(num(metrics.table(), 0, "flops"), 2e9, 1e-3);
  EXPECT_NEAR(num(metrics.table(), 1, "dram_write_bytes"), 4e7, 1e-6);
  auto model = run_analysis(*trace_, "model_table");
  EXPECT_NEAR(num(model.table(), 0, "throughput_per_s"), 200, 1e-9);
}

TEST(Runs, SummarizedAcrossRuns) {
  // Three runs (processes tagged run=0,1,2), two evaluations each at batch 1:
  // run means 11, 20, 15 ms; across runs mean 15.333, median 15, sample stddev sqrt(61/3).
  trace::Trace t;
  const double latencies[3][2] = {{10, 12}, {20, 20}, {14, 16}};
  uint32_t predict = t.strings.intern("predict");
  for (int r = 0; r < 3; ++r) {
    trace::Process p;
    p.pid = 1000 + r;
    p.properties.set("run", std::to_string(r));
    uint16_t proc = t.add_process(p);
    int64_t at = 0;
    for (double ms : latencies[r]) {
      SpanRecord s;
      s.span_id = static_cast<uint64_t>(at + 1);
      s.start_ns = at;
      s.end_ns = at + static_cast<int64_t>(ms * 1e6);
      s.name = predict;
      s.level = static_cast<uint8_t>(Level::kModel);
      s.kind = static_cast<uint8_t>(SpanKind::kSpan);
      s.process = proc;
      std::vector<AttrRecord> a = {t.int_attr(attr_keys::kBatch, 1)};
      t.add_span(s, a);
      at = s.end_ns + 1000;
    }
  }
  auto run = run_analysis(t, "runs");
  ASSERT_EQ(run.result.tables.size(), 2u);
  const auto& per_run = run.table(0);
  ASSERT_EQ(per_run.rows.size(), 3u);
  EXPECT_EQ(text(per_run, 1, "run"), "1");
  EXPECT_NEAR(num(per_run, 1, "mean_ms"), 20, 1e-9);
  const auto& across = run.table(1);
  EXPECT_DOUBLE_EQ(num(across, 0, "runs"), 3);
  EXPECT_NEAR(num(across, 0, "latency_ms"), 46.0 / 3, 1e-9);
  EXPECT_NEAR(num(across, 0, "median_ms"), 15, 1e-9);
  EXPECT_NEAR(num(across, 0, "stddev_ms"), std::sqrt(61.0 / 3), 1e-9);
  auto trimmed = run_analysis(t, "runs", {{"trim", "0.4"}});
  EXPECT_NEAR(num(trimmed.table(1), 0, "latency_ms"), 15, 1e-9);  // drops 11 and 20
}

TEST(MissingInput, NamesTheLevelToRecord) {
  trace::Trace empty;
  trace::Process p;
  empty.add_process(p);
  for (const char* name :
       {"model_table", "layer_table", "kernel_table", "kernel_roofline", "op_stats", "stages"}) {
    auto run = run_analysis(empty, name);
    ASSERT_TRUE(run.result.missing_input.has_value()) << name;
    EXPECT_NE(run.result.missing_input->find("--level"), std::string::npos) << *run.result.missing_input;
  }
  // Kernels without flops: rooflines say what to record.
  trace::Trace gpu = gpu_model_trace();
  auto unknown = run_analysis(gpu, "kernel_roofline", {{"device", "tpu9000"}});
  ASSERT_TRUE(unknown.result.missing_input.has_value());
  EXPECT_NE(unknown.result.missing_input->find("peak_gflops"), std::string::npos);
}

TEST(Registry, EveryAnalysisHasAUniqueNameAndDescription) {
  std::set<std::string_view> names;
  for (const auto& a : analysis::all_analyses()) {
    EXPECT_TRUE(names.insert(a->name()).second) << a->name();
    EXPECT_FALSE(a->description().empty()) << a->name();
  }
  EXPECT_GE(names.size(), 17u);
}

}  // namespace
}  // namespace strata::testing
