// Fuzzes the performance database's connection-string handling (--db, $STRATA_PERF_DB): any string
// is a URI, a file or one refusal line, and redaction never leaves a password readable: redacting
// is idempotent and what it returns holds no password but "***".
#include <cstddef>
#include <cstdint>
#include <string>

#include "lowerbound/perfdb/db_url.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string url(reinterpret_cast<const char*>(data), size);
  strata::lowerbound::DbTarget target;
  std::string error;
  if (!strata::lowerbound::parse_db_url(url, &target, &error) && error.empty()) __builtin_trap();
  const std::string redacted = strata::lowerbound::redact_db_url(url);
  if (strata::lowerbound::redact_db_url(redacted) != redacted) __builtin_trap();
  const std::string left = strata::lowerbound::db_url_password(redacted);
  if (!left.empty() && left != "***") __builtin_trap();
  strata::lowerbound::scrub_password(url + " " + url, url);
  return 0;
}
