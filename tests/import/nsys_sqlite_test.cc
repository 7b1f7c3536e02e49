// The Nsight Systems SQLite reader against the three real exports of tests/data/nsys (schemas 2.9.1,
// 3.13.2, 3.16.1): counts and kernel totals computed here with SQL over the same file, NVTX ranges
// containing their launches, and malformed databases giving one line.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/activity_type.h"
#include "core/level.h"
#include "import/importer.h"
#include "import/nsys_sqlite_reader.h"
#include "trace/span_tree.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace strata {
namespace {

const char* const kFiles[] = {"a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite",
                              "a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite",
                              "h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite"};

std::string data_path(const char* file) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/data/nsys/" + file;
}

// One integer from SQL over the file (sqlite3 API, not the reader's code); -1 when the table is absent.
int64_t sql_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return v;
}

int64_t table_count(const std::string& path, const std::string& table) {
  const int64_t n = sql_int(path, "SELECT COUNT(*) FROM " + table);
  return n < 0 ? 0 : n;
}

std::vector<std::pair<std::string, int64_t>> sql_top_kernels(const std::string& path) {
  std::vector<std::pair<std::string, int64_t>> out;
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(
      sqlite3_prepare_v2(db,
                         "SELECT s.value, SUM(k.end - k.start) AS total FROM CUPTI_ACTIVITY_KIND_KERNEL k "
                         "JOIN StringIds s ON s.id = k.demangledName GROUP BY s.value "
                         "ORDER BY total DESC, s.value LIMIT 5",
                         -1, &s, nullptr),
      SQLITE_OK);
  while (sqlite3_step(s) == SQLITE_ROW)
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)), sqlite3_column_int64(s, 1));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

bool open(const std::string& path, trace::Trace* t, std::string* error) {
  import::register_readers();
  return trace::open_trace(path, t, error);
}

TEST(NsysSqlite, CountsEqualSqlCountsOfTheSameTables) {
  for (const char* file : kFiles) {
    const std::string path = data_path(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(open(path, &t, &error)) << error;
    std::map<ActivityType, int64_t> n;
    int64_t memcpy = 0, annotations = 0;
    for (const SpanRecord& s : t.spans) {
      ++n[s.activity_type()];
      if (is_memcpy(s.activity_type())) ++memcpy;
      if (s.activity_type() == ActivityType::kAnnotation) ++annotations;
    }
    EXPECT_EQ(n[ActivityType::kKernel], table_count(path, "CUPTI_ACTIVITY_KIND_KERNEL")) << file;
    EXPECT_EQ(memcpy, table_count(path, "CUPTI_ACTIVITY_KIND_MEMCPY")) << file;
    EXPECT_EQ(n[ActivityType::kMemset], table_count(path, "CUPTI_ACTIVITY_KIND_MEMSET")) << file;
    EXPECT_EQ(n[ActivityType::kSync], table_count(path, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) << file;
    EXPECT_EQ(n[ActivityType::kRuntimeCall], table_count(path, "CUPTI_ACTIVITY_KIND_RUNTIME")) << file;
    EXPECT_EQ(n[ActivityType::kDriverCall], table_count(path, "CUPTI_ACTIVITY_KIND_DRIVER")) << file;
    const int64_t nvtx = sql_int(path, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (34, 59, 60)");
    EXPECT_EQ(annotations, std::max<int64_t>(nvtx, 0)) << file;
    // Memcpy by direction: HtoD (copyKind 1), DtoH (2), DtoD (8).
    EXPECT_EQ(n[ActivityType::kMemcpyHtoD],
              std::max<int64_t>(
                  0, sql_int(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=1")))
        << file;
    EXPECT_EQ(n[ActivityType::kMemcpyDtoH],
              std::max<int64_t>(
                  0, sql_int(path, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE copyKind=2")))
        << file;
    // Every kernel, memcpy and memset is linked to the runtime call that launched it.
    uint64_t device = 0, linked = 0;
    const trace::SpanTree& tree = t.tree();
    for (size_t i = 0; i < t.spans.size(); ++i) {
      const SpanRecord& s = t.spans[i];
      const ActivityType a = s.activity_type();
      if (a != ActivityType::kKernel && a != ActivityType::kMemset && !is_memcpy(a)) continue;
      ++device;
      const int32_t p = tree.parent(i);
      if (s.correlation_id != 0 && p != trace::kNoParent &&
          (t.spans[p].activity_type() == ActivityType::kRuntimeCall ||
           t.spans[p].activity_type() == ActivityType::kDriverCall) &&
          t.spans[p].correlation_id == s.correlation_id)
        ++linked;
    }
    EXPECT_EQ(linked, device) << file;
  }
}

TEST(NsysSqlite, TopKernelsByTotalTimeEqualSqlGroupBy) {
  for (const char* file : kFiles) {
    const std::string path = data_path(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(open(path, &t, &error)) << error;
    std::map<std::string, int64_t> totals;
    for (const SpanRecord& s : t.spans)
      if (s.activity_type() == ActivityType::kKernel) totals[std::string(t.name(s))] += s.end_ns - s.start_ns;
    std::vector<std::pair<std::string, int64_t>> ours(totals.begin(), totals.end());
    std::sort(ours.begin(), ours.end(), [](const auto& a, const auto& b) {
      return a.second != b.second ? a.second > b.second : a.first < b.first;
    });
    ours.resize(std::min<size_t>(ours.size(), 5));
    const auto expected = sql_top_kernels(path);
    ASSERT_FALSE(expected.empty()) << file;
    EXPECT_EQ(ours, expected) << file;
  }
}

// Each runtime call inside an NVTX range of its thread has that range among its ancestors.
TEST(NsysSqlite, NvtxRangesContainTheirLaunches) {
  for (const char* file : {kFiles[0], kFiles[2]}) {
    const std::string path = data_path(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(open(path, &t, &error)) << error;
    std::vector<const SpanRecord*> ranges;
    for (const SpanRecord& s : t.spans) {
      if (s.activity_type() == ActivityType::kAnnotation && s.end_ns > s.start_ns) ranges.push_back(&s);
    }
    ASSERT_FALSE(ranges.empty()) << file;
    uint64_t inside = 0, nested = 0;
    const trace::SpanTree& tree = t.tree();
    for (size_t i = 0; i < t.spans.size(); ++i) {
      const SpanRecord& s = t.spans[i];
      if (s.activity_type() != ActivityType::kRuntimeCall && s.activity_type() != ActivityType::kDriverCall)
        continue;
      const bool in_range = std::any_of(ranges.begin(), ranges.end(), [&](const SpanRecord* r) {
        return r->process == s.process && r->tid == s.tid && r->start_ns <= s.start_ns &&
               s.end_ns <= r->end_ns;
      });
      if (!in_range) continue;
      ++inside;
      for (int32_t p = tree.parent(i); p != trace::kNoParent; p = tree.parent(static_cast<size_t>(p)))
        if (t.spans[p].activity_type() == ActivityType::kAnnotation) {
          ++nested;
          break;
        }
    }
    EXPECT_GT(inside, 0u) << file;
    EXPECT_EQ(nested, inside) << file;
  }
}

// NVTX ranges in a named domain (here MPI's, nvtxDomainCreate recorded as an event of type 75) carry
// the domain's name; the count per domain equals SQL's count of the ranges with that domainId.
TEST(NsysSqlite, NvtxRangesCarryTheirDomainName) {
  const std::string path = data_path(kFiles[0]);
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
  const int64_t expected =
      sql_int(path,
              "SELECT COUNT(*) FROM NVTX_EVENTS r JOIN NVTX_EVENTS d ON d.eventType = 75 "
              "AND d.domainId = r.domainId AND d.text = 'MPI' WHERE r.eventType IN (59, 60)");
  ASSERT_GT(expected, 0);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path, &t, &error)) << error;
  int64_t named = 0, other = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (const auto a = t.find_attr(i, "nvtx domain name"))
      (t.attr_value_string(*a) == "MPI" ? named : other)++;
  }
  EXPECT_EQ(named, expected);
  EXPECT_EQ(other, 0);
}

// A copy of the small export, changed by SQL, read back.
class MalformedNsys : public ::testing::Test {
 protected:
  void SetUp() override {
    src_ = data_path(kFiles[0]);
    if (!std::filesystem::exists(src_)) GTEST_SKIP() << "missing " << src_;
    path_ = (std::filesystem::temp_directory_path() /
             ("strata_nsys_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite"))
                .string();
    std::filesystem::copy_file(src_, path_, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
  }
  std::string src_, path_;
};

TEST_F(MalformedNsys, DroppedStringTableIsOneLineNamingFileAndTable) {
  exec("DROP TABLE StringIds");
  trace::Trace t;
  std::string error;
  EXPECT_FALSE(open(path_, &t, &error));
  EXPECT_NE(error.find(path_), std::string::npos) << error;
  EXPECT_NE(error.find("StringIds"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST_F(MalformedNsys, MissingColumnIsOneLineNamingTableAndColumn) {
  exec("ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME COLUMN start TO begin_ts");
  trace::Trace t;
  std::string error;
  EXPECT_FALSE(open(path_, &t, &error));
  EXPECT_NE(error.find("CUPTI_ACTIVITY_KIND_KERNEL"), std::string::npos) << error;
  EXPECT_NE(error.find("start"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST_F(MalformedNsys, NullAndWrongTypedTimesAreDroppedAndCounted) {
  // CREATE TABLE AS drops the NOT NULL constraints, so rows can then hold NULL and text.
  exec(
      "CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; "
      "ALTER TABLE k2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL; "
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = NULL WHERE rowid = 1; "
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET end = 'soon' WHERE rowid = 2; "
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET correlationId = 9223372036854775807 WHERE rowid = 3;");
  trace::Trace t;
  std::string error;
  import::register_readers();
  trace::TraceBuilder builder(&t);
  import::ImportStats stats;
  ASSERT_TRUE(import::import_nsys_sqlite(path_, builder, &error, &stats)) << error;
  builder.finish({.structure = true, .tree = {}});
  int64_t kernels = 0;
  for (const SpanRecord& s : t.spans) kernels += s.activity_type() == ActivityType::kKernel;
  EXPECT_EQ(kernels, table_count(src_, "CUPTI_ACTIVITY_KIND_KERNEL") - 2);
  EXPECT_EQ(import::dropped_events(stats), 2u);
}

TEST_F(MalformedNsys, AnEndAtTheInt64LimitIsDroppedNotOverflowed) {
  // end - start overflowed (found by fuzz_import_nsys_sql): "--9223372036854775" made the whole
  // translation invalid JSON. The row is dropped and counted like any unusable time.
  exec(
      "CREATE TABLE k2 AS SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; "
      "ALTER TABLE k2 RENAME TO CUPTI_ACTIVITY_KIND_KERNEL; "
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET start = 0, end = -9223372036854775808 WHERE rowid = 1;");
  trace::Trace t;
  std::string error;
  trace::TraceBuilder builder(&t);
  import::ImportStats stats;
  ASSERT_TRUE(import::import_nsys_sqlite(path_, builder, &error, &stats)) << error;
  EXPECT_EQ(import::dropped_events(stats), 1u);
}

TEST_F(MalformedNsys, NamesThatAreNotUtf8AreRepairedNotFatal) {
  // A kernel name with a stray byte made the whole translation invalid JSON ("offset 0: not valid
  // JSON"): the bytes become U+FFFD and the file imports.
  exec(
      "UPDATE StringIds SET value = CAST(X'6B65726E656CFF9B' AS TEXT) WHERE id = "
      "(SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL LIMIT 1)");
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(open(path_, &t, &error)) << error;
  bool repaired = false;
  for (const SpanRecord& s : t.spans) repaired |= t.name(s) == "kernel\xEF\xBF\xBD\xEF\xBF\xBD";
  EXPECT_TRUE(repaired);
}

TEST_F(MalformedNsys, NotAnNsysDatabaseIsOneLine) {
  exec(
      "DROP TABLE CUPTI_ACTIVITY_KIND_KERNEL; DROP TABLE CUPTI_ACTIVITY_KIND_MEMCPY; "
      "DROP TABLE CUPTI_ACTIVITY_KIND_RUNTIME; DROP TABLE NVTX_EVENTS; DROP TABLE IF EXISTS OSRT_API; "
      "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_MEMSET; DROP TABLE IF EXISTS "
      "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;"
      "DROP TABLE IF EXISTS CUPTI_ACTIVITY_KIND_DRIVER;");
  trace::Trace t;
  std::string error;
  EXPECT_FALSE(open(path_, &t, &error));
  EXPECT_NE(error.find("no activity table"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

}  // namespace
}  // namespace strata
