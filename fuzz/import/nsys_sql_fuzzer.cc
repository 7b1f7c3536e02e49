// libFuzzer entry: SQL statements that turn a small Nsight Systems export into a hostile one (views,
// triggers, recursive queries, huge strings, a malformed schema), then the nsys reader on the result
// (nsys_fuzz_target.h). Seeds: fuzz/corpus/fuzz_import_nsys_sql/ (one SQL script each).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nsys_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_nsys_sql(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
