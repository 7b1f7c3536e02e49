// libFuzzer target: the input as a trace whose chunk framing and checksums are repaired before it is
// read, so mutations reach the payload decoders (strings, spans, properties, clock snapshots) instead
// of stopping at a CRC; then loaded, summarized, linked and exported (trace_fuzz_targets.h).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "trace_fuzz_targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::fuzz::run_trace_chunks(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
