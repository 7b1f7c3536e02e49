// libFuzzer target: arbitrary bytes through the chunk reader, the native reader, the TraceBuilder
// (one sort, the tracks table and every pass of the span tree) and the streamed summary. Must never
// crash, hang or allocate without bound; every failure is an error line or a counted warning
// (fuzz/format/trace_fuzz_targets.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace_fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_trace_reader(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
