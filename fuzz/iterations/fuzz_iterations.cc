// Fuzzes the miner's input path: arbitrary spans (names, threads, streams, levels, times, copies)
// -> stream classification -> op sequence -> pattern mining -> metrics -> diagnosis -> tables.
// Checks the invariants every caller relies on: iterations ordered, disjoint, inside the sequence,
// extra ops within them, every op accounted for (inside an iteration, before, after or between),
// nested repetition inside the iteration's template. "Optimizer.step#..." exercises the step marks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "analysis/iterations/iterations_analysis.h"
#include "core/level.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace strata;
  if (size < 2) return 0;
  trace::Trace trace;
  trace::Process p;
  p.pid = 1;
  trace.add_process(p);
  static const char* kNames[] = {"aten::linear",
                                 "aten::relu",
                                 "aten::add_",
                                 "aten::to",
                                 "aten::copy_",
                                 "Memcpy HtoD (Pageable -> Device)",
                                 "Memcpy DtoH (Device -> Pageable)",
                                 "Memset (Device)",
                                 "gemm_kernel",
                                 "aten::mse_loss",
                                 "Optimizer.step#SGD.step",
                                 "x",
                                 "y",
                                 "z",
                                 "w",
                                 "v"};
  analysis::iterations::IterationsOptions options;
  options.miner.iterations = data[0] % 4 == 0 ? data[1] % 16 : 0;
  options.miner.max_extra_ops = data[1] % 3 == 0 ? data[1] % 7 : -1;
  if (data[0] & 0x20) {  // the sampled path (windows, growth, matching the whole) on short inputs
    options.miner.sample_ops = 4 + data[1] % 61;
    options.miner.sample_windows = 1 + (data[0] >> 6);
  }
  const bool device = data[0] & 0x10;
  int64_t t = 0;
  uint64_t id = 1;
  for (size_t i = 2; i + 3 <= size; i += 3) {
    SpanRecord s;
    s.span_id = id++;
    s.name = trace.strings.intern(kNames[data[i] & 15]);
    s.start_ns = t + (data[i + 1] & 0x0f) * 100;
    s.end_ns = s.start_ns + (data[i + 1] >> 4) * 50 + (data[i + 2] & 1 ? -1 : 1);  // occasionally inverted
    t = s.start_ns + ((data[i + 2] >> 1) & 3) * 40;
    s.tid = (data[i] >> 4) & 1;
    s.level = static_cast<uint8_t>(device && (data[i + 2] & 0x20) ? Level::kDevice : Level::kLayer);
    s.kind = static_cast<uint8_t>(s.level == static_cast<uint8_t>(Level::kDevice) ? SpanKind::kExecution : SpanKind::kSpan);
    if (s.level == static_cast<uint8_t>(Level::kDevice)) {
      s.device = 0;
      s.stream = 7 + ((data[i] >> 5) & 3);
    }
    const AttrRecord bytes[] = {trace.int_attr("bytes", data[i + 2])};
    trace.add_span(s, data[i + 2] & 0x40 ? std::span<const AttrRecord>(bytes) : std::span<const AttrRecord>());
  }
  analysis::iterations::IterationsReport report;
  std::string error;
  if (!analysis::iterations::run_iterations(trace, options, &report, &error)) {
    check(!error.empty());
    return 0;
  }
  const auto& m = report.mining;
  int64_t inside = 0, prev_last = -1;
  for (const auto& it : m.iterations) {
    check(it.first_op > prev_last && it.first_op <= it.last_op && it.last_op < m.ops);
    check(it.loop >= 0 && static_cast<size_t>(it.loop) < m.loops.size());
    check(it.inner_extra_ops >= 0 && it.trailing_extra_ops >= 0 &&
          it.inner_extra_ops + it.trailing_extra_ops <= it.last_op - it.first_op + 1);
    inside += it.last_op - it.first_op + 1;
    prev_last = it.last_op;
  }
  for (const auto& loop : m.loops)  // nested repetition lies inside the iteration's template
    for (const auto& r : loop.nested)
      check(r.offset >= 0 && r.unit_ops >= 1 && r.copies >= 1 && r.copies_min <= r.copies &&
            r.copies <= r.copies_max && r.offset < static_cast<int64_t>(loop.cycle.size()));
  check(inside + m.ops_before + m.ops_after + m.ops_between == m.ops);
  check(report.metrics.iterations.size() == m.iterations.size());
  const auto tables = analysis::iterations::report_tables(trace, report);
  check(!tables.empty());
  analysis::iterations::add_iteration_spans(&trace, report);
  return 0;
}
