// PostgreSQL backend of the performance database (libpq), for a database a team shares.
#include <libpq-fe.h>

#include <cstdlib>
#include <set>

#include "lowerbound/perfdb/db_url.h"
#include "lowerbound/perfdb/perf_db.h"
#include "lowerbound/perfdb/schema.h"

namespace strata::lowerbound {
namespace {

// Serialises schema creation across connections; the key is any fixed 64-bit number ("StrataLB" in
// ASCII).
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(6013557165336382530)";

class PostgresPerfDb final : public PerfDb {
 public:
  explicit PostgresPerfDb(std::string url) : url_(std::move(url)) {}
  ~PostgresPerfDb() override {
    if (conn_) PQfinish(conn_);
  }

  bool open(std::string* error) {
    conn_ = PQconnectdb(url_.c_str());
    if (PQstatus(conn_) != CONNECTION_OK) return fail("cannot connect", error);
    // "relation already exists, skipping" and other notices are not for the user's terminal.
    PQsetNoticeProcessor(
        conn_, [](void*, const char*) {}, nullptr);
    // Concurrent first uses of a database (ctest -j2 against one server, a team's machines) race in
    // CREATE TABLE IF NOT EXISTS: both see no table, and the loser fails on a unique violation in
    // pg_type. A transaction-scoped advisory lock serialises schema creation; it is released at
    // COMMIT or ROLLBACK.
    if (!exec("BEGIN", error)) return false;
    PGresult* res = PQexec(conn_, kSchemaLock);
    bool locked = PQresultStatus(res) == PGRES_TUPLES_OK;
    PQclear(res);
    if (!locked) {
      fail("cannot take the schema lock (pg_advisory_xact_lock)", error);
      rollback();
      return false;
    }
    if (!exec(schema::kCreate, error) || !migrate(error)) {
      rollback();
      return false;
    }
    return exec("COMMIT", error);
  }

  bool put(const BenchRecord& r, std::string* error) override {
    const std::string numbers[] = {
        std::to_string(r.median_ns),       std::to_string(r.spread_ns), std::to_string(r.repetitions),
        std::to_string(r.iterations),      std::to_string(r.threads),   std::to_string(r.disturbed),
        std::to_string(r.relative_spread), std::to_string(r.load_avg),  std::to_string(r.attempts)};
    const char* values[schema::kColumnCount] = {
        r.system.c_str(),      r.backend.c_str(),   r.dtype.c_str(),        r.layout.c_str(),
        r.signature.c_str(),   r.algorithm.c_str(), r.library_call.c_str(), r.implementation.c_str(),
        numbers[0].c_str(),    numbers[1].c_str(),  numbers[2].c_str(),     numbers[3].c_str(),
        r.measured_at.c_str(), numbers[4].c_str(),  r.timer.c_str(),        numbers[5].c_str(),
        numbers[6].c_str(),    numbers[7].c_str(),  numbers[8].c_str(),     r.quality.c_str()};
    std::string sql = std::string("INSERT INTO strata_benchmarks (") + schema::kColumns + ") VALUES (";
    for (int i = 1; i <= schema::kColumnCount; ++i) sql += (i > 1 ? ", $" : "$") + std::to_string(i);
    sql +=
        ") ON CONFLICT (system, backend, dtype, layout, signature, algorithm) DO UPDATE SET"
        " library_call = EXCLUDED.library_call, implementation = EXCLUDED.implementation,"
        " median_ns = EXCLUDED.median_ns, spread_ns = EXCLUDED.spread_ns, repetitions = EXCLUDED.repetitions,"
        " iterations = EXCLUDED.iterations, measured_at = EXCLUDED.measured_at, threads = EXCLUDED.threads,"
        " timer = EXCLUDED.timer, disturbed_repetitions = EXCLUDED.disturbed_repetitions,"
        " relative_spread = EXCLUDED.relative_spread, load_avg = EXCLUDED.load_avg, attempts = "
        "EXCLUDED.attempts,"
        " quality = EXCLUDED.quality";
    PGresult* res =
        PQexecParams(conn_, sql.c_str(), schema::kColumnCount, nullptr, values, nullptr, nullptr, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok || fail("insert failed", error);
  }

  bool load(const std::string& system, const std::string& backend, std::vector<BenchRecord>* out,
            std::string* error) override {
    const char* values[2] = {system.c_str(), backend.c_str()};
    std::string sql = std::string("SELECT ") + schema::kColumns +
                      " FROM strata_benchmarks WHERE system = $1 AND backend = $2";
    PGresult* res = PQexecParams(conn_, sql.c_str(), 2, nullptr, values, nullptr, nullptr, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
      PQclear(res);
      return fail("query failed", error);
    }
    for (int row = 0; row < PQntuples(res); ++row) {
      auto text = [&](int col) { return std::string(PQgetvalue(res, row, col)); };
      auto real = [&](int col) { return std::strtod(PQgetvalue(res, row, col), nullptr); };
      auto integer = [&](int col) { return std::atoi(PQgetvalue(res, row, col)); };
      BenchRecord r{text(0), text(1), text(2), text(3),     text(4),     text(5), text(6),
                    text(7), real(8), real(9), integer(10), integer(11), text(12)};
      r.threads = integer(13);
      r.timer = text(14);
      r.disturbed = integer(15);
      r.relative_spread = real(16);
      r.load_avg = real(17);
      r.attempts = integer(18);
      r.quality = text(19);
      out->push_back(std::move(r));
    }
    PQclear(res);
    return true;
  }

  bool erase(const std::string& system, const std::string& backend, std::string* error) override {
    return run("DELETE FROM strata_benchmarks WHERE system = $1 AND backend = $2", {system, backend}, error);
  }

  bool erase_item(const BenchRecord& k, std::string* error) override {
    return run(
        "DELETE FROM strata_benchmarks WHERE system = $1 AND backend = $2 AND dtype = $3 AND layout = $4 AND "
        "signature = $5",
        {k.system, k.backend, k.dtype, k.layout, k.signature}, error);
  }

  bool systems(const std::string& backend, std::vector<std::string>* out, std::string* error) override {
    return column("SELECT DISTINCT system FROM strata_benchmarks WHERE backend = $1 ORDER BY system",
                  {backend}, out, error);
  }

  bool begin(std::string* error) override { return exec("BEGIN", error); }
  bool commit(std::string* error) override { return exec("COMMIT", error); }
  std::string describe() const override { return redact_db_url(url_); }

 private:
  // Quality columns added to tables created before them; system keys of old thread defaults renamed.
  // Runs inside open()'s transaction, under the schema lock.
  bool migrate(std::string* error) {
    std::vector<std::string> have;
    // pg_attribute, not information_schema: the latter hides columns from users without privileges on
    // the table (a team's shared database opened by another user than its owner).
    if (!column(
            "SELECT attname FROM pg_attribute WHERE attrelid = 'strata_benchmarks'::regclass AND attnum > 0 "
            "AND NOT attisdropped",
            {}, &have, error))
      return false;
    std::set<std::string> present(have.begin(), have.end());
    for (const schema::Column& c : schema::kQualityColumns)
      if (!present.count(c.name) &&
          !exec(("ALTER TABLE strata_benchmarks ADD COLUMN " + std::string(c.name) + " " + c.definition)
                    .c_str(),
                error)) {
        *error += " (the table predates the quality columns: its owner must open it once with this version)";
        return false;
      }
    std::vector<std::string> old_keys;
    if (!column("SELECT DISTINCT system FROM strata_benchmarks WHERE system LIKE '%|omp_threads=default%'",
                {}, &old_keys, error))
      return false;
    const std::string update = schema::with_placeholders(schema::kMigrateKey, '$');
    for (const std::string& key : old_keys) {
      std::string migrated = schema::migrated_system_key(key);
      if (migrated != key && !run(update.c_str(), {key, migrated}, error)) return false;
    }
    return true;
  }
  // One statement with text parameters $1, $2, ...
  bool run(const char* sql, const std::vector<std::string>& params, std::string* error) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    PGresult* res = PQexecParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                 nullptr, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok || fail("statement failed", error);
  }
  // The first column of every row of a query.
  bool column(const char* sql, const std::vector<std::string>& params, std::vector<std::string>* out,
              std::string* error) {
    std::vector<const char*> values;
    for (const std::string& p : params) values.push_back(p.c_str());
    PGresult* res = PQexecParams(conn_, sql, static_cast<int>(values.size()), nullptr, values.data(), nullptr,
                                 nullptr, 0);
    bool ok = PQresultStatus(res) == PGRES_TUPLES_OK;
    for (int row = 0; ok && row < PQntuples(res); ++row) out->push_back(PQgetvalue(res, row, 0));
    PQclear(res);
    return ok || fail("query failed", error);
  }
  void rollback() {
    PGresult* res = PQexec(conn_, "ROLLBACK");
    PQclear(res);
  }
  bool exec(const char* sql, std::string* error) {
    PGresult* res = PQexec(conn_, sql);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok || fail(sql, error);
  }
  bool fail(const std::string& what, std::string* error) {
    std::string msg = conn_ ? PQerrorMessage(conn_) : "out of memory";
    while (!msg.empty() && (msg.back() == '\n' || msg.back() == ' ')) msg.pop_back();
    // One line: libpq continues a message on indented lines ("\n\tIs the server running ...").
    for (size_t nl = msg.find('\n'); nl != std::string::npos; nl = msg.find('\n', nl)) {
      size_t end = nl + 1;
      while (end < msg.size() && (msg[end] == '\t' || msg[end] == ' ')) ++end;
      msg.replace(nl, end - nl, "; ");
    }
    // libpq's messages may quote parts of the connection string: no password leaves this function.
    *error = redact_db_url(url_) + ": PostgreSQL: " + scrub_password(what + ": " + msg, url_);
    return false;
  }
  std::string url_;
  PGconn* conn_ = nullptr;
};

}  // namespace

std::unique_ptr<PerfDb> open_postgres_db(const std::string& url, std::string* error) {
  auto db = std::make_unique<PostgresPerfDb>(url);
  if (!db->open(error)) return nullptr;
  return db;
}

}  // namespace strata::lowerbound
