// libFuzzer entry for the sample chunk reader (sample_fuzz_targets.h).
#include <cstddef>
#include <cstdint>

#include "sample_fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_sample_chunks({reinterpret_cast<const char*>(data), size});
  return 0;
}
