// libFuzzer entry: any bytes as an Nsight Systems SQLite export (nsys_fuzz_target.h). Seed:
// fuzz/corpus/fuzz_import_nsys/ (scripts/make_nsys_fuzz_seed.sh cuts it from a real export).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "nsys_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_nsys_import(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
