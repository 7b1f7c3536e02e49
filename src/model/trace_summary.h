// Counts over a loaded trace, shared by `strata record` (its closing summary) and `strata info`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "model/trace.h"

namespace strata::model {

struct TraceSummary {
  std::map<uint8_t, uint64_t> spans_per_level;
  std::map<uint8_t, uint64_t> spans_per_kind;
  std::map<std::pair<int64_t, uint8_t>, uint64_t> spans_per_process_level;  // (pid, level)
  // Dropped events and records by stat name (collector.buffer_full, import.malformed_event, or the
  // on-disk key of a cause this version does not know), summed over processes.
  std::map<std::string, uint64_t> drops;
  uint64_t unfinished = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

TraceSummary summarize(const Trace& trace);

}  // namespace strata::model
