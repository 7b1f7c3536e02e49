// Where the performance database is, from --db or $STRATA_PERF_DB, and how to print it without its
// password (issue 13.3). Accepted: a PostgreSQL URI (postgresql://user@host:port/db?param=...), a
// file path or sqlite:PATH. A libpq keyword/value string ("host=... password=...") is refused with
// a line saying what to pass instead: taken as a file name it would create a file named after the
// password. The password belongs in ~/.pgpass, $PGPASSWORD or a service file, never in a URI on a
// command line, where every user on the machine can read it (`ps`, /proc/PID/cmdline).
#pragma once

#include <string>

namespace strata::lowerbound {

struct DbTarget {
  enum class Kind { kSqlite, kPostgres } kind = Kind::kSqlite;
  std::string location;  // the SQLite path, or the PostgreSQL URI as given
};

// False with one error line (the string redacted) for a keyword/value connection string or an empty
// path.
bool parse_db_url(const std::string& url, DbTarget* out, std::string* error);

// The URI's password (user:PASSWORD@ or a password= query parameter), decoded; empty when none.
std::string db_url_password(const std::string& url);

// The string with every password replaced by "***": user:***@host, ?password=***, and in keyword/value
// strings password=*** (quoted values included).
std::string redact_db_url(const std::string& url);

// `text` (an error message) with every occurrence of the URL's password, raw or percent-encoded,
// replaced by "***".
std::string scrub_password(const std::string& text, const std::string& url);

}  // namespace strata::lowerbound
