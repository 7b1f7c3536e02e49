// Hand-built traces with known answers, shared by the unit tests (which check the numbers) and the
// golden tests (which pin the full CSV output). Every duration is a round number of microseconds
// so expected values can be worked out by hand; the comments in fixture_traces.cc give them. Spans
// carry activity types and canonical attribute keys, as today's tracers write them; the committed
// tests/golden/inputs/*.trace files were written from the format 1.0 versions (types unknown, keys
// "type", "shape") and reach the same goldens through the loader's upgrade.
#pragma once

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "trace/trace.h"

namespace strata::testing {

// CPU inference: model spans "predict" at batch 1, 2, 4, 8, five evaluations each. Evaluation
// latencies are L, L, L, L, 5L with L = 10, 12, 20, 39 ms; each evaluation runs five top-level
// layers (conv1 3s, relu1 1s, conv2 3s, add 1s, fc 2s, with s = latency / 20), conv layers contain
// a nested aten::convolution (0.9 of the conv) holding one oneDNN library span (0.8 of the conv,
// flops 4e6 * batch, bytes 1e6 * batch). Layers carry alloc_bytes = 1e6 * batch * (index + 1).
trace::Trace cpu_model_trace();

// GPU inference on an "NVIDIA A100-SXM4-40GB": three evaluations at batch 2 (latency 10 ms), two
// layers each: "linear" (0..4 ms) launching sgemm (1 ms, 2e9 flops, 1e8 B read, 1e8 B written,
// occupancy 50%) and "relu" (5..7 ms) launching relu_kernel (0.5 ms, 1e7 flops, 4e7 B read,
// 4e7 B written, occupancy 25%). Launches are runtime_api spans inside the layer; kernels run on
// stream 7 and are linked by correlation id. Evaluation k starts at k * 20 ms.
trace::Trace gpu_model_trace();

}  // namespace strata::testing
