// strata sql TRACE "SELECT ..." [--format table|csv|json] [-o FILE[.gz] [--force]]
#include <sqlite3.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/output_stream.h"
#include "export/sqlite_export.h"
#include "export/table_render.h"
#include "format/untrusted_sqlite.h"

namespace strata::cli {
namespace {

bool is_sqlite_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char header[16] = {};
  in.read(header, sizeof(header));
  return in.gcount() == 16 && std::memcmp(header, "SQLite format 3", 16) == 0;
}

table::Cell cell_of(sqlite3_stmt* stmt, int col) {
  switch (sqlite3_column_type(stmt, col)) {
    case SQLITE_INTEGER:
      return table::Cell::integer(sqlite3_column_int64(stmt, col));
    case SQLITE_FLOAT:
      return table::Cell::real(sqlite3_column_double(stmt, col), 6);
    case SQLITE_NULL:
      return table::Cell::empty();
    case SQLITE_BLOB:
      return table::Cell::text("<blob " + std::to_string(sqlite3_column_bytes(stmt, col)) + " bytes>");
    default: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, col));
      return table::Cell::text(text ? std::string(text, static_cast<size_t>(sqlite3_column_bytes(stmt, col)))
                                    : "");
    }
  }
}

// Runs every statement of `sql`, each read-only (`queries`); each one that returns columns becomes a
// table. False with one line in *error (SQLite's message, or what was refused or what stopped it,
// and the statement's position) on the first failing statement. `file` is the database's file when
// it is one (its step budget), else null.
bool run_statements(sqlite3* db, format::ReadOnlyQueries& queries, const format::UntrustedSqlite* file,
                    const std::string& sql, std::vector<table::Table>* tables, std::string* error) {
  const char* begin = sql.c_str();
  const char* const end = begin + sql.size();
  int index = 0;
  while (begin < end) {
    sqlite3_stmt* stmt = nullptr;
    const char* tail = nullptr;
    if (!queries.prepare(begin, static_cast<int>(end - begin), &stmt, &tail, error)) {
      *error = "query at character " + std::to_string(begin - sql.c_str()) + ": " + *error;
      return false;
    }
    begin = tail;
    if (!stmt) continue;  // whitespace or a comment
    ++index;
    table::Table t;
    t.name = "query" + std::to_string(index);
    t.title = "Query " + std::to_string(index);
    const int columns = sqlite3_column_count(stmt);
    for (int c = 0; c < columns; ++c) t.columns.emplace_back(sqlite3_column_name(stmt, c));
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<table::Cell> row;
      row.reserve(static_cast<size_t>(columns));
      for (int c = 0; c < columns; ++c) row.push_back(cell_of(stmt, c));
      t.rows.push_back(std::move(row));
    }
    if (rc != SQLITE_DONE) {
      *error =
          "query " + std::to_string(index) + ": " + (file != nullptr ? file->message() : sqlite3_errmsg(db));
      sqlite3_finalize(stmt);
      return false;
    }
    sqlite3_finalize(stmt);
    if (columns > 0) tables->push_back(std::move(t));
  }
  if (index == 0) {
    *error = "the query is empty: give an SQL statement, e.g. \"SELECT name, dur_ns FROM spans LIMIT 10\"";
    return false;
  }
  return true;
}

// A database this exporter wrote (not another tool's SQLite file, e.g. an Nsight Systems export,
// which goes through the trace readers instead).
bool is_strata_database(sqlite3* db) {
  sqlite3_stmt* stmt = nullptr;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &stmt, nullptr) !=
      SQLITE_OK)
    return false;
  const bool found = sqlite3_step(stmt) == SQLITE_ROW;
  sqlite3_finalize(stmt);
  return found;
}

// What `strata sql` accepts as a database file: the schema `strata export --format sqlite` writes
// (its three views and no others), read under a step budget generous for the user's own queries.
format::UntrustedSqliteOptions export_database_options() {
  format::UntrustedSqliteOptions options;
  options.expected = "a database of `strata export --format sqlite`";
  options.known_views = exporter::sqlite_view_definitions();
  options.min_steps = 1'000'000'000;
  options.steps_per_byte = 1024;
  options.max_value_bytes = 256 << 20;
  return options;
}

}  // namespace

int run_sql(int argc, char** argv) {
  std::string input, query, format_text = "table", output;
  bool force = false;
  CommandLine cl("sql",
                 "Run SQL queries over a trace, or over the database `strata export --format sqlite` wrote.");
  cl.app()
      .add_option("TRACE", input,
                  "a database written by `strata export --format sqlite` (opened read-only), or any trace "
                  "(Strata, Kineto/PyTorch JSON, ...): exported into an in-memory database first")
      ->required();
  cl.app()
      .add_option(
          "QUERY", query,
          "SQL (SQLite dialect); several statements separated by ';' print one table each. Tables and "
          "views: spans, attributes, metrics, processes, threads, tracks, strings, levels, frames, "
          "stack_frames, sample_counts, sample_points (docs/sql.md)")
      ->required();
  cl.add_format(&format_text, {"table", "csv", "json"}, "table (aligned text, default), csv, json");
  cl.add_output(&output,
                "write the tables to FILE instead of standard output (a name ending in .gz is gzip'd)");
  cl.add_force(&force);
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  exporter::TableFormat format = format_text == "csv"    ? exporter::TableFormat::kCsv
                                 : format_text == "json" ? exporter::TableFormat::kJson
                                                         : exporter::TableFormat::kText;
  const bool to_file = !output.empty() && output != "-";
  if (std::string error; to_file && !check_output_target(output, force, &error)) return fail("sql", error, 1);

  std::string error;
  if (!check_inputs({input}, InputKind::kTrace, &error)) return fail("sql", error, 1);
  // A database file from elsewhere is opened untrusted; a trace becomes an in-memory database Strata
  // fills itself. Either way the user's statements then run read-only.
  std::unique_ptr<format::UntrustedSqlite> database;
  sqlite3* memory = nullptr;
  if (is_sqlite_file(input)) {
    database = std::make_unique<format::UntrustedSqlite>();
    if (!database->open(input, export_database_options(), &error)) return fail("sql", error, 1);
    if (!is_strata_database(database->handle())) database.reset();  // an Nsight Systems export: a trace
  }
  if (!database) {
    trace::Trace trace;
    if (!load_native_or_import(input, &trace, &error)) return fail("sql", error, 1);
    print_warnings(trace.warnings);
    if (sqlite3_open(":memory:", &memory) != SQLITE_OK || !exporter::write_sqlite(trace, memory, &error)) {
      sqlite3_close(memory);
      return fail("sql", input + ": " + (error.empty() ? "cannot create an in-memory database" : error), 1);
    }
  }
  sqlite3* db = database ? database->handle() : memory;
  std::vector<table::Table> tables;
  bool ok;
  {
    format::ReadOnlyQueries queries(db);
    ok = run_statements(db, queries, database.get(), query, &tables, &error);
  }
  database.reset();
  sqlite3_close(memory);
  if (!ok) return fail("sql", error, 1);
  Output target;
  OutputStream file;
  if (!to_file)
    file.open_stdout();
  else if (!target.begin(output, force, &error) || !file.open(target.path(), output, &error))
    return fail("sql", error, 1);
  exporter::render_tables(tables, format, file.stream());
  // A failed write leaves nothing: the temporary file is removed, the target never appears.
  if (!file.finish(&error) || (to_file && !target.commit(&error))) return fail("sql", error, 1);
  return 0;
}

}  // namespace strata::cli
