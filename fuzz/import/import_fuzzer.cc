// libFuzzer entry: any bytes through one importer, then the correlation engine over the result.
// Seeds: tests/import/data/*.json and the Kineto fixtures (see fuzz/import/README.md).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "import/importer.h"
#include "model/span_tree.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  strata::model::Trace trace;
  std::string error;
  strata::import::ImportOptions options;
  options.format = STRATA_FUZZ_FORMAT;
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (strata::import::import_buffer(bytes, "fuzz", &trace, &error, options)) {
    strata::model::SpanTree tree = strata::model::build_span_tree(trace);
    if (tree.size() != trace.spans.size()) __builtin_trap();
    for (size_t i = 0; i < tree.size(); ++i) (void)tree.ancestor_at_level(trace, i, 30);
  } else if (error.empty() || error.find('\n') != std::string::npos) {
    __builtin_trap();  // a failure must come with exactly one error line
  }
  return 0;
}
