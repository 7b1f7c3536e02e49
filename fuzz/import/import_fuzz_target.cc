#include "import_fuzz_target.h"

#include <cstdlib>
#include <string>

#include "import/importer.h"
#include "model/span_tree.h"

namespace strata::fuzz {

void run_import(std::string_view bytes, const char* format) {
  model::Trace trace;
  std::string error;
  import::ImportOptions options;
  options.format = format;
  if (import::import_buffer(bytes, "fuzz", &trace, &error, options)) {
    for (const SpanRecord& s : trace.spans)
      if (!time_in_range(s.start_ns) || !time_in_range(s.end_ns) || s.process >= trace.processes.size())
        std::abort();  // what every loaded trace guarantees the analyses
    model::SpanTree tree = model::build_span_tree(trace);
    if (tree.size() != trace.spans.size()) std::abort();
    for (size_t i = 0; i < tree.size(); ++i) (void)tree.ancestor_at_level(trace, i, 30);
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    std::abort();  // a failure must come with exactly one error line
  }
}

}  // namespace strata::fuzz
