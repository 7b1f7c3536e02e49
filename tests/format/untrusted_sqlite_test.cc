// Opening SQLite files from elsewhere (format/untrusted_sqlite.h, issue 32): what the schema may hold,
// the step budget, the heap cap, and the read-only queries of `strata sql`.
#include "format/untrusted_sqlite.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "../test_util.h"

namespace strata {
namespace {

using testing::TempDir;

// Writes a database at `path` made by `sql` (with SQLite's ordinary, trusting settings: the file is
// the attacker's).
void make_database(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* message = nullptr;
  EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK) << (message ? message : "");
  sqlite3_free(message);
  sqlite3_close(db);
}

// The first column of the first row of `sql`, or "error: <message>".
std::string query(sqlite3* db, const std::string& sql, const format::UntrustedSqlite* file = nullptr) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK)
    return "error: " + std::string(sqlite3_errmsg(db));
  std::string out;
  const int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW) {
    const unsigned char* text = sqlite3_column_text(stmt, 0);
    out = text ? reinterpret_cast<const char*>(text) : "NULL";
  } else if (rc != SQLITE_DONE) {
    out = "error: " + (file ? file->message() : std::string(sqlite3_errmsg(db)));
  }
  sqlite3_finalize(stmt);
  return out;
}

// The 4 KB file: the "table" the reader reads is a recursive view that never ends.
constexpr const char* kRecursiveView =
    "CREATE VIEW StringIds AS SELECT 1 id,'k' value; CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH "
    "RECURSIVE "
    "n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT x start, x+1 end FROM n;";

TEST(UntrustedSqlite, AViewIsRefusedBeforeAnythingRuns) {
  TempDir dir;
  const std::string path = dir.file("v.sqlite");
  make_database(path, kRecursiveView);
  format::UntrustedSqliteOptions options;
  options.expected = "an Nsight Systems export";
  format::UntrustedSqlite db;
  std::string error;
  EXPECT_FALSE(db.open(path, options, &error));
  EXPECT_NE(error.find(path + ": holds a view ('"), std::string::npos) << error;
  EXPECT_NE(error.find("which an Nsight Systems export does not have"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(UntrustedSqlite, TriggersVirtualTablesAndColumnsComputedWhenReadAreRefused) {
  TempDir dir;
  const struct {
    const char* sql;
    const char* refusal;
  } cases[] = {
      {"CREATE TABLE t(x); CREATE TRIGGER g AFTER INSERT ON t BEGIN SELECT 1; END;", "holds a trigger ('g')"},
      {"CREATE VIRTUAL TABLE NVTX_EVENTS USING fts4(start, text);", "holds a virtual table ('NVTX_EVENTS')"},
      {"CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT AS (printf('%.*c', 1000000, 'x')) VIRTUAL);"
       "INSERT INTO StringIds(id) VALUES (1);",
       "table 'StringIds' has a column computed when it is read ('value')"},
  };
  int n = 0;
  for (const auto& c : cases) {
    const std::string path = dir.file("f" + std::to_string(n++) + ".sqlite");
    make_database(path, c.sql);
    format::UntrustedSqlite db;
    std::string error;
    EXPECT_FALSE(db.open(path, {}, &error)) << c.sql;
    EXPECT_NE(error.find(c.refusal), std::string::npos) << error;
  }
}

TEST(UntrustedSqlite, OnlyTheViewsTheCallerNamesAreAccepted) {
  TempDir dir;
  const std::string view = "CREATE VIEW spans AS SELECT x AS name FROM span_table";
  const std::string path = dir.file("export.db");
  make_database(path, "CREATE TABLE span_table(x); INSERT INTO span_table VALUES ('a'); " + view + ";");
  format::UntrustedSqliteOptions options;
  options.known_views = {view};
  format::UntrustedSqlite db;
  std::string error;
  ASSERT_TRUE(db.open(path, options, &error)) << error;
  EXPECT_EQ(query(db.handle(), "SELECT name FROM spans"), "a");

  const std::string other = dir.file("other.db");  // the same name, another text
  make_database(
      other,
      "CREATE TABLE span_table(x); CREATE VIEW spans AS SELECT x AS name FROM span_table, span_table;");
  format::UntrustedSqlite refused;
  EXPECT_FALSE(refused.open(other, options, &error));
  EXPECT_NE(error.find("holds a view ('spans')"), std::string::npos) << error;
}

TEST(UntrustedSqlite, NothingIsWrittenAndTheFileIsReadImmutable) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  make_database(path, "CREATE TABLE t(x); INSERT INTO t VALUES (1);");
  const auto before = std::filesystem::last_write_time(path);
  format::UntrustedSqlite db;
  std::string error;
  ASSERT_TRUE(db.open(path, {}, &error)) << error;
  EXPECT_NE(
      query(db.handle(), "INSERT INTO t VALUES (2)").find("error: attempt to write a readonly database"),
      std::string::npos);
  EXPECT_NE(query(db.handle(), "ATTACH '" + dir.file("a.db") + "' AS a").find("error: too many attached"),
            std::string::npos);
  EXPECT_EQ(query(db.handle(), "SELECT count(*) FROM t"), "1");
  EXPECT_EQ(std::filesystem::last_write_time(path), before);
  for (const char* beside : {"a.db", "t.db-journal", "t.db-wal", "t.db-shm"})
    EXPECT_FALSE(std::filesystem::exists(dir.file(beside))) << beside;
}

TEST(UntrustedSqlite, ARecursiveQueryStopsAtTheStepBudgetThatGrowsWithTheFile) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  make_database(path, "CREATE TABLE t(x);");
  format::UntrustedSqliteOptions options;
  options.min_steps = 1'000'000;
  options.steps_per_byte = 10;
  format::UntrustedSqlite db;
  std::string error;
  ASSERT_TRUE(db.open(path, options, &error)) << error;
  EXPECT_EQ(db.step_budget(), 1'000'000 + 10 * std::filesystem::file_size(path));
  const std::string r =
      query(db.handle(),
            "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n) SELECT count(*) FROM n", &db);
  EXPECT_TRUE(db.out_of_budget());
  EXPECT_NE(r.find("stopped after " + std::to_string(db.step_budget()) + " SQLite steps"), std::string::npos)
      << r;
  EXPECT_NE(r.find("STRATA_MAX_SQLITE_STEPS=N"), std::string::npos) << r;
  EXPECT_LE(db.steps_used(), db.step_budget() + 1000);
}

TEST(UntrustedSqlite, TheEnvironmentReplacesTheStepBudget) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  make_database(path, "CREATE TABLE t(x);");
  ::setenv(format::kSqliteStepsEnv, "5000", 1);
  format::UntrustedSqlite db;
  std::string error;
  const bool opened = db.open(path, {}, &error);
  ::unsetenv(format::kSqliteStepsEnv);
  ASSERT_TRUE(opened) << error;
  EXPECT_EQ(db.step_budget(), 5000u);
}

TEST(UntrustedSqlite, SqlitesHeapIsCappedWhileTheFileIsOpenAndGivenBackAfter) {
  TempDir dir;
  const std::string path = dir.file("t.db");
  make_database(path, "CREATE TABLE t(x);");
  const sqlite3_int64 before = sqlite3_hard_heap_limit64(-1);
  {
    format::UntrustedSqliteOptions options;
    options.max_heap_bytes = 8 << 20;
    format::UntrustedSqlite db;
    std::string error;
    ASSERT_TRUE(db.open(path, options, &error)) << error;
    EXPECT_EQ(sqlite3_hard_heap_limit64(-1), 8 << 20);
    // 20 MB of text in one value: past the heap cap (8 MiB), not the length limit (16 MiB).
    const std::string r = query(db.handle(),
                                "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 20000) "
                                "SELECT length(group_concat(hex(randomblob(500)))) FROM n");
    EXPECT_EQ(r, "error: out of memory");
  }
  EXPECT_EQ(sqlite3_hard_heap_limit64(-1), before);
}

// Each statement through ReadOnlyQueries: "" when it ran, else the error line.
std::string run_read_only(sqlite3* db, const std::string& sql) {
  format::ReadOnlyQueries queries(db);
  sqlite3_stmt* stmt = nullptr;
  std::string error;
  if (!queries.prepare(sql.c_str(), static_cast<int>(sql.size()), &stmt, nullptr, &error)) return error;
  while (sqlite3_step(stmt) == SQLITE_ROW) {
  }
  sqlite3_finalize(stmt);
  return "";
}

TEST(ReadOnlyQueries, OnlyReadsRunOnAnInMemoryDatabase) {
  TempDir dir;
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(":memory:", &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE spans(name); INSERT INTO spans VALUES ('a');", nullptr, nullptr,
                         nullptr),
            SQLITE_OK);
  for (const char* read :
       {"SELECT name FROM spans", "SELECT * FROM pragma_table_info('spans')", "PRAGMA table_info(spans)",
        "SELECT value FROM json_each('[1,2]')",
        "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM n LIMIT 3) "
        "SELECT sum(x) FROM n",
        "SELECT upper(name), row_number() OVER (ORDER BY name) FROM spans", "PRAGMA page_count"})
    EXPECT_EQ(run_read_only(db, read), "") << read;
  const struct {
    std::string sql, refusal;
  } refused[] = {
      {"ATTACH '" + dir.file("x.db") + "' AS x", "ATTACH (also VACUUM"},
      {"VACUUM INTO '" + dir.file("v.db") + "'", "a statement that writes"},
      {"VACUUM", "a statement that writes"},
      {"CREATE TABLE t(x)", "a statement that changes the database"},
      {"CREATE TEMP VIEW v AS SELECT 1", "a statement that changes the database"},
      {"INSERT INTO spans VALUES ('b')", "a write to spans"},
      {"DELETE FROM spans", "a write to spans"},
      {"DROP TABLE spans", "a statement that changes the database"},
      {"BEGIN", "a transaction"},
      {"PRAGMA query_only = 0", "PRAGMA query_only = 0"},
      {"PRAGMA writable_schema = 1", "PRAGMA writable_schema = 1"},
      {"SELECT hex(fts3_tokenizer('simple'))", "the function fts3_tokenizer()"},
      {"SELECT load_extension('/tmp/x.so')", "the function load_extension()"},
  };
  for (const auto& r : refused) {
    const std::string error = run_read_only(db, r.sql);
    EXPECT_NE(error.find(r.refusal), std::string::npos) << r.sql << ": " << error;
    EXPECT_NE(error.find("queries here only read"), std::string::npos) << r.sql << ": " << error;
  }
  for (const char* file : {"x.db", "v.db"}) EXPECT_FALSE(std::filesystem::exists(dir.file(file))) << file;
  EXPECT_EQ(run_read_only(db, "SELECT count(*) FROM spans"), "");
  sqlite3_close(db);
}

}  // namespace
}  // namespace strata
