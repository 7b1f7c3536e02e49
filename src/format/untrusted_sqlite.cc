#include "format/untrusted_sqlite.h"

#include <sqlite3.h>
#include <strings.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "format/input_file.h"

namespace strata::format {

struct UntrustedSqlite::State {
  std::string path;
  uint64_t steps = 0;
  uint64_t budget = 0;
  uint64_t file_size = 0;
  bool spent = false;
  bool heap_held = false;
};

namespace {

// The progress handler runs every kStepsPerCall virtual-machine steps.
constexpr int kStepsPerCall = 1000;

int count_steps(void* context) {
  auto* state = static_cast<UntrustedSqlite::State*>(context);
  state->steps += kStepsPerCall;
  if (state->steps <= state->budget) return 0;
  state->spent = true;
  return 1;  // interrupts the statement (SQLITE_INTERRUPT)
}

// sqlite3_hard_heap_limit64 is process-wide: the first open database sets it, the last one closed
// puts the previous value back (several traces are read on threads).
std::mutex g_heap_mutex;
int g_heap_holders = 0;
sqlite3_int64 g_heap_before = 0;

void hold_heap_limit(int64_t bytes) {
  std::lock_guard lock(g_heap_mutex);
  if (g_heap_holders++ == 0) {
    g_heap_before = sqlite3_hard_heap_limit64(-1);
    sqlite3_hard_heap_limit64(bytes);
  } else if (const sqlite3_int64 now = sqlite3_hard_heap_limit64(-1); now == 0 || bytes < now) {
    sqlite3_hard_heap_limit64(bytes);  // the strictest holder's limit
  }
}

void release_heap_limit() {
  std::lock_guard lock(g_heap_mutex);
  if (--g_heap_holders == 0) sqlite3_hard_heap_limit64(g_heap_before);
}

// SQLite's message on one line: a malformed schema is quoted in it, newlines included. Other bytes
// are kept: whoever prints the line escapes it for the terminal.
std::string one_line(const char* text) {
  std::string out;
  for (const char* c = text != nullptr ? text : "out of memory"; *c != '\0'; ++c) {
    const bool space = *c == '\n' || *c == '\r' || *c == '\t' || *c == ' ';
    if (!space)
      out += *c;
    else if (!out.empty() && out.back() != ' ')
      out += ' ';
  }
  return out;
}

uint64_t step_budget_for(const UntrustedSqliteOptions& options, uint64_t file_bytes) {
  if (const char* text = std::getenv(kSqliteStepsEnv); text != nullptr && *text != '\0') {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text, &end, 10);
    if (*end == '\0' && v > 0) return v;
  }
  const uint64_t per_byte = options.steps_per_byte;
  const uint64_t scaled =
      per_byte != 0 && file_bytes > UINT64_MAX / per_byte ? UINT64_MAX : file_bytes * per_byte;
  return scaled > UINT64_MAX - options.min_steps ? UINT64_MAX : scaled + options.min_steps;
}

void harden(sqlite3* db, const UntrustedSqliteOptions& options) {
  sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
  if (options.known_views.empty()) sqlite3_db_config(db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, options.max_value_bytes);
  sqlite3_limit(db, SQLITE_LIMIT_EXPR_DEPTH, 256);
  sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_limit(db, SQLITE_LIMIT_TRIGGER_DEPTH, 1);
  sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, 0);
}

// "file:///proc/self/fd/N?mode=ro&immutable=1": the descriptor checked to be a regular file is the
// file SQLite reads, whatever the path names by then.
std::string uri_of_descriptor(int fd) {
  return "file:///proc/self/fd/" + std::to_string(fd) + "?mode=ro&immutable=1";
}

bool starts_with_nocase(std::string_view text, std::string_view prefix) {
  return text.size() >= prefix.size() && strncasecmp(text.data(), prefix.data(), prefix.size()) == 0;
}

// A column of `table` computed when it is read (GENERATED ALWAYS AS (...) VIRTUAL), or "".
std::string computed_column(sqlite3* db, const std::string& table) {
  sqlite3_stmt* stmt = nullptr;
  std::string column;
  if (sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_xinfo(?) WHERE hidden = 2", -1, &stmt, nullptr) ==
      SQLITE_OK) {
    sqlite3_bind_text(stmt, 1, table.c_str(), -1, SQLITE_TRANSIENT);
    if (sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* name = sqlite3_column_text(stmt, 0);
      column = name != nullptr ? reinterpret_cast<const char*>(name) : "?";
    }
  }
  sqlite3_finalize(stmt);
  return column;
}

}  // namespace

UntrustedSqlite::UntrustedSqlite() : state_(std::make_unique<State>()) {}

UntrustedSqlite::~UntrustedSqlite() {
  if (db_ != nullptr) sqlite3_close(db_);
  if (fd_ >= 0) ::close(fd_);
  if (state_->heap_held) release_heap_limit();
}

bool UntrustedSqlite::open(const std::string& path, const UntrustedSqliteOptions& options,
                           std::string* error) {
  state_->path = path;
  uint64_t size = 0;
  fd_ = open_regular_file(path, &size, error);
  if (fd_ < 0) return false;
  state_->budget = step_budget_for(options, size);
  state_->file_size = size;
  hold_heap_limit(options.max_heap_bytes);
  state_->heap_held = true;
  const int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(uri_of_descriptor(fd_).c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    *error = path + ": cannot open as SQLite: " + one_line(db_ != nullptr ? sqlite3_errmsg(db_) : nullptr);
    return false;
  }
  harden(db_, options);
  sqlite3_progress_handler(db_, kStepsPerCall, count_steps, state_.get());
  sqlite3_stmt* stmt = nullptr;
  // Reading the schema table parses every object's SQL: a malformed schema fails here.
  if (sqlite3_prepare_v2(db_, "SELECT type, name, sql FROM sqlite_master", -1, &stmt, nullptr) != SQLITE_OK) {
    *error = path + ": not a readable SQLite database (" + message() + ")";
    return false;
  }
  std::string refusal;
  std::vector<std::string> tables;
  int rc;
  while (refusal.empty() && (rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    const auto text = [&](int column) {
      const unsigned char* value = sqlite3_column_text(stmt, column);
      return std::string(value != nullptr ? reinterpret_cast<const char*>(value) : "");
    };
    const std::string type = text(0), name = text(1), sql = text(2);
    if (type == "table" && starts_with_nocase(sql, "CREATE VIRTUAL TABLE"))
      refusal = "holds a virtual table ('" + name + "'), which " + std::string(options.expected) +
                " does not have: a module's code would run when it is read";
    else if (type == "table")
      tables.push_back(name);
    else if (type == "view" && std::find(options.known_views.begin(), options.known_views.end(), sql) ==
                                   options.known_views.end())
      refusal = "holds a view ('" + name + "'), which " + std::string(options.expected) +
                " does not have: SQL that would run when it is read (Strata runs none from a file)";
    else if (type != "view" && type != "index")
      refusal = "holds a " + type + " ('" + name + "'), which " + std::string(options.expected) +
                " does not have: SQL that would run (Strata runs none from a file)";
  }
  const bool read_all = refusal.empty() && rc == SQLITE_DONE;
  sqlite3_finalize(stmt);
  if (!refusal.empty()) {
    *error = path + ": " + refusal + "; refused";
    return false;
  }
  if (!read_all) {
    *error = path + ": not a readable SQLite database (" + message() + ")";
    return false;
  }
  for (const std::string& table : tables)
    if (const std::string column = computed_column(db_, table); !column.empty()) {
      *error = path + ": table '" + table + "' has a column computed when it is read ('" + column +
               "'), which " + std::string(options.expected) + " does not have; refused";
      return false;
    }
  return true;
}

std::string UntrustedSqlite::message() const {
  if (state_->spent)
    return "stopped after " + std::to_string(state_->budget) +
           " SQLite steps, the budget for a file of this size (for a file known to be genuine, raise it "
           "with " +
           kSqliteStepsEnv + "=N)";
  return one_line(db_ != nullptr ? sqlite3_errmsg(db_) : nullptr);
}

bool UntrustedSqlite::out_of_budget() const { return state_->spent; }
uint64_t UntrustedSqlite::steps_used() const { return state_->steps; }
uint64_t UntrustedSqlite::step_budget() const { return state_->budget; }
uint64_t UntrustedSqlite::file_size() const { return state_->file_size; }

namespace {

// Functions no query needs: extension loading, and fts3_tokenizer, which hands out (and takes) a
// pointer; readfile/writefile/edit in case a build ever links the shell's file functions.
bool refused_function(const char* name) {
  for (const char* refused : {"load_extension", "fts3_tokenizer", "readfile", "writefile", "edit"})
    if (name != nullptr && strcasecmp(name, refused) == 0) return true;
  return false;
}

// Pragmas that only describe the schema or the database (also as table-valued functions, e.g.
// pragma_table_info('spans')): with an argument (a table or index name) or without.
bool describing_pragma(const char* name, const char* argument) {
  for (const char* any : {"table_info", "table_xinfo", "table_list", "index_list", "index_info",
                          "index_xinfo", "foreign_key_list", "function_list", "pragma_list", "module_list",
                          "collation_list", "compile_options", "database_list"})
    if (strcasecmp(name, any) == 0) return true;
  if (argument != nullptr) return false;  // `PRAGMA page_size = 512` sets
  for (const char* bare : {"page_count", "page_size", "encoding", "user_version", "application_id",
                           "schema_version", "freelist_count", "data_version", "query_only"})
    if (strcasecmp(name, bare) == 0) return true;
  return false;
}

std::string text_or(const char* text, const char* fallback) { return text != nullptr ? text : fallback; }

bool schema_table(const char* table) {
  return strcasecmp(table, "sqlite_master") == 0 || strcasecmp(table, "sqlite_schema") == 0 ||
         strcasecmp(table, "sqlite_temp_master") == 0 || strcasecmp(table, "sqlite_temp_schema") == 0;
}

// What a denied action is, for the error line.
std::string describe_action(int action, const char* first, const char* second) {
  switch (action) {
    case SQLITE_ATTACH:
      return "ATTACH (also VACUUM, which attaches its output file)";
    case SQLITE_DETACH:
      return "DETACH";
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
      if (first == nullptr || !schema_table(first)) return "a write to " + text_or(first, "a table");
      break;  // CREATE and DROP write the schema table first
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      return "a transaction (BEGIN, COMMIT, SAVEPOINT)";
    case SQLITE_PRAGMA:
      return "PRAGMA " + text_or(first, "?") + (second != nullptr ? " = " + std::string(second) : "");
    case SQLITE_FUNCTION:
      return "the function " + text_or(second, "?") + "()";
    case SQLITE_ALTER_TABLE:
      return "ALTER TABLE";
    default:
      break;
  }
  return "a statement that changes the database (CREATE, DROP, REINDEX, ANALYZE, ...)";
}

int authorize_reads(void* context, int action, const char* first, const char* second, const char*,
                    const char*) {
  bool allowed = false;
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_RECURSIVE:
      allowed = true;
      break;
    case SQLITE_FUNCTION:
      allowed = !refused_function(second);
      break;
    case SQLITE_PRAGMA:
      allowed = first != nullptr && describing_pragma(first, second);
      break;
    case SQLITE_UPDATE:
      // SQLite raises this on its own schema table while it declares a virtual table's columns
      // (json_each, pragma_table_info); no statement can write that table here (defensive mode,
      // query_only, a read-only file).
      allowed = first != nullptr && schema_table(first);
      break;
    default:
      break;
  }
  if (allowed) return SQLITE_OK;
  std::string* refused = static_cast<std::string*>(context);
  if (refused->empty()) *refused = describe_action(action, first, second);
  return SQLITE_DENY;
}

}  // namespace

ReadOnlyQueries::ReadOnlyQueries(sqlite3* db) : db_(db) {
  sqlite3_exec(db_, "PRAGMA query_only = 1", nullptr, nullptr, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(db_, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION, 0, nullptr);
  sqlite3_limit(db_, SQLITE_LIMIT_ATTACHED, 0);
  sqlite3_set_authorizer(db_, authorize_reads, &refused_);
}

ReadOnlyQueries::~ReadOnlyQueries() { sqlite3_set_authorizer(db_, nullptr, nullptr); }

bool ReadOnlyQueries::prepare(const char* sql, int bytes, sqlite3_stmt** stmt, const char** tail,
                              std::string* error) {
  refused_.clear();
  *stmt = nullptr;
  if (sqlite3_prepare_v2(db_, sql, bytes, stmt, tail) != SQLITE_OK) {
    *error =
        refused_.empty() ? one_line(sqlite3_errmsg(db_)) : refused_ + " is refused: queries here only read";
    return false;
  }
  if (*stmt != nullptr && !sqlite3_stmt_readonly(*stmt)) {
    sqlite3_finalize(*stmt);
    *stmt = nullptr;
    *error = "a statement that writes is refused: queries here only read";
    return false;
  }
  return true;
}

}  // namespace strata::format
