// Opening an SQLite file Strata did not write itself (an Nsight Systems export, a database given to
// `strata sql`), following SQLite's advice for untrusted databases ("Defense against the dark arts"):
// a database is a program as much as data. A view or a trigger is SQL that runs when it is read: a
// 4 KB file whose "table" is a recursive view never ends, one whose view repeats a huge string takes
// all memory. So every such file is opened here, and nowhere else:
//   - read-only and immutable (no lock, no journal, nothing written beside it), through the
//     descriptor that was checked to be a regular file (format::open_regular_file);
//   - SQLITE_DBCONFIG_DEFENSIVE, trusted_schema off, no extension loading, no triggers;
//   - the schema checked before anything is read: tables and indexes only; a view is accepted only
//     when its text is one the caller names (the three of `strata export --format sqlite`); a
//     trigger, a virtual table or a column computed when read is refused with one line;
//   - limits on the length of a value and the depth of an expression, no attached databases;
//   - SQLite's heap capped while the database is open, and a budget of virtual-machine steps that
//     grows with the file's size (a progress handler interrupts the statement that spends it).
// The user's own queries (`strata sql`) run under ReadOnlyQueries: reads only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/env_vars.h"

struct sqlite3;
struct sqlite3_stmt;

namespace strata::format {

struct UntrustedSqliteOptions {
  // What the file should be, for the error lines ("an Nsight Systems export").
  std::string_view expected = "an SQLite database";
  // Views accepted, each by its exact text as SQLite keeps it (`CREATE VIEW name AS ...`).
  std::vector<std::string> known_views;
  // Virtual-machine steps allowed in all: `min_steps` plus `steps_per_byte` per byte of the file.
  // A full read of the three shared Nsight Systems exports costs 0.005-0.09 steps per byte (docs/nsys.md);
  // STRATA_MAX_SQLITE_STEPS=N replaces the budget for a file known to be genuine.
  uint64_t min_steps = 100'000'000;
  uint64_t steps_per_byte = 64;
  // The longest string or blob a value may be (SQLITE_LIMIT_LENGTH).
  int max_value_bytes = 16 << 20;
  // SQLite's heap in this process while the database is open (sqlite3_hard_heap_limit64).
  int64_t max_heap_bytes = int64_t{1} << 30;
};

// Replaces the step budget when set: "raise it with STRATA_MAX_SQLITE_STEPS=N".
inline constexpr const char* kSqliteStepsEnv = env::kMaxSqliteSteps;

class UntrustedSqlite {
 public:
  UntrustedSqlite();
  ~UntrustedSqlite();
  UntrustedSqlite(const UntrustedSqlite&) = delete;
  UntrustedSqlite& operator=(const UntrustedSqlite&) = delete;

  // Opens `path` as described above and checks its schema. False with one line in *error naming the
  // file (SQLite's message quotes the file: print it escaped).
  bool open(const std::string& path, const UntrustedSqliteOptions& options, std::string* error);
  sqlite3* handle() const { return db_; }

  // SQLite's last error on one line; when the step budget stopped the statement, that budget and
  // how to raise it instead.
  std::string message() const;
  // Whether the step budget has run out (every later statement is interrupted too).
  bool out_of_budget() const;
  uint64_t steps_used() const;
  uint64_t step_budget() const;
  uint64_t file_size() const;  // the file's bytes, as opened

  struct State;  // the path, the step budget and what was spent of it (the progress handler's)

 private:
  sqlite3* db_ = nullptr;
  int fd_ = -1;
  std::unique_ptr<State> state_;
};

// The user's queries of `strata sql`, on a database Strata built in memory from a trace (after it is
// filled) or on an UntrustedSqlite: SELECT, reads, recursive CTEs, functions other than
// load_extension and fts3_tokenizer (which hands out a pointer), and the pragmas that only describe
// the schema. Refused: ATTACH and DETACH (and so VACUUM INTO), every write, CREATE, DROP, ALTER,
// transactions, pragmas that change a setting. Also sets defensive mode, query_only, no extension
// loading and no attached databases on the connection. The authorizer is removed on destruction.
class ReadOnlyQueries {
 public:
  explicit ReadOnlyQueries(sqlite3* db);
  ~ReadOnlyQueries();
  ReadOnlyQueries(const ReadOnlyQueries&) = delete;
  ReadOnlyQueries& operator=(const ReadOnlyQueries&) = delete;

  // sqlite3_prepare_v2 of the first statement of [sql, sql + bytes); false with one line in *error
  // when SQLite refuses it or it is not read-only ("ATTACH is refused: strata sql only reads").
  bool prepare(const char* sql, int bytes, sqlite3_stmt** stmt, const char** tail, std::string* error);

 private:
  sqlite3* db_;
  std::string refused_;  // what the authorizer last denied, for the error line
};

}  // namespace strata::format
