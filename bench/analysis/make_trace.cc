// Writes a generated trace (bench::synthetic_gpu_trace) of about N spans to a file, for load and
// memory measurements at realistic sizes (scripts/load_memory.sh):
//   make_trace N OUT.strata [start|end]
// `end` writes the spans in the order a recording writes them (each span when it ends), so loading
// has to sort; `start` (default) writes them already sorted by start.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "synthetic_trace.h"
#include "trace/trace_saver.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: make_trace N OUT.strata [start|end]\n");
    return 2;
  }
  const size_t n = std::strtoull(argv[1], nullptr, 10);
  const std::string order = argc > 3 ? argv[3] : "start";
  if (order != "start" && order != "end") {
    std::fprintf(stderr, "make_trace: order '%s' is not start or end\n", order.c_str());
    return 2;
  }
  strata::trace::Trace t = strata::bench::synthetic_gpu_trace(n);
  if (order == "end") {
    std::vector<uint32_t> idx(t.spans.size());
    std::iota(idx.begin(), idx.end(), 0u);
    std::stable_sort(idx.begin(), idx.end(), [&](uint32_t a, uint32_t b) {
      const auto& x = t.spans[a];
      const auto& y = t.spans[b];
      return x.end_ns != y.end_ns ? x.end_ns < y.end_ns : x.start_ns > y.start_ns;  // inner ends first
    });
    std::vector<strata::SpanRecord> spans;
    std::vector<strata::AttrRecord> attrs;
    std::vector<uint32_t> attr_begin{0};
    spans.reserve(t.spans.size());
    attrs.reserve(t.attrs.size());
    attr_begin.reserve(t.spans.size() + 1);
    for (uint32_t i : idx) {
      spans.push_back(t.spans[i]);
      for (const auto& a : t.attributes(i)) attrs.push_back(a);
      attr_begin.push_back(static_cast<uint32_t>(attrs.size()));
    }
    t.spans = std::move(spans);
    t.attrs = std::move(attrs);
    t.attr_begin = std::move(attr_begin);
  }
  std::string error;
  if (!strata::trace::save_trace(t, argv[2], &error)) {
    std::fprintf(stderr, "make_trace: %s\n", error.c_str());
    return 1;
  }
  std::printf("%zu spans written to %s (%s order)\n", t.spans.size(), argv[2], order.c_str());
  return 0;
}
