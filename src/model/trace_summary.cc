#include "model/trace_summary.h"

#include <algorithm>
#include <limits>

namespace strata::model {

TraceSummary summarize(const Trace& trace) {
  TraceSummary s;
  s.first_ns = std::numeric_limits<int64_t>::max();
  s.last_ns = std::numeric_limits<int64_t>::min();
  for (const SpanRecord& span : trace.spans) {
    s.spans_per_level[span.level] += 1;
    s.spans_per_kind[span.kind] += 1;
    s.spans_per_activity[span.activity] += 1;
    s.spans_per_process_level[{trace.process(span).pid, span.level}] += 1;
    if (span.flags & kSpanFlagUnfinished) s.unfinished += 1;
    s.first_ns = std::min(s.first_ns, span.start_ns);
    s.last_ns = std::max(s.last_ns, span.end_ns);
  }
  if (trace.spans.empty()) s.first_ns = s.last_ns = 0;
  for (const Process& p : trace.processes)
    for (const auto& [cause, count] : p.drops) s.drops[cause] += count;
  return s;
}

}  // namespace strata::model
