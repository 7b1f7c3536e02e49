// Generated ranks of one job for the merge and cross-rank benchmarks: each rank the same generated
// GPU run (bench::synthetic_gpu_trace) with every tenth kernel an NCCL all-reduce, on its own clock
// (an offset within +-5 s, a drift within +-50 ppm) with 3 us of jitter on every collective end.
#pragma once

#include <cstddef>

#include "trace/trace.h"

namespace strata::bench {

trace::Trace rank_trace(int rank, size_t target_spans);

}  // namespace strata::bench
