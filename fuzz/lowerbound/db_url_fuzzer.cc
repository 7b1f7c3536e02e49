// Fuzzes the performance database's connection-string handling (--db, $STRATA_PERF_DB); the body is
// db_url_target.cc, shared with the corpus replay in tests/fuzz.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "db_url_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_db_url(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
