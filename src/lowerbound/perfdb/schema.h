// The performance database's table, shared by the SQLite and PostgreSQL backends, and the migration
// of databases written before measurement quality was recorded.
#pragma once

#include <string>

namespace strata::lowerbound::schema {

inline constexpr const char* kCreate =
    "CREATE TABLE IF NOT EXISTS strata_benchmarks ("
    " system TEXT NOT NULL, backend TEXT NOT NULL, dtype TEXT NOT NULL, layout TEXT NOT NULL,"
    " signature TEXT NOT NULL, algorithm TEXT NOT NULL, library_call TEXT NOT NULL,"
    " implementation TEXT NOT NULL, median_ns DOUBLE PRECISION NOT NULL, spread_ns DOUBLE PRECISION NOT NULL,"
    " repetitions INTEGER NOT NULL, iterations INTEGER NOT NULL, measured_at TEXT NOT NULL,"
    " PRIMARY KEY (system, backend, dtype, layout, signature, algorithm))";

// Quality columns, added to tables created before them (ALTER TABLE ... ADD COLUMN): old rows get the
// defaults, i.e. quality "legacy", which `strata lowerbound` flags and `bench run --recheck` re-measures.
struct Column {
  const char* name;
  const char* definition;
};
inline constexpr Column kQualityColumns[] = {
    {"threads", "INTEGER NOT NULL DEFAULT 0"},
    {"timer", "TEXT NOT NULL DEFAULT ''"},
    {"disturbed_repetitions", "INTEGER NOT NULL DEFAULT 0"},
    {"relative_spread", "DOUBLE PRECISION NOT NULL DEFAULT -1"},
    {"load_avg", "DOUBLE PRECISION NOT NULL DEFAULT -1"},
    {"attempts", "INTEGER NOT NULL DEFAULT 0"},
    {"quality", "TEXT NOT NULL DEFAULT 'legacy'"},
};

// Every column, in the order put() binds and load() reads them.
inline constexpr const char* kColumns =
    "system, backend, dtype, layout, signature, algorithm, library_call, implementation, median_ns, "
    "spread_ns,"
    " repetitions, iterations, measured_at, threads, timer, disturbed_repetitions, relative_spread, load_avg,"
    " attempts, quality";
inline constexpr int kColumnCount = 20;

// System keys before the thread count was explicit said "omp_threads=default" when OMP_NUM_THREADS was
// unset: oneDNN then ran one thread per core, so the key becomes "omp_threads=<cores>" (the key's own
// "cores=" value). Returns the key unchanged when it needs no migration.
inline std::string migrated_system_key(const std::string& key) {
  const std::string old_token = "|omp_threads=default";
  size_t at = key.find(old_token);
  size_t cores = key.find("|cores=");
  if (at == std::string::npos || cores == std::string::npos) return key;
  size_t end = key.find('|', cores + 1);
  std::string n = key.substr(cores + 7, end == std::string::npos ? std::string::npos : end - cores - 7);
  if (n.empty() || n.find_first_not_of("0123456789") != std::string::npos) return key;
  return key.substr(0, at) + "|omp_threads=" + n + key.substr(at + old_token.size());
}

// Moves rows from an old system key to its migrated one, unless the new key already has that row.
// Parameters: 1 = old key, 2 = new key (SQLite ?1/?2, PostgreSQL $1/$2 are substituted by the caller).
inline constexpr const char* kMigrateKey =
    "UPDATE strata_benchmarks SET system = @2 WHERE system = @1 AND NOT EXISTS (SELECT 1 FROM "
    "strata_benchmarks t"
    " WHERE t.system = @2 AND t.backend = strata_benchmarks.backend AND t.dtype = strata_benchmarks.dtype AND"
    " t.layout = strata_benchmarks.layout AND t.signature = strata_benchmarks.signature AND"
    " t.algorithm = strata_benchmarks.algorithm)";

// `sql` with @1, @2, ... replaced by `prefix` + number (SQLite "?", PostgreSQL "$").
inline std::string with_placeholders(const char* sql, char prefix) {
  std::string out(sql);
  for (size_t at = out.find('@'); at != std::string::npos; at = out.find('@', at)) out[at] = prefix;
  return out;
}

}  // namespace strata::lowerbound::schema
