// strata_gen_trace OUT SPANS [PROCESSES]: writes a generated trace (see trace_generator.h), for
// scripts/record_memory_check.sh.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "trace_generator.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: strata_gen_trace OUT SPANS [PROCESSES]\n");
    return 2;
  }
  strata::testing::GeneratorOptions options;
  options.spans = std::strtoull(argv[2], nullptr, 10);
  if (argc > 3) options.processes = std::atoi(argv[3]);
  strata::testing::GeneratedTrace result;
  std::string error;
  if (!strata::testing::generate_trace(argv[1], options, &result, &error)) {
    std::fprintf(stderr, "strata_gen_trace: %s\n", error.c_str());
    return 1;
  }
  std::printf("%s: %llu spans, %llu bytes\n", argv[1], static_cast<unsigned long long>(result.spans),
              static_cast<unsigned long long>(result.bytes));
  return 0;
}
