// libFuzzer entry for the unwinder's input (sample_fuzz_targets.h).
#include <cstddef>
#include <cstdint>

#include "sample_fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_sample_unwind({reinterpret_cast<const char*>(data), size});
  return 0;
}
