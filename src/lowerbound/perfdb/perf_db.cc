#include "lowerbound/perfdb/perf_db.h"

#include <pwd.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <vector>

#include "core/env_vars.h"
#include "lowerbound/perfdb/db_url.h"

namespace strata::lowerbound {

std::unique_ptr<PerfDb> open_perf_db(const std::string& url, std::string* error) {
  DbTarget target;
  if (!parse_db_url(url, &target, error)) return nullptr;
  if (target.kind == DbTarget::Kind::kPostgres) return open_postgres_db(target.location, error);
  return open_sqlite_db(target.location, error);
}

std::string default_perf_db_url() {
  if (const char* env = std::getenv(strata::env::kPerfDb); env && *env) return env;
  // The user's home, from $HOME or the password database; never a fixed name in /tmp (another user
  // could create /tmp/.cache/strata first and link perf.sqlite to any file of this user's). No
  // home: no default (open_perf_db then asks for --db).
  std::string home;
  if (const char* env = std::getenv("HOME"); env && *env) {
    home = env;
  } else {
    struct passwd entry {};
    struct passwd* found = nullptr;
    std::vector<char> buffer(16384);
    if (getpwuid_r(geteuid(), &entry, buffer.data(), buffer.size(), &found) == 0 && found != nullptr &&
        found->pw_dir != nullptr && found->pw_dir[0] == '/')
      home = found->pw_dir;
  }
  if (home.empty()) return "";
  std::filesystem::path dir = std::filesystem::path(home) / ".cache" / "strata";
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  return (dir / "perf.sqlite").string();
}

}  // namespace strata::lowerbound
