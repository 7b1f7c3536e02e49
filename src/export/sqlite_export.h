// A trace as an SQLite database (`strata export --format sqlite`, `strata sql`): the schema is
// documented in docs/sql.md. Span times in ns on the trace's own clock; names interned in `strings`
// and shown readable by the views (`spans`, `attributes`, `metrics`); parent and link kind from the
// span tree (trace/span_tree.h), as every other export carries them.
#pragma once

#include <string>
#include <vector>

#include "trace/trace.h"

struct sqlite3;

namespace strata::exporter {

// The schema version written into meta('schema_version'); bumped when a table or column changes.
inline constexpr int kSqliteSchemaVersion = 1;

// Creates the schema in `db` (an empty database: a new file or ":memory:") and fills it from
// `trace`, in one transaction; indexes are created after the rows. False with one line in *error.
bool write_sqlite(const trace::Trace& trace, sqlite3* db, std::string* error);

// The views this schema creates, each as SQLite keeps its text in sqlite_master (`CREATE VIEW spans AS
// ...`): `strata sql` accepts a database holding these views and no others (format/untrusted_sqlite.h).
std::vector<std::string> sqlite_view_definitions();

// Same into a new database file at `path` (which must be empty or absent); *error does not name
// the file (the caller names its target, not a temporary file).
bool write_sqlite_file(const trace::Trace& trace, const std::string& path, std::string* error);

}  // namespace strata::exporter
