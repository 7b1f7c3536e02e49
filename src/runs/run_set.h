// Combining the traces of several runs of one command into one trace. Each run's processes are
// tagged in their properties ("run" = repetition index, "run.level" = deepest level of that run), so
// analyses can tell runs apart and summarize them (trimmed mean, median, ...).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "trace/trace.h"

namespace strata::runs {

using Tags = std::vector<std::pair<std::string, std::string>>;

// Appends every process, span and attribute of `src` to `dst` (strings re-interned, process indexes
// remapped); each appended process gets `tags` added to its properties.
void append_trace(trace::Trace& dst, const trace::Trace& src, const Tags& tags);

// Median of a non-empty list (the lower middle for even sizes is not used: mean of the two middles).
int64_t median_ns(std::vector<int64_t> values);

}  // namespace strata::runs
