// The performance database: one row per (system, backend, dtype, layout, layer signature, algorithm)
// holding the measured median, spread and repetitions, and how trustworthy the measurement is
// (threads, timer, preempted repetitions, relative spread, machine load, attempts, quality). SQLite file by
// default; a postgresql:// URL selects a shared PostgreSQL database with the same schema and behaviour.
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
  // Measurement quality (issue 12.2). Rows stored before it was recorded read as quality "legacy".
  int threads = 0;                 // library threads the call ran with (0: not recorded)
  std::string timer{};             // thread_cpu, wall, cuda_graph, cuda_events
  int disturbed = 0;               // repetitions during which the benchmark was preempted
  double relative_spread = -1;     // spread / median (-1: not recorded)
  double load_avg = -1;            // 1-minute load average when measured (-1: not recorded)
  int attempts = 0;                // measurements it took (1: the first was stable; 0: not recorded)
  std::string quality = "legacy";  // good (stable), legacy (before quality), n/a (unsupported rows)
  bool trusted() const { return quality == "good" || quality == "n/a"; }
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
  // Deletes every row (algorithm) of the item `key` names: system, backend, dtype, layout, signature.
  virtual bool erase_item(const BenchRecord& key, std::string* error) = 0;
  // The system keys the database holds rows for (one backend), for "measured elsewhere" diagnostics.
  virtual bool systems(const std::string& backend, std::vector<std::string>* out, std::string* error) = 0;
  virtual bool begin(std::string* error) = 0;
  virtual bool commit(std::string* error) = 0;
  virtual std::string describe() const = 0;
};

// "postgresql://..." / "postgres://..." -> PostgreSQL; "sqlite:PATH" or a plain PATH -> SQLite; a
// libpq keyword/value string is refused (db_url.h). Error lines never hold the password.
std::unique_ptr<PerfDb> open_perf_db(const std::string& url, std::string* error);
std::unique_ptr<PerfDb> open_sqlite_db(const std::string& path, std::string* error);
std::unique_ptr<PerfDb> open_postgres_db(const std::string& url, std::string* error);

// The default database: $STRATA_PERF_DB, else ~/.cache/strata/perf.sqlite ($HOME, else the
// password database's home of the user); "" when there is no home (never a name in /tmp).
std::string default_perf_db_url();

}  // namespace strata::lowerbound
