// CPU samples in the Chrome export: one instant event per sample on its thread's track, named by
// the sample's leaf function, with the whole stack (root first) and the span it was taken in.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <utility>

#include "trace/trace.h"

namespace strata::exporter {

// Earliest sample time (INT64_MAX without samples).
int64_t first_sample_ns(const trace::Trace& trace);
// Appends the events (each preceded by ",\n" unless *first), and thread-name metadata for threads
// that have samples but no span (those not in `tracks`, pairs of (pid, tid)).
void append_sample_events(const trace::Trace& trace, int64_t origin_ns,
                          const std::set<std::pair<int64_t, int64_t>>& tracks, std::string* out, bool* first,
                          const std::function<void()>& maybe_flush);

}  // namespace strata::exporter
