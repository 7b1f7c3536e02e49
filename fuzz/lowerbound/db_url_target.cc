#include "db_url_target.h"

#include <string>

#include "lowerbound/perfdb/db_url.h"

namespace strata::fuzz {

void run_db_url(std::string_view text) {
  const std::string url(text);
  lowerbound::DbTarget target;
  std::string error;
  if (!lowerbound::parse_db_url(url, &target, &error) && error.empty()) __builtin_trap();
  const std::string redacted = lowerbound::redact_db_url(url);
  if (lowerbound::redact_db_url(redacted) != redacted) __builtin_trap();
  const std::string left = lowerbound::db_url_password(redacted);
  if (!left.empty() && left != "***") __builtin_trap();
  lowerbound::scrub_password(url + " " + url, url);
}

}  // namespace strata::fuzz
