#include "nsys_fuzz_target.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "import/nsys_sqlite_reader.h"
#include "trace/span_tree.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::fuzz {

void run_nsys_import(std::string_view bytes) {
  char path[] = "/tmp/strata_nsys_fuzz_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return;
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n <= 0) break;
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  trace::Trace trace;
  std::string error;
  {
    trace::TraceBuilder builder(&trace);
    if (import::import_nsys_sqlite(path, builder, &error, nullptr)) {
      builder.finish({.structure = false, .tree = {}});
      for (const SpanRecord& s : trace.spans)
        if (!time_in_range(s.start_ns) || !time_in_range(s.end_ns) || s.process >= trace.processes.size())
          std::abort();
      trace::SpanTree tree = trace::build_span_tree(trace);
      if (tree.size() != trace.spans.size()) std::abort();
    } else if (error.empty() || error.find('\n') != std::string::npos) {
      std::abort();  // a failure must come with exactly one error line
    }
  }
  ::unlink(path);
}

}  // namespace strata::fuzz
