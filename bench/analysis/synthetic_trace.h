// A generated trace shaped like a recorded GPU inference run, for the pipeline benchmark: model
// spans ("predict", batch attribute), top-level layers with one nested op each, a runtime launch per
// layer and a device kernel per launch (correlation id, flops/bytes metrics).
#pragma once

#include <cstddef>

#include "trace/trace.h"

namespace strata::bench {

// About `target_spans` spans: evaluations of 1 + 4 x layers_per_eval spans until the target is met.
trace::Trace synthetic_gpu_trace(size_t target_spans, size_t layers_per_eval = 50);

}  // namespace strata::bench
