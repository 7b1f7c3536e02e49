// The C interface between the PyTorch bridge and libstrata_torch_rt.so.
//
// The bridge (torch_bridge.cc) is the only code that sees PyTorch's C++ headers: it is compiled
// against whichever torch the traced program runs (at first use, by strata/_torch_bridge.py; or at
// Strata's build time, against Debian's). Everything else of the layer tracer (span attributes,
// nn.Module paths, memory accounting and its timeline) lives in libstrata_torch_rt.so, built with
// Strata. Only C types cross this line, so the bridge may be built with either value of
// _GLIBCXX_USE_CXX11_ABI (PyTorch's pip wheels before 2.7 used the old ABI) and by another compiler.
#ifndef STRATA_TORCH_BRIDGE_H_
#define STRATA_TORCH_BRIDGE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped whenever a declaration below changes: a cached bridge built against another version is
// rebuilt (the version is part of its cache key) and a mismatch found at load time is refused.
#define STRATA_TORCH_BRIDGE_ABI 1

typedef void (*strata_torch_deleter)(void*);

// STRATA_TORCH_BRIDGE_ABI of the runtime the bridge was loaded with.
int strata_torch_rt_abi(void);

// 1 when layer spans are being recorded now (cheap: checked before formatting shapes).
int strata_torch_rt_layer_enabled(void);

// Opens the layer span of one framework op on the calling thread, with its input shapes (null: not
// recorded) and the thread's current nn.Module path, and pushes it on the thread's open-op stack.
// Returns the span (0: not recorded) and its stack depth in *depth.
uint64_t strata_torch_rt_op_begin(const char* name, size_t name_len, const char* shapes, uint32_t* depth);
// Writes the op's memory attributes and closes its span.
void strata_torch_rt_op_end(uint64_t span, uint32_t depth);

// Memory accounting of PyTorch's CPU allocator (the bridge wraps the allocator; the runtime keeps
// the table of live blocks). `inner_raw_deleter` frees blocks allocated while tracking was off.
void strata_torch_rt_memory_start(strata_torch_deleter inner_raw_deleter);
void strata_torch_rt_memory_stop(void);
int strata_torch_rt_memory_tracking(void);
// A block of `size` bytes was allocated by the inner allocator. Returns 1 when it is tracked: the
// runtime then owns (inner_context, inner_deleter) and frees it in strata_torch_rt_on_free; 0 when
// it is not (tracking off, or no memory for the table): the caller keeps the block's deleter.
int strata_torch_rt_on_alloc(void* data, int64_t size, void* inner_context,
                             strata_torch_deleter inner_deleter);
// The deleter of tracked blocks: accounts the free and hands the block to its inner deleter.
void strata_torch_rt_on_free(void* data);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // STRATA_TORCH_BRIDGE_H_
