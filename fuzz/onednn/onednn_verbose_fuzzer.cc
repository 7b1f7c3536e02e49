// Fuzzes the oneDNN verbose capture's text path: arbitrary printf output, cut into pieces as a
// program might print it -> LineAssembler -> parse_verbose_line -> shapes, data type, placement.
// Checks what the capture relies on: every byte comes out as exactly one line (or stays held),
// every view points into the line it came from, exec lines have a primitive and a finite,
// non-negative duration, a placement never ends after the arrival time, and every line is counted
// once by cause.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "onednn/verbose_parser.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

bool inside(std::string_view part, std::string_view whole) {
  return part.empty() || (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata::onednn;
  if (size < 1) return 0;
  // First byte: where to cut the rest into printf pieces (0: one piece).
  const size_t cut = data[0];
  std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
  LineAssembler assembler;
  VerboseStats stats;
  size_t bytes_out = 0, lines = 0;
  std::string shapes;
  auto on_line = [&](std::string_view line) {
    ++lines;
    bytes_out += line.size();
    VerboseLine v = parse_verbose_line(line);
    stats.count(v);
    for (std::string_view f : {v.marker, v.version, v.component, v.operation, v.engine, v.primitive, v.impl,
                               v.prop_kind, v.mds, v.attrs, v.aux, v.desc})
      check(inside(f, line));
    check((v.event == VerboseEvent::kMalformed) == (v.malformed != Malformed::kNone));
    check((v.event == VerboseEvent::kNotVerbose) == v.marker.empty());
    if (v.event == VerboseEvent::kExec) {
      check(!v.primitive.empty());
      check(std::isfinite(v.duration_ms) && v.duration_ms >= 0);
      if (v.has_timestamp) check(v.timestamp_ns >= 0);
      const int64_t now = 5'000'000'000'000;
      Placement p = place_execution(v, now, now + (v.has_timestamp ? v.timestamp_ns % 7'000'000'000 : 0));
      check(p.start_ns <= p.end_ns && p.end_ns <= now);
      (void)first_dtype(v.mds);
      if (shapes_from_desc(v.primitive, v.prop_kind, v.desc, &shapes)) check(!shapes.empty());
      else check(shapes.empty());
      PrimitiveProblem problem;
      if (problem_from_verbose(v, &problem)) {
        PrimitiveCost cost = primitive_cost(problem);
        if (cost.flops) check(*cost.flops >= 0);  // never NaN, never negative
        if (cost.bytes) check(*cost.bytes > 0);
      }
    }
  };
  if (cut == 0) {
    assembler.feed(text, on_line);
  } else {
    for (size_t pos = 0; pos < text.size(); pos += cut) assembler.feed(text.substr(pos, cut), on_line);
  }
  // Every byte is a line's content, a newline, or still held.
  size_t newlines = 0;
  for (char c : text) newlines += c == '\n';
  const std::string held = assembler.take_pending();
  check(bytes_out + newlines + held.size() == text.size());
  check(stats.lines == lines);
  check(stats.exec + stats.create + stats.info + stats.other + stats.not_verbose + stats.malformed_total() ==
        stats.lines);
  // Shapes on arbitrary descriptors too (not only those behind a well-formed exec line).
  for (std::string_view kind : {"convolution", "pooling", "inner_product", "matmul", "reorder", "eltwise"})
    if (shapes_from_desc(kind, text.size() % 2 ? "forward_inference" : "backward_data", text, &shapes))
      check(!shapes.empty());
  return 0;
}
