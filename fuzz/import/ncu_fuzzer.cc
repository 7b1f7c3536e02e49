// libFuzzer entry: any bytes through the Nsight Compute CSV parser and the metrics join
// (import_fuzz_target.h). Seeds: fuzz/corpus/fuzz_import_ncu (a trimmed details page, a raw page).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "import_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_ncu_csv(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
