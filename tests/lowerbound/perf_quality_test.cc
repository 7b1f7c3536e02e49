// Measurement quality in the performance database (issue 12.2), against SQLite always and PostgreSQL
// when STRATA_TEST_PG_URL is set: quality columns round-trip; a database written before them is
// migrated (columns added, rows flagged "legacy", the old "omp_threads=default" key made explicit);
// `bench run --recheck` re-measures suspicious rows and only those; a measurement that stays noisy is
// not stored, with one line saying why.
#include <gtest/gtest.h>
#include <libpq-fe.h>
#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "../test_util.h"
#include "lowerbound/harness/bench_runner.h"
#include "lowerbound/ir/onnx_loader.h"
#include "lowerbound/perfdb/perf_db.h"
#include "lowerbound/perfdb/schema.h"

namespace strata::lowerbound {
namespace {

std::string unique(const char* what) {
  return std::string(what) + "_" + std::to_string(getpid()) + "_" +
         std::to_string(std::chrono::steady_clock::now().time_since_epoch().count() % 1000000007);
}

// The table as issue 6 created it: no quality columns.
constexpr const char* kOldSchema =
    "CREATE TABLE strata_benchmarks (system TEXT NOT NULL, backend TEXT NOT NULL, dtype TEXT NOT NULL, "
    "layout "
    "TEXT NOT NULL, signature TEXT NOT NULL, algorithm TEXT NOT NULL, library_call TEXT NOT NULL, "
    "implementation "
    "TEXT NOT NULL, median_ns DOUBLE PRECISION NOT NULL, spread_ns DOUBLE PRECISION NOT NULL, repetitions "
    "INTEGER NOT NULL, iterations INTEGER NOT NULL, measured_at TEXT NOT NULL, PRIMARY KEY (system, backend, "
    "dtype, layout, signature, algorithm))";

// A database of its own per test: an SQLite file, or a PostgreSQL schema (search_path in the URL).
class QualityTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (GetParam() == "postgresql") {
      const char* pg = std::getenv("STRATA_TEST_PG_URL");
      if (!pg || !*pg) GTEST_SKIP() << "STRATA_TEST_PG_URL not set (scripts/start_postgres.sh prints one)";
      admin_ = PQconnectdb(pg);
      ASSERT_EQ(PQstatus(admin_), CONNECTION_OK) << PQerrorMessage(admin_);
      PQsetNoticeProcessor(
          admin_, [](void*, const char*) {}, nullptr);
      schema_ = unique("strata_quality");
      ASSERT_TRUE(raw("CREATE SCHEMA " + schema_));
      const std::string base = pg;
      url_ = base + (base.find('?') == std::string::npos ? "?" : "&") + "options=-csearch_path%3D" + schema_;
    } else {
      url_ = dir_.file("perf.sqlite");
    }
  }
  void TearDown() override {
    if (admin_) {
      raw("DROP SCHEMA " + schema_ + " CASCADE");
      PQfinish(admin_);
    }
  }
  // A statement on the raw database, outside Strata (to build an old-schema table).
  bool raw(const std::string& sql) {
    if (admin_) {
      std::string in_schema =
          schema_.empty() || sql.rfind("CREATE SCHEMA", 0) == 0 || sql.rfind("DROP", 0) == 0
              ? sql
              : "SET search_path TO " + schema_ + "; " + sql;
      PGresult* res = PQexec(admin_, in_schema.c_str());
      bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
      if (!ok) ADD_FAILURE() << sql << ": " << PQerrorMessage(admin_);
      PQclear(res);
      return ok;
    }
    sqlite3* db = nullptr;
    bool ok = sqlite3_open(url_.c_str(), &db) == SQLITE_OK &&
              sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr) == SQLITE_OK;
    if (!ok) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db);
    sqlite3_close(db);
    return ok;
  }
  std::unique_ptr<PerfDb> open() {
    std::string error;
    std::unique_ptr<PerfDb> db = open_perf_db(url_, &error);
    EXPECT_NE(db, nullptr) << error;
    return db;
  }
  static std::vector<LayerModel> chain_net() {
    std::vector<LayerModel> models(1);
    std::string error;
    EXPECT_TRUE(load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/chain_net.onnx",
                               &models[0], &error))
        << error;
    return models;
  }

  testing::TempDir dir_;
  std::string url_, schema_;
  PGconn* admin_ = nullptr;
};

TEST_P(QualityTest, QualityColumnsRoundTrip) {
  auto db = open();
  ASSERT_NE(db, nullptr);
  BenchRecord r{"sys",
                "cpu",
                "f32",
                "nchw",
                "Relu|x",
                "default",
                "dnnl::eltwise_forward",
                "jit",
                2000,
                40,
                10,
                1000,
                "2026-11-23T00:00:00Z"};
  r.threads = 1;
  r.timer = "thread_cpu";
  r.disturbed = 3;
  r.relative_spread = 0.02;
  r.load_avg = 3.5;
  r.attempts = 2;
  r.quality = "good";
  std::string error;
  ASSERT_TRUE(db->put(r, &error)) << error;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db->load("sys", "cpu", &rows, &error)) << error;
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].threads, 1);
  EXPECT_EQ(rows[0].timer, "thread_cpu");
  EXPECT_EQ(rows[0].disturbed, 3);
  EXPECT_DOUBLE_EQ(rows[0].relative_spread, 0.02);
  EXPECT_DOUBLE_EQ(rows[0].load_avg, 3.5);
  EXPECT_EQ(rows[0].attempts, 2);
  EXPECT_EQ(rows[0].quality, "good");
  EXPECT_TRUE(rows[0].trusted());
  std::vector<std::string> systems;
  ASSERT_TRUE(db->systems("cpu", &systems, &error)) << error;
  EXPECT_EQ(systems, std::vector<std::string>{"sys"});
}

// A database from before quality was recorded, holding the ReLU: 7,994 us with a spread of
// 2,000 ms, measured with OpenMP's default thread count.
TEST_P(QualityTest, OldDatabaseIsMigratedAndItsRowsAreSuspicious) {
  ASSERT_TRUE(raw(kOldSchema));
  const std::string old_key = "cpu=Test CPU|cores=2|omp_threads=default|onednn=2.6.3";
  const std::string explicit_key = "cpu=Test CPU|cores=2|omp_threads=1|onednn=2.6.3";
  ASSERT_TRUE(raw("INSERT INTO strata_benchmarks VALUES ('" + old_key +
                  "', 'cpu', 'f32', 'nchw', 'Relu|x', 'default', 'dnnl::eltwise_forward', 'jit', 7994000, "
                  "2000000000, 5, 1, '2026-11-01T00:00:00Z')"));
  ASSERT_TRUE(
      raw("INSERT INTO strata_benchmarks VALUES ('" + explicit_key +
          "', 'cpu', 'f32', 'nchw', 'Relu|x', 'default', 'dnnl::eltwise_forward', 'jit', 2000, 20, 5, 1000, "
          "'2026-11-01T00:00:00Z')"));
  auto db = open();
  ASSERT_NE(db, nullptr);
  std::string error;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db->load("cpu=Test CPU|cores=2|omp_threads=2|onednn=2.6.3", "cpu", &rows, &error)) << error;
  ASSERT_EQ(rows.size(), 1u) << "omp_threads=default means one thread per core: 2 here";
  EXPECT_EQ(rows[0].quality, "legacy");
  EXPECT_FALSE(rows[0].trusted());
  EXPECT_TRUE(suspicious(rows, 0.10));
  std::vector<BenchRecord> explicit_rows;
  ASSERT_TRUE(db->load(explicit_key, "cpu", &explicit_rows, &error)) << error;
  ASSERT_EQ(explicit_rows.size(), 1u);
  EXPECT_EQ(explicit_rows[0].quality, "legacy");
  EXPECT_TRUE(suspicious(explicit_rows, 0.10)) << "not measured with quality: re-measured by --recheck";
  // Opening again migrates nothing twice.
  auto again = open();
  ASSERT_NE(again, nullptr);
  std::vector<std::string> systems;
  ASSERT_TRUE(again->systems("cpu", &systems, &error)) << error;
  EXPECT_EQ(systems.size(), 2u);
}

TEST_P(QualityTest, RecheckRemeasuresOnlySuspiciousItems) {
  auto db = open();
  ASSERT_NE(db, nullptr);
  std::vector<LayerModel> models = chain_net();
  BenchOptions options;
  options.system_tag = unique("recheck");
  MeasureOptions quick;
  quick.repetitions = 5;
  quick.min_repetition_ns = 200'000;
  quick.max_spread = 10;  // about recheck, not noise
  std::string error;
  BenchRunStats first;
  ASSERT_TRUE(run_benchmarks(models, options, quick, db.get(), &first, &error, nullptr)) << error;
  ASSERT_EQ(first.benchmarked, first.work_items);
  std::string why;
  const std::string system = system_key("cpu", quick.threads, &why) + "|tag=" + options.system_tag;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db->load(system, "cpu", &rows, &error)) << error;
  for (const BenchRecord& r : rows) {
    EXPECT_EQ(r.quality, "good") << r.signature;
    EXPECT_EQ(r.timer, "thread_cpu") << r.signature;
    EXPECT_EQ(r.threads, 1) << r.signature;
    EXPECT_GE(r.load_avg, 0) << r.signature;
    EXPECT_GE(r.attempts, 1) << r.signature;
  }
  // One item's row as the issue saw it: a ReLU at 7,994 us, no quality recorded.
  BenchRecord relu;
  for (const BenchRecord& r : rows)
    if (r.signature.rfind("Relu", 0) == 0) relu = r;
  ASSERT_FALSE(relu.signature.empty());
  relu.median_ns = 7'994'000;
  relu.spread_ns = 2e9;
  relu.quality = "legacy";
  relu.relative_spread = -1;
  ASSERT_TRUE(db->put(relu, &error)) << error;

  options.recheck = true;
  BenchRunStats recheck;
  ASSERT_TRUE(run_benchmarks(models, options, quick, db.get(), &recheck, &error, nullptr)) << error;
  EXPECT_EQ(recheck.rechecked, 1u);
  EXPECT_EQ(recheck.benchmarked, 1u);
  EXPECT_EQ(recheck.already_in_db, recheck.work_items - 1);
  ASSERT_EQ(recheck.remeasured_entries.size(), 1u);
  EXPECT_NE(recheck.remeasured_entries[0].find("Relu"), std::string::npos) << recheck.remeasured_entries[0];
  EXPECT_NE(recheck.remeasured_entries[0].find("rechecked: best"), std::string::npos);
  EXPECT_NE(recheck.remeasured_entries[0].find("(was 7994.00 us)"), std::string::npos)
      << recheck.remeasured_entries[0];
  rows.clear();
  ASSERT_TRUE(db->load(system, "cpu", &rows, &error)) << error;
  for (const BenchRecord& r : rows) {
    EXPECT_EQ(r.quality, "good") << r.signature;
    if (r.signature == relu.signature) {
      EXPECT_LT(r.median_ns, 7'994'000);
    }
  }
  EXPECT_FALSE(suspicious(rows, 10));
}

// A measurement that stays noisy after every attempt is not stored (its item holds no row), and the
// run says which and why. Forced here with a spread limit no measurement meets.
TEST_P(QualityTest, NoisyMeasurementsAreNotStored) {
  auto db = open();
  ASSERT_NE(db, nullptr);
  std::vector<LayerModel> models = chain_net();
  BenchOptions options;
  options.system_tag = unique("noisy");
  MeasureOptions strict;
  strict.repetitions = 5;
  strict.min_repetition_ns = 100'000;
  strict.max_spread = 1e-12;
  strict.attempts = 2;
  std::string error;
  BenchRunStats stats;
  ASSERT_TRUE(run_benchmarks(models, options, strict, db.get(), &stats, &error, nullptr)) << error;
  EXPECT_EQ(stats.benchmarked, 0u);
  EXPECT_EQ(stats.refused, stats.work_items);
  ASSERT_EQ(stats.refused_entries.size(), stats.refused);
  for (const std::string& line : stats.refused_entries) {
    EXPECT_NE(line.find(": not stored: spread "), std::string::npos) << line;
    EXPECT_NE(line.find("after 2 attempts (load average "), std::string::npos) << line;
  }
  std::string why;
  std::vector<BenchRecord> rows;
  ASSERT_TRUE(db->load(system_key("cpu", 1, &why) + "|tag=" + options.system_tag, "cpu", &rows, &error))
      << error;
  EXPECT_TRUE(rows.empty());
}

INSTANTIATE_TEST_SUITE_P(Databases, QualityTest, ::testing::Values("sqlite", "postgresql"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == "sqlite" ? std::string("SQLite") : std::string("PostgreSQL");
                         });

TEST(Quality, MigratedSystemKeys) {
  EXPECT_EQ(schema::migrated_system_key("cpu=X|cores=2|omp_threads=default|onednn=2.6.3"),
            "cpu=X|cores=2|omp_threads=2|onednn=2.6.3");
  EXPECT_EQ(schema::migrated_system_key("cpu=X|cores=16|omp_threads=default|onednn=2.6.3|tag=t"),
            "cpu=X|cores=16|omp_threads=16|onednn=2.6.3|tag=t");
  EXPECT_EQ(schema::migrated_system_key("cpu=X|cores=2|omp_threads=1|onednn=2.6.3"),
            "cpu=X|cores=2|omp_threads=1|onednn=2.6.3");
  EXPECT_EQ(schema::migrated_system_key("gpu=H100|sm=90"), "gpu=H100|sm=90");
}

}  // namespace
}  // namespace strata::lowerbound
