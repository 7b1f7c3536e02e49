// Exports of a loaded trace: Chrome Trace Event JSON (Perfetto UI, chrome://tracing) and flat
// span tables (JSON, CSV). Writers stream into an std::ostream.
#pragma once

#include <ostream>

#include "trace/trace.h"

namespace strata::exporter {

// Chrome Trace Event format: complete ("X") events per span, process/thread names, device streams
// as named tracks, counters, instants, and flow arrows from each launch to its execution(s) by
// correlation id. Timestamps in µs from the trace's first event.
void write_chrome_trace(const trace::Trace& trace, std::ostream& out);

// One JSON object per span (a JSON array), every field and attribute included.
void write_spans_json(const trace::Trace& trace, std::ostream& out);

// One CSV row per span; attributes in a final column as JSON.
void write_spans_csv(const trace::Trace& trace, std::ostream& out);

}  // namespace strata::exporter
