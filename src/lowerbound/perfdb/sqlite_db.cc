// SQLite backend of the performance database.
#include <sqlite3.h>

#include <set>

#include "lowerbound/perfdb/perf_db.h"
#include "lowerbound/perfdb/schema.h"

namespace strata::lowerbound {
namespace {

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
    // Creation and migration in one write transaction: concurrent first opens take turns.
    if (sqlite3_exec(db_, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) != SQLITE_OK)
      return fail("cannot create the schema (is it an SQLite database?)", error);
    if (sqlite3_exec(db_, schema::kCreate, nullptr, nullptr, nullptr) != SQLITE_OK) {
      fail("cannot create the schema (is it an SQLite database?)", error);
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return false;
    }
    if (!migrate(error)) {
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
      return false;
    }
    if (!exec("COMMIT", error)) return false;
    std::string sql =
        std::string("INSERT OR REPLACE INTO strata_benchmarks (") + schema::kColumns + ") VALUES (";
    for (int i = 1; i <= schema::kColumnCount; ++i) sql += (i > 1 ? ", ?" : "?") + std::to_string(i);
    sql += ")";
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &put_, nullptr) != SQLITE_OK)
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
    sqlite3_bind_int(put_, 14, r.threads);
    sqlite3_bind_text(put_, 15, r.timer.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(put_, 16, r.disturbed);
    sqlite3_bind_double(put_, 17, r.relative_spread);
    sqlite3_bind_double(put_, 18, r.load_avg);
    sqlite3_bind_int(put_, 19, r.attempts);
    sqlite3_bind_text(put_, 20, r.quality.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(put_) != SQLITE_DONE) return fail("insert failed", error);
    return true;
  }

  bool load(const std::string& system, const std::string& backend, std::vector<BenchRecord>* out,
            std::string* error) override {
    std::string sql = std::string("SELECT ") + schema::kColumns +
                      " FROM strata_benchmarks WHERE system = ?1 AND backend = ?2";
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &q, nullptr) != SQLITE_OK)
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
      r.threads = sqlite3_column_int(q, 13);
      r.timer = text(14);
      r.disturbed = sqlite3_column_int(q, 15);
      r.relative_spread = sqlite3_column_double(q, 16);
      r.load_avg = sqlite3_column_double(q, 17);
      r.attempts = sqlite3_column_int(q, 18);
      r.quality = text(19);
      out->push_back(std::move(r));
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) return fail("query failed", error);
    return true;
  }

  bool erase(const std::string& system, const std::string& backend, std::string* error) override {
    return run("DELETE FROM strata_benchmarks WHERE system = ?1 AND backend = ?2", {system, backend}, error);
  }

  bool erase_item(const BenchRecord& k, std::string* error) override {
    return run(
        "DELETE FROM strata_benchmarks WHERE system = ?1 AND backend = ?2 AND dtype = ?3 AND layout = ?4 AND "
        "signature = ?5",
        {k.system, k.backend, k.dtype, k.layout, k.signature}, error);
  }

  bool systems(const std::string& backend, std::vector<std::string>* out, std::string* error) override {
    return column("SELECT DISTINCT system FROM strata_benchmarks WHERE backend = ?1 ORDER BY system",
                  {backend}, out, error);
  }

  bool begin(std::string* error) override { return exec("BEGIN", error); }
  bool commit(std::string* error) override { return exec("COMMIT", error); }
  std::string describe() const override { return "sqlite:" + path_; }

 private:
  // Quality columns added to tables created before them; system keys of old thread defaults renamed.
  bool migrate(std::string* error) {
    std::vector<std::string> have;
    if (!column("SELECT name FROM pragma_table_info('strata_benchmarks')", {}, &have, error)) return false;
    std::set<std::string> present(have.begin(), have.end());
    for (const schema::Column& c : schema::kQualityColumns)
      if (!present.count(c.name) &&
          !exec(("ALTER TABLE strata_benchmarks ADD COLUMN " + std::string(c.name) + " " + c.definition)
                    .c_str(),
                error))
        return false;
    std::vector<std::string> old_keys;
    if (!column("SELECT DISTINCT system FROM strata_benchmarks WHERE system LIKE '%|omp_threads=default%'",
                {}, &old_keys, error))
      return false;
    const std::string update = schema::with_placeholders(schema::kMigrateKey, '?');
    for (const std::string& key : old_keys) {
      std::string migrated = schema::migrated_system_key(key);
      if (migrated != key && !run(update.c_str(), {key, migrated}, error)) return false;
    }
    return true;
  }
  // One statement with text parameters ?1, ?2, ...
  bool run(const char* sql, const std::vector<std::string>& params, std::string* error) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK)
      return fail("cannot prepare statement", error);
    for (size_t i = 0; i < params.size(); ++i)
      sqlite3_bind_text(q, static_cast<int>(i) + 1, params[i].c_str(), -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(q);
    sqlite3_finalize(q);
    return rc == SQLITE_DONE || fail("statement failed", error);
  }
  // The first column of every row of a query.
  bool column(const char* sql, const std::vector<std::string>& params, std::vector<std::string>* out,
              std::string* error) {
    sqlite3_stmt* q = nullptr;
    if (sqlite3_prepare_v2(db_, sql, -1, &q, nullptr) != SQLITE_OK)
      return fail("cannot prepare query", error);
    for (size_t i = 0; i < params.size(); ++i)
      sqlite3_bind_text(q, static_cast<int>(i) + 1, params[i].c_str(), -1, SQLITE_TRANSIENT);
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      const unsigned char* t = sqlite3_column_text(q, 0);
      out->push_back(t ? reinterpret_cast<const char*>(t) : "");
    }
    sqlite3_finalize(q);
    return rc == SQLITE_DONE || fail("query failed", error);
  }
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
