// Writes realistic traces of any size for the CLI tests and scripts/record_memory_check.sh: several
// processes (streams interleaved chunk by chunk, as `strata record` merges them), threads with
// nested spans at model/layer/library level, attributes, clock snapshots on a tick clock, drop
// counters and End chunks, written through the real StreamWriter.
#pragma once

#include <cstdint>
#include <string>

namespace strata::testing {

struct GeneratedTrace {
  uint64_t spans = 0;
  uint64_t bytes = 0;
};

struct GeneratorOptions {
  uint64_t spans = 100000;  // in all processes together
  int processes = 3;
  int threads_per_process = 4;
  uint64_t seed = 1;
  bool finish_streams = true;  // End chunks (false: as if every process was killed)
};

// False with *error set when the file cannot be written.
bool generate_trace(const std::string& path, const GeneratorOptions& options, GeneratedTrace* out,
                    std::string* error);

}  // namespace strata::testing
