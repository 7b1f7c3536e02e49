// Performance database: round trip and incremental benchmarking, against SQLite always and against
// PostgreSQL when STRATA_TEST_PG_URL is set (scripts/start_postgres.sh prints one). Every test uses
// its own system tag, so a shared database is not disturbed; its rows are deleted at the end.
#include "lowerbound/perf_db.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>

#include "../test_util.h"
#include "lowerbound/bench_runner.h"
#include "lowerbound/onnx_loader.h"

namespace strata::lowerbound {
namespace {

// One OpenMP thread: timings on a 2-core machine shared with other jobs are otherwise dominated by
// threads waiting for each other. Set before oneDNN's first parallel region.
const int kSingleThread = setenv("OMP_NUM_THREADS", "1", 0);

std::string data(const std::string& name) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/" + name;
}

std::string unique_tag(const char* test) {
  return std::string(test) + "-" + std::to_string(getpid()) + "-" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

class PerfDbTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    (void)kSingleThread;
    if (GetParam() == "postgresql") {
      const char* pg = std::getenv("STRATA_TEST_PG_URL");
      if (!pg || !*pg) GTEST_SKIP() << "STRATA_TEST_PG_URL not set (scripts/start_postgres.sh prints one)";
      url_ = pg;
    } else {
      url_ = dir_.file("perf.sqlite");
    }
    std::string error;
    db_ = open_perf_db(url_, &error);
    ASSERT_NE(db_, nullptr) << error;
  }
  testing::TempDir dir_;
  std::string url_;
  std::unique_ptr<PerfDb> db_;
};

TEST_P(PerfDbTest, RoundTripAndReplace) {
  std::string error, system = "test-system|" + unique_tag("roundtrip");
  BenchRecord r{
      system, "cpu", "f32", "nchw", "Conv|in=1x3x8x8",     "direct", "dnnl::convolution_forward", "jit:avx2",
      1234.5, 10.25, 5,     100,    "2026-01-01T00:00:00Z"};
  ASSERT_TRUE(db_->begin(&error)) << error;
  ASSERT_TRUE(db_->put(r, &error)) << error;
  BenchRecord w = r;
  w.algorithm = "winograd";
  w.median_ns = 999;
  ASSERT_TRUE(db_->put(w, &error)) << error;
  ASSERT_TRUE(db_->commit(&error)) << error;
  r.median_ns = 1000;  // same key: replaces
  ASSERT_TRUE(db_->put(r, &error)) << error;

  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db_->load(system, "cpu", &rows, &error)) << error;
  ASSERT_EQ(rows.size(), 2u);
  for (const BenchRecord& row : rows) {
    EXPECT_EQ(row.signature, "Conv|in=1x3x8x8");
    EXPECT_EQ(row.implementation, "jit:avx2");
    EXPECT_DOUBLE_EQ(row.spread_ns, 10.25);
    EXPECT_EQ(row.repetitions, 5);
    EXPECT_EQ(row.iterations, 100);
    EXPECT_EQ(row.measured_at, "2026-01-01T00:00:00Z");
    EXPECT_DOUBLE_EQ(row.median_ns, row.algorithm == "direct" ? 1000 : 999);
  }
  std::vector<BenchRecord> other;
  ASSERT_TRUE(db_->load(system, "cuda", &other, &error)) << error;
  EXPECT_TRUE(other.empty());
  ASSERT_TRUE(db_->erase(system, "cpu", &error)) << error;
  rows.clear();
  ASSERT_TRUE(db_->load(system, "cpu", &rows, &error)) << error;
  EXPECT_TRUE(rows.empty());
}

TEST_P(PerfDbTest, IncrementalRunsBenchmarkOnlyMissingLayers) {
  std::vector<LayerModel> chain(1), branch(1);
  std::string error;
  ASSERT_TRUE(load_onnx_file(data("chain_net.onnx"), &chain[0], &error)) << error;
  ASSERT_TRUE(load_onnx_file(data("branch_net.onnx"), &branch[0], &error)) << error;
  BenchOptions options;
  options.system_tag = unique_tag("incremental");
  MeasureOptions quick;
  quick.repetitions = 2;
  quick.min_repetition_ns = 100'000;

  // chain_net: conv1, relu (twice, one signature), conv2, global pool, gemm; flatten is free.
  BenchRunStats first;
  ASSERT_TRUE(run_benchmarks(chain, options, quick, db_.get(), &first, &error, nullptr)) << error;
  EXPECT_EQ(first.work_items, 5u);
  EXPECT_EQ(first.benchmarked, 5u);
  EXPECT_EQ(first.already_in_db, 0u);
  EXPECT_EQ(first.free_layers, 1u);
  EXPECT_GE(first.cases_run, 5u + 2u);  // convs have several algorithms

  BenchRunStats again;
  ASSERT_TRUE(run_benchmarks(chain, options, quick, db_.get(), &again, &error, nullptr)) << error;
  EXPECT_EQ(again.benchmarked, 0u);
  EXPECT_EQ(again.already_in_db, 5u);

  // branch_net shares stem conv, relu and the 3x3 conv with chain_net: only the 1x1 conv and the
  // concat are new.
  BenchRunStats branch_run;
  ASSERT_TRUE(run_benchmarks(branch, options, quick, db_.get(), &branch_run, &error, nullptr)) << error;
  EXPECT_EQ(branch_run.work_items, 5u);
  EXPECT_EQ(branch_run.already_in_db, 3u);
  EXPECT_EQ(branch_run.benchmarked, 2u);

  std::string why;
  std::string system = system_key("cpu", &why) + "|tag=" + options.system_tag;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db_->load(system, "cpu", &rows, &error)) << error;
  EXPECT_EQ(rows.size(), first.cases_run + branch_run.cases_run +
                             0 /* unsupported-only layers would add one row each; none here */);
  for (const BenchRecord& r : rows) {
    EXPECT_GT(r.median_ns, 0) << r.signature;
    EXPECT_EQ(r.repetitions, 2);
    EXPECT_GE(r.spread_ns, 0);
  }
  ASSERT_TRUE(db_->erase(system, "cpu", &error)) << error;
}

// Both are always registered (test discovery happens at build time); PostgreSQL skips without a URL.
INSTANTIATE_TEST_SUITE_P(Databases, PerfDbTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "sqlite" ? std::string("SQLite") : std::string("PostgreSQL");
                         });

TEST(PerfDb, BadUrlsGiveClearErrors) {
  std::string error;
  EXPECT_EQ(open_perf_db("postgresql://127.0.0.1:1/nodb?connect_timeout=2", &error), nullptr);
  EXPECT_NE(error.find("PostgreSQL: cannot connect"), std::string::npos) << error;
  error.clear();
  EXPECT_EQ(open_perf_db("/nonexistent-dir/x/perf.sqlite", &error), nullptr);
  EXPECT_NE(error.find("/nonexistent-dir/x/perf.sqlite: SQLite"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::lowerbound
