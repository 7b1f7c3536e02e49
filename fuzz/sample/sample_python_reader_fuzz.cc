// libFuzzer entry for the Python reader on synthetic process memory (python_image.h).
#include <cstddef>
#include <cstdint>

#include "python_image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_python_reader({reinterpret_cast<const char*>(data), size});
  return 0;
}
