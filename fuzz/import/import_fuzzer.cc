// libFuzzer entry: any bytes through one importer, then the correlation engine over the result
// (import_fuzz_target.h). Seeds: tests/import/data/*.json and the Kineto fixtures (README.md).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "import_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_import(std::string_view(reinterpret_cast<const char*>(data), size), STRATA_FUZZ_FORMAT);
  return 0;
}
