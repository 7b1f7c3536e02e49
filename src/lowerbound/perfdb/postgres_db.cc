// PostgreSQL backend of the performance database (libpq), for a database a team shares.
#include <libpq-fe.h>

#include <cstdlib>

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

// Serialises schema creation across connections; the key is any fixed 64-bit number ("StrataLB" in
// ASCII).
constexpr const char* kSchemaLock = "SELECT pg_advisory_xact_lock(6013557165336382530)";

// The URL without its password, for messages.
std::string redact(const std::string& url) {
  auto at = url.find('@');
  auto scheme = url.find("://");
  if (at == std::string::npos || scheme == std::string::npos) return url;
  auto colon = url.find(':', scheme + 3);
  if (colon == std::string::npos || colon > at) return url;
  return url.substr(0, colon) + ":***" + url.substr(at);
}

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
    if (!exec(kSchema, error)) {
      rollback();
      return false;
    }
    return exec("COMMIT", error);
  }

  bool put(const BenchRecord& r, std::string* error) override {
    std::string median = std::to_string(r.median_ns), spread = std::to_string(r.spread_ns);
    std::string reps = std::to_string(r.repetitions), iters = std::to_string(r.iterations);
    const char* values[13] = {
        r.system.c_str(),     r.backend.c_str(),   r.dtype.c_str(),        r.layout.c_str(),
        r.signature.c_str(),  r.algorithm.c_str(), r.library_call.c_str(), r.implementation.c_str(),
        median.c_str(),       spread.c_str(),      reps.c_str(),           iters.c_str(),
        r.measured_at.c_str()};
    const char* sql =
        "INSERT INTO strata_benchmarks VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        " ON CONFLICT (system, backend, dtype, layout, signature, algorithm) DO UPDATE SET"
        " library_call = EXCLUDED.library_call, implementation = EXCLUDED.implementation,"
        " median_ns = EXCLUDED.median_ns, spread_ns = EXCLUDED.spread_ns, repetitions = EXCLUDED.repetitions,"
        " iterations = EXCLUDED.iterations, measured_at = EXCLUDED.measured_at";
    PGresult* res = PQexecParams(conn_, sql, 13, nullptr, values, nullptr, nullptr, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok || fail("insert failed", error);
  }

  bool load(const std::string& system, const std::string& backend, std::vector<BenchRecord>* out,
            std::string* error) override {
    const char* values[2] = {system.c_str(), backend.c_str()};
    const char* sql =
        "SELECT system, backend, dtype, layout, signature, algorithm, library_call, implementation, "
        "median_ns,"
        " spread_ns, repetitions, iterations, measured_at FROM strata_benchmarks WHERE system = $1 AND "
        "backend = $2";
    PGresult* res = PQexecParams(conn_, sql, 2, nullptr, values, nullptr, nullptr, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
      PQclear(res);
      return fail("query failed", error);
    }
    for (int row = 0; row < PQntuples(res); ++row) {
      auto text = [&](int col) { return std::string(PQgetvalue(res, row, col)); };
      out->push_back(BenchRecord{
          text(0), text(1), text(2), text(3), text(4), text(5), text(6), text(7),
          std::strtod(PQgetvalue(res, row, 8), nullptr), std::strtod(PQgetvalue(res, row, 9), nullptr),
          std::atoi(PQgetvalue(res, row, 10)), std::atoi(PQgetvalue(res, row, 11)), text(12)});
    }
    PQclear(res);
    return true;
  }

  bool erase(const std::string& system, const std::string& backend, std::string* error) override {
    const char* values[2] = {system.c_str(), backend.c_str()};
    PGresult* res = PQexecParams(conn_, "DELETE FROM strata_benchmarks WHERE system = $1 AND backend = $2", 2,
                                 nullptr, values, nullptr, nullptr, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    return ok || fail("delete failed", error);
  }

  bool begin(std::string* error) override { return exec("BEGIN", error); }
  bool commit(std::string* error) override { return exec("COMMIT", error); }
  std::string describe() const override { return redact(url_); }

 private:
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
    *error = redact(url_) + ": PostgreSQL: " + what + ": " + msg;
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
