// libFuzzer target: arbitrary bytes through the chunk reader, the native reader and the TraceBuilder
// (one sort, the tracks table and every pass of the span tree). Must never crash, hang or allocate
// without bound; every failure is an error line or a counted warning.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "format/chunk_reader.h"
#include "model/span_tree.h"
#include "model/trace_loader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  strata::format::ChunkReader reader;
  if (!reader.open(strata::format::memory_source(bytes), "fuzz-input")) return 0;
  strata::model::Trace trace;
  strata::model::TraceBuilder builder(&trace);
  std::string error;
  if (strata::model::load_chunks(reader, builder, &error)) {
    builder.finish();
    if (trace.tree().size() != trace.spans.size()) __builtin_trap();
    for (size_t i = 0; i < trace.spans.size(); ++i) {
      (void)trace.name(trace.spans[i]);
      for (const auto& a : trace.attributes(i)) (void)trace.attr_value_string(a);
    }
  }
  return 0;
}
