#include "nsys_fuzz_target.h"

#include <sqlite3.h>
#include <strings.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "format/input_file.h"
#include "format/untrusted_sqlite.h"
#include "import/nsys_sqlite_reader.h"
#include "trace/span_tree.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::fuzz {
namespace {

// Imports `path` and checks what every import keeps: times in range, spans in known processes, a
// tree over every span; a failure is one line. At most `max_spans` spans.
void import_and_check(const char* path, size_t max_spans) {
  trace::Trace trace;
  std::string error;
  trace::TraceBuilder builder(&trace);
  if (import::import_nsys_sqlite(path, builder, &error, nullptr)) {
    builder.finish({.structure = false, .tree = {}});
    if (trace.spans.size() > max_spans) std::abort();  // more spans than the file could hold
    for (const SpanRecord& s : trace.spans)
      if (!time_in_range(s.start_ns) || !time_in_range(s.end_ns) || s.process >= trace.processes.size())
        std::abort();
    trace::SpanTree tree = trace::build_span_tree(trace);
    if (tree.size() != trace.spans.size()) std::abort();
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    std::abort();  // a failure must come with exactly one error line
  }
}

// A small export of schema 3.x: what the fuzzer's statements start from, so that replacing a table
// by a view or adding a trigger reaches the reader's checks and, past them, the translation.
constexpr const char* kSkeleton = R"sql(
PRAGMA page_size = 1024; PRAGMA max_page_count = 2048;
CREATE TABLE StringIds(id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);
INSERT INTO StringIds VALUES (1, 'gemm_kernel'), (2, 'cudaLaunchKernel_v7000'), (3, 'forward');
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER,
  streamId INTEGER, correlationId INTEGER, demangledName INTEGER, shortName INTEGER, gridX, gridY, gridZ,
  blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory);
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2000, 3000, 0, 7, 11, 1, 1, 1, 1, 1, 128, 1, 1, 32, 0, 0);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER,
  globalTid INTEGER, correlationId INTEGER, nameId INTEGER, returnValue INTEGER);
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1000, 1500, 0, 281474993487872, 11, 2, 0);
CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL, rangeId INTEGER,
  text TEXT, globalTid INTEGER, textId INTEGER, domainId INTEGER);
INSERT INTO NVTX_EVENTS VALUES (900, 3500, 59, NULL, 'train_step', 281474993487872, NULL, 0);
CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION_MAJOR', '3');
)sql";

// What the statements that build the file may not do: write other files (ATTACH, VACUUM INTO) or
// lift the file's size cap.
int building_authorizer(void*, int action, const char* first, const char*, const char*, const char*) {
  if (action == SQLITE_ATTACH || action == SQLITE_DETACH) return SQLITE_DENY;
  if (action == SQLITE_PRAGMA && first != nullptr &&
      (strcasecmp(first, "max_page_count") == 0 || strcasecmp(first, "page_size") == 0 ||
       strcasecmp(first, "temp_store_directory") == 0 || strcasecmp(first, "journal_mode") == 0))
    return SQLITE_DENY;
  return SQLITE_OK;
}

int stop_after_budget(void* steps) { return --*static_cast<int*>(steps) < 0; }

// Runs every statement of `sql` it can, each until it fails; all of them share one step budget.
void run_statements(sqlite3* db, std::string_view sql) {
  int budget = 200;  // progress calls of 1,000 steps: 200,000 steps to build the file
  sqlite3_progress_handler(db, 1000, stop_after_budget, &budget);
  const char* at = sql.data();
  const char* const end = sql.data() + sql.size();
  while (at < end && budget >= 0) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    const int rc = sqlite3_prepare_v2(db, at, static_cast<int>(end - at), &stmt, &tail);
    if (rc == SQLITE_OK && stmt != nullptr)
      while (sqlite3_step(stmt) == SQLITE_ROW) {
      }
    sqlite3_finalize(stmt);
    if (tail == nullptr || tail <= at) break;  // nothing consumed: a syntax error stops here
    at = tail;
  }
  sqlite3_progress_handler(db, 0, nullptr, nullptr);
}

// Writes `bytes` to a new private file (SQLite reads files, not buffers): its path, or "".
std::string write_temporary(std::string_view bytes) {
  char path[] = "/tmp/strata_nsys_fuzz_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return "";
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  return path;
}

}  // namespace

void run_nsys_import(std::string_view bytes) {
  const std::string path = write_temporary(bytes);
  if (path.empty()) return;
  import_and_check(path.c_str(), SIZE_MAX);
  ::unlink(path.c_str());
}

void run_nsys_sql(std::string_view sql) {
  // A small budget for the reader too, so that one execution stays cheap; the reader must still give
  // one line when it runs out.
  ::setenv(format::kSqliteStepsEnv, "2000000", 0);
  ::setenv(format::kInflateRatioEnv, "8", 0);  // events: at most 8x the (2 MB at most) file,
  ::setenv(format::kInflateBytesEnv, "4", 0);  // and 4 MiB in all
  // Built in memory (no file write per statement), then written out as the file the reader opens.
  sqlite3* db = nullptr;
  std::string bytes;
  if (sqlite3_open(":memory:", &db) == SQLITE_OK) {
    sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    sqlite3_exec(db, kSkeleton, nullptr, nullptr, nullptr);
    sqlite3_set_authorizer(db, building_authorizer, nullptr);
    run_statements(db, sql);
    sqlite3_set_authorizer(db, nullptr, nullptr);
    sqlite3_int64 size = 0;
    if (unsigned char* image = sqlite3_serialize(db, "main", &size, 0)) {
      bytes.assign(reinterpret_cast<const char*>(image), static_cast<size_t>(size));
      sqlite3_free(image);
    }
  }
  sqlite3_close(db);
  if (bytes.empty()) return;
  const std::string path = write_temporary(bytes);
  if (path.empty()) return;
  import_and_check(path.c_str(), bytes.size());
  ::unlink(path.c_str());
}

}  // namespace strata::fuzz
