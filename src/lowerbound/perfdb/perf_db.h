// The performance database: one row per (system, backend, dtype, layout, layer signature, algorithm)
// holding the measured median, spread and repetitions. SQLite file by default; a postgresql:// URL
// selects a shared PostgreSQL database with the same schema and behaviour.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace strata::lowerbound {

struct BenchRecord {
  std::string system;     // system key (see system_info.h)
  std::string backend;    // cpu | cuda
  std::string dtype;      // f32 | bf16 | f16
  std::string layout;     // nchw | nhwc
  std::string signature;  // layer signature (plus "|fused=relu" for fused cases)
  std::string algorithm;  // "unsupported" rows mark a layer tried without any implementation
  std::string library_call;
  std::string implementation;  // the library's own name for the code that ran
  double median_ns = -1;       // < 0: unsupported
  double spread_ns = 0;        // interquartile range of the repetitions
  int repetitions = 0;
  int iterations = 0;       // calls per repetition
  std::string measured_at;  // ISO 8601 UTC
};

class PerfDb {
 public:
  virtual ~PerfDb() = default;
  // Inserts or replaces the row with the same key.
  virtual bool put(const BenchRecord& record, std::string* error) = 0;
  // Every row of one system and backend (one query; callers index it in memory).
  virtual bool load(const std::string& system, const std::string& backend, std::vector<BenchRecord>* out,
                    std::string* error) = 0;
  // Deletes every row of one system and backend (re-measure from scratch; tests).
  virtual bool erase(const std::string& system, const std::string& backend, std::string* error) = 0;
  virtual bool begin(std::string* error) = 0;
  virtual bool commit(std::string* error) = 0;
  virtual std::string describe() const = 0;
};

// "postgresql://..." / "postgres://..." -> PostgreSQL; "sqlite:PATH" or a plain PATH -> SQLite.
std::unique_ptr<PerfDb> open_perf_db(const std::string& url, std::string* error);
std::unique_ptr<PerfDb> open_sqlite_db(const std::string& path, std::string* error);
std::unique_ptr<PerfDb> open_postgres_db(const std::string& url, std::string* error);

// The default database: $STRATA_PERF_DB, else ~/.cache/strata/perf.sqlite.
std::string default_perf_db_url();

}  // namespace strata::lowerbound
