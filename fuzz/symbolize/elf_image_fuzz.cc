// libFuzzer entry for ELF images and their unwind tables (elf_image_fuzz_target.h).
#include <cstddef>
#include <cstdint>

#include "elf_image_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_elf_image({reinterpret_cast<const char*>(data), size});
  return 0;
}
