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
  std::map<uint8_t, uint64_t> spans_per_activity;  // ActivityType value -> spans
  std::map<std::pair<int64_t, uint8_t>, uint64_t> spans_per_process_level;  // (pid, level)
  std::map<std::string, uint64_t> drops;  // cause -> count, over all processes
  uint64_t unfinished = 0;
  int64_t first_ns = 0;
  int64_t last_ns = 0;
};

TraceSummary summarize(const Trace& trace);

}  // namespace strata::model
