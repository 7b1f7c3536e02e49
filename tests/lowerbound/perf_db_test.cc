// Performance database: round trip and incremental benchmarking, against SQLite always and against
// PostgreSQL when STRATA_TEST_PG_URL is set (scripts/start_postgres.sh prints one). Every test uses
// its own system tag, so a shared database is not disturbed; its rows are deleted at the end.
#include "lowerbound/perfdb/perf_db.h"

#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <thread>
#include <vector>

#include "../test_util.h"
#include "lowerbound/harness/bench_runner.h"
#include "lowerbound/ir/onnx_loader.h"

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
  quick.max_spread = 10;  // this test is about the database; noise handling has tests of its own

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
  std::string system = system_key("cpu", quick.threads, &why) + "|tag=" + options.system_tag;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db_->load(system, "cpu", &rows, &error)) << error;
  EXPECT_EQ(rows.size(), first.cases_run + branch_run.cases_run +
                             0 /* unsupported-only layers would add one row each; none here */);
  // The stored row is what run_benchmarks measured (the median/spread maths has its own known-answer
  // test in backend_test.cc): a timed call, two repetitions, a calibrated iteration count.
  for (const BenchRecord& r : rows) {
    EXPECT_GT(r.median_ns, 0) << r.signature;
    EXPECT_EQ(r.repetitions, 2);
    EXPECT_GE(r.iterations, 1) << r.signature;
    EXPECT_LE(r.iterations, MeasureOptions().max_iterations) << r.signature;
    EXPECT_FALSE(r.implementation.empty()) << r.signature;
  }
  ASSERT_TRUE(db_->erase(system, "cpu", &error)) << error;
}

// Both are always registered (test discovery happens at build time); PostgreSQL skips without a URL.
INSTANTIATE_TEST_SUITE_P(Databases, PerfDbTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "sqlite" ? std::string("SQLite") : std::string("PostgreSQL");
                         });

// Several processes opening a fresh PostgreSQL database at once (ctest -j2 with one test server, a
// team's machines) all create the schema: CREATE TABLE IF NOT EXISTS alone races (the loser fails on
// a unique violation in pg_type). Each round uses a schema of its own (search_path in the URL), so
// the shared test database's table is never dropped under another test.
TEST(PerfDb, ConcurrentFirstOpensOfAPostgresDatabaseAllSucceed) {
  const char* pg = std::getenv("STRATA_TEST_PG_URL");
  if (!pg || !*pg) GTEST_SKIP() << "STRATA_TEST_PG_URL not set (scripts/start_postgres.sh prints one)";
  const std::string base = pg;
  PGconn* admin = PQconnectdb(base.c_str());
  ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
  PQsetNoticeProcessor(
      admin, [](void*, const char*) {}, nullptr);  // "drop cascades to ..."
  auto exec = [&](const std::string& sql) {
    PGresult* res = PQexec(admin, sql.c_str());
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok;
  };
  constexpr int kRounds = 5, kOpeners = 8;
  for (int round = 0; round < kRounds; ++round) {
    const std::string schema = "strata_race_" + std::to_string(getpid()) + "_" + std::to_string(round);
    ASSERT_TRUE(exec("CREATE SCHEMA " + schema)) << PQerrorMessage(admin);
    const std::string url =
        base + (base.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema;
    std::vector<std::string> errors(kOpeners);
    std::vector<std::unique_ptr<PerfDb>> dbs(kOpeners);
    std::atomic<int> ready{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < kOpeners; ++t)
      threads.emplace_back([&, t] {
        ready.fetch_add(1);
        while (ready.load() < kOpeners) std::this_thread::yield();  // start together
        dbs[static_cast<size_t>(t)] = open_perf_db(url, &errors[static_cast<size_t>(t)]);
      });
    for (std::thread& t : threads) t.join();
    for (int t = 0; t < kOpeners; ++t)
      EXPECT_NE(dbs[static_cast<size_t>(t)], nullptr)
          << "round " << round << ": " << errors[static_cast<size_t>(t)];
    // The table is the schema's own and usable from every connection.
    if (dbs[0]) {
      std::string error;
      BenchRecord r{"race", "cpu", "f32", "nchw", "Relu|x", "default", "", "", 1, 0, 1, 1, ""};
      EXPECT_TRUE(dbs[0]->put(r, &error)) << error;
      std::vector<BenchRecord> rows;
      EXPECT_TRUE(dbs[kOpeners - 1] && dbs[kOpeners - 1]->load("race", "cpu", &rows, &error)) << error;
      EXPECT_EQ(rows.size(), 1u);
    }
    dbs.clear();
    EXPECT_TRUE(exec("DROP SCHEMA " + schema + " CASCADE")) << PQerrorMessage(admin);
  }
  PQfinish(admin);
}

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
