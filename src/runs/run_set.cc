#include "runs/run_set.h"

#include <algorithm>

namespace strata::runs {

void append_trace(trace::Trace& dst, const trace::Trace& src, const Tags& tags) {
  std::vector<uint16_t> process_map(src.processes.size());
  for (size_t p = 0; p < src.processes.size(); ++p) {
    trace::Process copy = src.processes[p];
    for (const auto& [key, value] : tags) copy.properties.set(key, value);
    process_map[p] = dst.add_process(std::move(copy));
  }
  // String ids differ between pools: translate each once.
  std::vector<uint32_t> string_map(src.strings.size(), UINT32_MAX);
  auto map_string = [&](uint32_t id) {
    if (id >= string_map.size()) return dst.strings.intern(src.strings.get(id));
    if (string_map[id] == UINT32_MAX) string_map[id] = dst.strings.intern(src.strings.get(id));
    return string_map[id];
  };
  dst.reserve(dst.spans.size() + src.spans.size(), dst.attrs.size() + src.attrs.size());
  std::vector<AttrRecord> attrs;
  for (size_t i = 0; i < src.spans.size(); ++i) {
    SpanRecord span = src.spans[i];
    span.name = map_string(span.name);
    if (span.process < process_map.size()) span.process = process_map[span.process];
    attrs.assign(src.attributes(i).begin(), src.attributes(i).end());
    for (AttrRecord& a : attrs) {
      a.key = map_string(a.key);
      if (a.type == static_cast<uint8_t>(AttrType::kString))
        a.value.u = map_string(static_cast<uint32_t>(a.value.u));
    }
    dst.add_span(span, attrs);
  }
}

int64_t median_ns(std::vector<int64_t> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

}  // namespace strata::runs
