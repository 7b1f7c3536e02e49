// Memory accounting of the PyTorch layer tracer (XSP Table I: a layer's allocated memory).
//
// The bridge's wrapper around PyTorch's CPU allocator reports every allocation and free of tensor
// memory here (bridge/strata_torch_bridge.h), free of PyTorch types: each
// is added to the innermost traced op open on the thread where it happens (torch.profiler's rule),
// and to the process-wide level of live bytes, which is written as a counter track (the memory
// timeline). Definitions of the per-op values: docs/memory.md.
#pragma once

#include <cstdint>

#include "strata/strata.h"
#include "torch/bridge/strata_torch_bridge.h"

namespace strata::torch_tracer {

// One traced op's memory, on the thread that runs it.
struct OpMemory {
  strata_span_id span = 0;
  int64_t alloc = 0;       // bytes allocated while it ran (nested ops added when they end)
  int64_t freed = 0;       // bytes freed while it ran (same)
  int64_t self_net = 0;    // allocated - freed while it was the innermost open op
  int64_t peak = 0;        // highest (alloc - freed) reached since it began; >= 0
  int64_t peak_live = -1;  // highest process-wide live level right after one of its allocations
};

// Tracks every later allocation the bridge reports; `inner_raw_deleter` (kept when null) frees the
// blocks allocated before tracking began. The timeline is sampled every `STRATA_MEMORY_INTERVAL_US` (default
// 100; 0: every change), with each interval's highest level kept at its own time.
void start_memory_tracking(strata_torch_deleter inner_raw_deleter);
// Writes what the timeline still holds and the counts; later allocations are not tracked (frees
// of tracked ones still are).
void stop_memory_tracking();

bool memory_tracking();
// A block allocated by the inner allocator: true when it is tracked (the table then owns its
// context and deleter), false when not (tracking off, no memory for the table).
bool on_alloc(void* data, int64_t size, void* inner_context, strata_torch_deleter inner_deleter);
// The deleter of tracked blocks (and of blocks the inner allocator made while tracking was off).
void on_free(void* data);

// The calling thread's stack of open traced ops. push_op returns the op's depth, or UINT32_MAX when
// nesting is too deep to track (its memory then counts toward the enclosing op; counted).
uint32_t push_op(strata_span_id span);
// Pops the op at `depth` (and folds any op above it that ended on another thread into it) and
// returns its totals; false when the op is not on this thread's stack at that depth.
bool pop_op(uint32_t depth, strata_span_id span, OpMemory* out);

struct MemoryStats {
  int64_t live_bytes = 0;       // tracked bytes alive now
  int64_t peak_live_bytes = 0;  // highest live level since tracking began
  int64_t allocations = 0;
  int64_t frees = 0;
  int64_t timeline_samples = 0;
  int64_t ops_too_deep = 0;
  int64_t untracked_frees = 0;  // frees of memory allocated while tracking was off
  int64_t tracking = 0;         // 1 while allocations are tracked
};
MemoryStats memory_stats();

}  // namespace strata::torch_tracer
