// libstrata_torch_rt.so: the PyTorch layer tracer's part that needs no PyTorch headers, built with
// Strata. The bridge (bridge/torch_bridge.cc, compiled against the running torch) calls it through
// the C interface of bridge/strata_torch_bridge.h for every op; strata.torch (Python) calls the
// strata_torch_* functions below through ctypes.
//
// Spans go through the C span API, so they nest under the model spans open on the same thread and
// take their timestamps from Strata's own clock (no clock-domain mapping needed).
#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <string_view>

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/memory_keys.h"
#include "strata/strata.h"
#include "torch/bridge/strata_torch_bridge.h"
#include "torch/memory_tracker.h"

namespace {

namespace torch_tracer = strata::torch_tracer;
namespace memory_keys = strata::memory_keys;

std::atomic<uint64_t> g_ops_recorded{0};

// The module path of the innermost nn.Module forward running on this thread ("" outside any).
thread_local std::string t_module;

// alloc_bytes on every op; the other memory attributes only on ops that allocated or freed
// something (absent: 0), so ops that touch no memory (views, in-place ops) pay one attribute.
// Without memory tracking (the python-hooks route) the op is only popped: no attribute, not a 0.
void close_op_memory(strata_span_id span, uint32_t depth) {
  torch_tracer::OpMemory m;
  if (depth == UINT32_MAX || !torch_tracer::pop_op(depth, span, &m)) return;
  if (!torch_tracer::memory_tracking()) return;
  if (m.alloc == 0 && m.freed == 0) {
    strata_span_set_int(span, memory_keys::kAllocBytes.data(), 0);
    return;
  }
  static const char* const kKeys[] = {
      memory_keys::kAllocBytes.data(),     memory_keys::kFreedBytes.data(),
      memory_keys::kNetAllocBytes.data(),  memory_keys::kSelfNetAllocBytes.data(),
      memory_keys::kPeakAllocBytes.data(), memory_keys::kPeakLiveBytes.data()};
  const int64_t values[] = {m.alloc, m.freed, m.alloc - m.freed, m.self_net, m.peak, m.peak_live};
  strata_span_set_ints(span, kKeys, values, m.peak_live >= 0 ? 6 : 5);
}

}  // namespace

extern "C" {

// --- The bridge's interface (bridge/strata_torch_bridge.h) ----------------------------------------

__attribute__((visibility("default"))) int strata_torch_rt_abi(void) { return STRATA_TORCH_BRIDGE_ABI; }

__attribute__((visibility("default"))) int strata_torch_rt_layer_enabled(void) {
  return strata_level_enabled(STRATA_LEVEL_LAYER);
}

__attribute__((visibility("default"))) uint64_t strata_torch_rt_op_begin(const char* name, size_t name_len,
                                                                         const char* shapes,
                                                                         uint32_t* depth) {
  *depth = UINT32_MAX;
  // Ops that copy tensor data are typed apart from compute ops here, where the name is PyTorch's.
  const auto activity = strata::framework_op_activity(std::string_view(name, name_len));
  strata_span_id id = strata_span_begin_as(name, name_len, STRATA_LEVEL_LAYER, static_cast<int>(activity));
  if (id == 0) return 0;
  if (shapes != nullptr) strata_span_set_string(id, strata::attr_keys::kShapes.data(), shapes);
  if (!t_module.empty()) strata_span_set_string(id, strata::attr_keys::kModule.data(), t_module.c_str());
  g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  *depth = torch_tracer::push_op(id);
  return id;
}

__attribute__((visibility("default"))) void strata_torch_rt_op_end(uint64_t span, uint32_t depth) {
  close_op_memory(span, depth);
  strata_span_end(span);
}

__attribute__((visibility("default"))) void strata_torch_rt_memory_start(
    strata_torch_deleter inner_raw_deleter) {
  torch_tracer::start_memory_tracking(inner_raw_deleter);
}

__attribute__((visibility("default"))) void strata_torch_rt_memory_stop(void) {
  torch_tracer::stop_memory_tracking();
}

__attribute__((visibility("default"))) int strata_torch_rt_memory_tracking(void) {
  return torch_tracer::memory_tracking() ? 1 : 0;
}

__attribute__((visibility("default"))) int strata_torch_rt_on_alloc(void* data, int64_t size,
                                                                    void* inner_context,
                                                                    strata_torch_deleter inner_deleter) {
  return torch_tracer::on_alloc(data, size, inner_context, inner_deleter) ? 1 : 0;
}

__attribute__((visibility("default"))) void strata_torch_rt_on_free(void* data) {
  torch_tracer::on_free(data);
}

// --- strata.torch's interface (ctypes) -------------------------------------------------------------

// Sets the module path attached to the calling thread's next ops (null or "" clears it).
__attribute__((visibility("default"))) void strata_torch_set_module(const char* path) {
  if (path == nullptr)
    t_module.clear();
  else
    t_module.assign(path);
}

__attribute__((visibility("default"))) uint64_t strata_torch_ops_recorded(void) {
  return g_ops_recorded.load(std::memory_order_relaxed);
}

// Memory tracker state, for strata.torch.memory_stats(): fills up to `n` values in the order of
// torch_tracer::MemoryStats (live, peak live, allocations, frees, timeline samples, ops too deep,
// untracked frees, tracking) and returns how many it wrote.
__attribute__((visibility("default"))) int strata_torch_memory_stats(int64_t* out, int n) {
  if (out == nullptr || n <= 0) return 0;
  torch_tracer::MemoryStats s = torch_tracer::memory_stats();
  const int64_t values[] = {s.live_bytes,       s.peak_live_bytes, s.allocations,     s.frees,
                            s.timeline_samples, s.ops_too_deep,    s.untracked_frees, s.tracking};
  int count = std::min<int>(n, static_cast<int>(sizeof(values) / sizeof(values[0])));
  for (int i = 0; i < count; ++i) out[i] = values[i];
  return count;
}

}  // extern "C"
