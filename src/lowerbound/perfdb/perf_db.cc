#include "lowerbound/perfdb/perf_db.h"

#include <cstdlib>
#include <filesystem>

#include "lowerbound/perfdb/db_url.h"

namespace strata::lowerbound {

std::unique_ptr<PerfDb> open_perf_db(const std::string& url, std::string* error) {
  DbTarget target;
  if (!parse_db_url(url, &target, error)) return nullptr;
  if (target.kind == DbTarget::Kind::kPostgres) return open_postgres_db(target.location, error);
  return open_sqlite_db(target.location, error);
}

std::string default_perf_db_url() {
  if (const char* env = std::getenv("STRATA_PERF_DB"); env && *env) return env;
  const char* home = std::getenv("HOME");
  std::filesystem::path dir = std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "strata";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return (dir / "perf.sqlite").string();
}

}  // namespace strata::lowerbound
