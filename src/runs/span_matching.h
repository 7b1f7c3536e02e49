// Identifying "the same span" in two runs of one command, for leveled experimentation.
//
// A span's match key, seen at view level V (only spans at levels <= V exist in a run recorded at V):
//   key(s) = H(key(a), level(s), name(s), k)
// where a is s's nearest ancestor whose level is <= V (deeper ancestors are skipped, since a
// shallower run never recorded them), or, for a root, H(process ordinal, thread ordinal); and k is
// the occurrence index of s among the spans with the same a, level and name, in start order.
// Process ordinal: rank of the process by start time within its run; thread ordinal: rank of the
// thread by its first span within the process. So "the 3rd aten::conv2d under the 2nd predict of
// the main thread of the first process" matches across runs whatever the span ids, pids or tids.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/trace.h"

namespace strata::runs {

inline constexpr uint64_t kNoKey = 0;

// One key per span of `trace` (kNoKey for spans deeper than `view_level`).
std::vector<uint64_t> match_keys(const trace::Trace& trace, int view_level);

}  // namespace strata::runs
