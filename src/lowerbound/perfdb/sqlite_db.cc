// SQLite backend of the performance database.
#include <sqlite3.h>

#include "lowerbound/perfdb/perf_db.h"

namespace strata::lowerbound {
namespace {

constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS strata_benchmarks ("
    " system TEXT NOT NULL, backend TEXT NOT NULL, dtype TEXT NOT NULL, layout TEXT NOT NULL,"
    " signature TEXT NOT NULL, algorithm TEXT NOT NULL, library_call TEXT NOT NULL, implementation TEXT NOT "
    "NULL,"
    " median_ns DOUBLE PRECISION NOT NULL, spread_ns DOUBLE PRECISION NOT NULL, repetitions INTEGER NOT NULL,"
    " iterations INTEGER NOT NULL, measured_at TEXT NOT NULL,"
    " PRIMARY KEY (system, backend, dtype, layout, signature, algorithm))";

class SqlitePerfDb final : public PerfDb {
 public:
  explicit SqlitePerfDb(std::string path) : path_(std::move(path)) {}
  ~SqlitePerfDb() override {
    if (put_) sqlite3_finalize(put_);
    if (db_) sqlite3_close(db_);
  }

  bool open(std::string* error) {
    if (sqlite3_open(path_.c_str(), &db_) != SQLITE_OK) return fail("cannot open", error);
    sqlite3_busy_timeout(db_, 10000);
    if (sqlite3_exec(db_, kSchema, nullptr, nullptr, nullptr) != SQLITE_OK)
      return fail("cannot create the schema (is it an SQLite database?)", error);
    const char* sql =
        "INSERT OR REPLACE INTO strata_benchmarks VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
        "?13)";
    if (sqlite3_prepare_v2(db_, sql, -1, &put_, nullptr) != SQLITE_OK)
      return fail("cannot prepare insert", error);
    return true;
  }

  bool put(const BenchRecord& r, std::string* error) override {
    sqlite3_reset(put_);
    const std::string* texts[] = {&r.system,    &r.backend,   &r.dtype,        &r.layout,
                                  &r.signature, &r.algorithm, &r.library_call, &r.implementation};
    for (int i = 0; i < 8; ++i) sqlite3_bind_text(put_, i + 1, texts[i]->c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_double(put_, 9, r.median_ns);
    sqlite3_bind_double(put_, 10, r.spread_ns);
    sqlite3_bind_int(put_, 11, r.repetitions);
    sqlite3_bind_int(put_, 12, r.iterations);
    sqlite3_bind_text(put_, 13, r.measured_at.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(put_) != SQLITE_DONE) return fail("insert failed", error);
    return true;
  }

  bool load(const std::string& system, const std::string& backend, std::vector<BenchRecord>* out,
            std::string* error) override {
    sqlite3_stmt* q = nullptr;
    const char* sql =
        "SELECT system, backend, dtype, layout, signature, algorithm, library_call, implementation, "
        "median_ns,"
        " spread_ns, repetitions, iterations, measured_at FROM strata_benchmarks WHERE system = ?1 AND "
        "backend = ?2";
    if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK)
      return fail("cannot prepare query", error);
    sqlite3_bind_text(q, 1, system.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, backend.c_str(), -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      auto text = [&](int col) {
        const unsigned char* t = sqlite3_column_text(q, col);
        return t ? std::string(reinterpret_cast<const char*>(t)) : std::string();
      };
      BenchRecord r{text(0),
                    text(1),
                    text(2),
                    text(3),
                    text(4),
                    text(5),
                    text(6),
                    text(7),
                    sqlite3_column_double(q, 8),
                    sqlite3_column_double(q, 9),
                    sqlite3_column_int(q, 10),
                    sqlite3_column_int(q, 11),
                    text(12)};
      out->push_back(std::move(r));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return fail("query failed", error);
    return true;
  }

  bool erase(const std::string& system, const std::string& backend, std::string* error) override {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, "DELETE FROM strata_benchmarks WHERE system = ?1 AND backend = ?2", -1, &q,
                           nullptr) != SQLITE_OK)
      return fail("cannot prepare delete", error);
    sqlite3_bind_text(q, 1, system.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 2, backend.c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE || fail("delete failed", error);
  }

  bool begin(std::string* error) override { return exec("BEGIN", error); }
  bool commit(std::string* error) override { return exec("COMMIT", error); }
  std::string describe() const override { return "sqlite:" + path_; }

 private:
  bool exec(const char* sql, std::string* error) {
    return sqlite3_exec(db_, sql, nullptr, nullptr, nullptr) == SQLITE_OK || fail(sql, error);
  }
  bool fail(const std::string& what, std::string* error) {
    *error = path_ + ": SQLite: " + what + ": " + (db_ ? sqlite3_errmsg(db_) : "out of memory");
    return false;
  }
  std::string path_;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* put_ = nullptr;
};

}  // namespace

std::unique_ptr<PerfDb> open_sqlite_db(const std::string& path, std::string* error) {
  auto db = std::make_unique<SqlitePerfDb>(path);
  if (!db->open(error)) return nullptr;
  return db;
}

}  // namespace strata::lowerbound
