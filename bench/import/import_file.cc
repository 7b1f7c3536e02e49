// What `strata import FILE -o OUT.strata` does to a JSON trace, without the CLI around it: open the
// file through the reader registry (read, parse, convert, sort, build the structure), then save it
// (zstd level 3, the command's default). For end-to-end CPU time and peak memory of the import path
// (/usr/bin/time -v), and for comparing the .strata it writes with the command's (cmp): a build
// needs only the import and model libraries, not the whole tool.
// Usage: bench_import_file IN.json OUT.strata [ZSTD_LEVEL]
#include <cstdio>
#include <cstdlib>
#include <string>

#include "import/importer.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

int main(int argc, char** argv) {
  if (argc < 3 || argc > 4) {
    std::fprintf(stderr, "usage: bench_import_file IN.json OUT.strata [ZSTD_LEVEL]\n");
    return 2;
  }
  strata::import::register_readers();
  strata::trace::OpenOptions options;
  options.format = "json";  // as `strata import` opens a file it recognizes as JSON
  strata::trace::Trace trace;
  std::string error;
  const std::string input = argv[1];
  if (!strata::trace::open_traces({&input, 1}, &trace, &error, options) ||
      !strata::trace::save_trace(trace, argv[2], &error, argc == 4 ? std::atoi(argv[3]) : 3)) {
    std::fprintf(stderr, "bench_import_file: %s\n", error.c_str());
    return 1;
  }
  return 0;
}
