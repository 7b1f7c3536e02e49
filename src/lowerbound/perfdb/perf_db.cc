#include "lowerbound/perfdb/perf_db.h"

#include <cstdlib>
#include <filesystem>

namespace strata::lowerbound {

std::unique_ptr<PerfDb> open_perf_db(const std::string& url, std::string* error) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0)
    return open_postgres_db(url, error);
  std::string path = url.rfind("sqlite:", 0) == 0 ? url.substr(7) : url;
  if (path.empty()) {
    *error = "empty database path; pass --db FILE.sqlite or --db postgresql://...";
    return nullptr;
  }
  return open_sqlite_db(path, error);
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
