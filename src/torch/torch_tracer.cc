// PyTorch layer tracer: a global RecordFunction callback turns every framework op (aten::*, autograd
// nodes, user record_function scopes) into a Strata layer span on the thread that ran it, with the
// input shapes and the nn.Module path that the Python side (strata.torch) keeps per thread.
//
// Spans go through the C span API, so they nest under the model spans open on the same thread and
// take their timestamps from Strata's own clock (no clock-domain mapping needed). Loaded with ctypes
// by strata.torch after `import torch`; every entry point is extern "C".
#include <ATen/record_function.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "core/memory_keys.h"
#include "strata/strata.h"
#include "torch/memory_tracker.h"

namespace {

namespace torch_tracer = strata::torch_tracer;
namespace memory_keys = strata::memory_keys;

// One per traced op, from a per-thread free list: RecordFunction wants a heap object per op, and
// malloc/free was a visible share of the per-op cost. The list holds at most as many nodes as ops
// were ever open at once on the thread (nesting depth); they are not returned at thread exit.
struct SpanContext : at::ObserverContext {
  explicit SpanContext(strata_span_id id) : span(id) {}
  strata_span_id span;
  uint32_t depth = UINT32_MAX;  // its entry in the thread's open-op stack (UINT32_MAX: not tracked)
  SpanContext* next_free = nullptr;

  static void* operator new(size_t size);
  static void operator delete(void* p);
};

thread_local SpanContext* t_free_contexts = nullptr;

void* SpanContext::operator new(size_t size) {
  if (SpanContext* c = t_free_contexts; c != nullptr && size == sizeof(SpanContext)) {
    t_free_contexts = c->next_free;
    return c;
  }
  return ::operator new(size);
}

void SpanContext::operator delete(void* p) {
  // Trivially destructible storage: link it into the (possibly other) thread's list.
  auto* node = static_cast<SpanContext*>(p);
  node->next_free = t_free_contexts;
  t_free_contexts = node;
}

std::mutex g_mu;
bool g_enabled = false;
at::CallbackHandle g_handle = 0;
std::atomic<bool> g_record_shapes{true};
std::atomic<uint64_t> g_ops_recorded{0};

// The module path of the innermost nn.Module forward running on this thread ("" outside any).
thread_local std::string t_module;

// --- Memory per op (memory_tracker.h) -------------------------------------------------------------
// alloc_bytes on every op; the other memory attributes only on ops that allocated or freed
// something (absent: 0), so ops that touch no memory (views, in-place ops) pay one attribute.
void close_op(SpanContext* ctx) {
  torch_tracer::OpMemory m;
  if (ctx->depth == UINT32_MAX || !torch_tracer::pop_op(ctx->depth, ctx->span, &m)) return;
  if (m.alloc == 0 && m.freed == 0) {
    strata_span_set_int(ctx->span, memory_keys::kAllocBytes.data(), 0);
    return;
  }
  static const char* const kKeys[] = {
      memory_keys::kAllocBytes.data(),     memory_keys::kFreedBytes.data(),
      memory_keys::kNetAllocBytes.data(),  memory_keys::kSelfNetAllocBytes.data(),
      memory_keys::kPeakAllocBytes.data(), memory_keys::kPeakLiveBytes.data()};
  const int64_t values[] = {m.alloc, m.freed, m.alloc - m.freed, m.self_net, m.peak, m.peak_live};
  strata_span_set_ints(ctx->span, kKeys, values, m.peak_live >= 0 ? 6 : 5);
}

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // no locale, no format parsing
  out.append(buf, static_cast<size_t>(end - buf));
}

// "[[1,3,224,224],[64,3,7,7],[]]": one entry per input; tensors give their sizes, a list of tensors
// its shapes, anything else "[]" (the convention of torch.autograd.profiler's input_shapes).
void format_shapes(const at::RecordFunction& fn, std::string& out) {
  out.clear();
  out.push_back('[');
  bool first = true;
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) out.push_back(',');
    first = false;
    out.push_back('[');
    if (v.isTensor()) {
      const at::Tensor& t = v.toTensor();
      if (t.defined()) {
        bool first_dim = true;
        for (int64_t d : t.sizes()) {
          if (!first_dim) out.push_back(',');
          first_dim = false;
          append_int(out, d);
        }
      }
    } else if (v.isTensorList()) {
      bool first_t = true;
      for (const at::Tensor& t : v.toTensorVector()) {
        if (!first_t) out.push_back(',');
        first_t = false;
        out.push_back('[');
        if (t.defined()) {
          bool first_dim = true;
          for (int64_t d : t.sizes()) {
            if (!first_dim) out.push_back(',');
            first_dim = false;
            append_int(out, d);
          }
        }
        out.push_back(']');
      }
    }
    out.push_back(']');
  }
  out.push_back(']');
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (strata_level_enabled(STRATA_LEVEL_LAYER) == 0) return nullptr;
  const char* name = fn.name();
  const size_t len = std::strlen(name);
  // Ops that copy tensor data are typed apart from compute ops here, where the name is PyTorch's.
  const auto activity = strata::framework_op_activity(std::string_view(name, len));
  strata_span_id id = strata_span_begin_as(name, len, STRATA_LEVEL_LAYER, static_cast<int>(activity));
  if (id == 0) return nullptr;
  if (g_record_shapes.load(std::memory_order_relaxed) && fn.num_inputs() > 0) {
    thread_local std::string shapes;
    format_shapes(fn, shapes);
    strata_span_set_string(id, strata::attr_keys::kShapes.data(), shapes.c_str());
  }
  if (!t_module.empty()) strata_span_set_string(id, strata::attr_keys::kModule.data(), t_module.c_str());
  g_ops_recorded.fetch_add(1, std::memory_order_relaxed);
  auto ctx = std::make_unique<SpanContext>(id);
  ctx->depth = torch_tracer::push_op(id);
  return ctx;
}

void on_op_end(const at::RecordFunction&, at::ObserverContext* observer) {
  if (observer == nullptr) return;
  auto* ctx = static_cast<SpanContext*>(observer);
  close_op(ctx);
  strata_span_end(ctx->span);
}

}  // namespace

extern "C" {

// Starts tracing every thread's ops. Returns 1 when the callback is installed (or already was).
__attribute__((visibility("default"))) int strata_torch_enable(int record_shapes) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_record_shapes.store(record_shapes != 0, std::memory_order_relaxed);
  if (g_enabled) return 1;
  torch_tracer::start_memory_tracking();
  at::RecordFunctionCallback callback(on_op_start, on_op_end);
  callback.needsInputs(record_shapes != 0)
      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
               at::RecordScope::TORCHSCRIPT_FUNCTION, at::RecordScope::USER_SCOPE});
  g_handle = at::addGlobalCallback(callback);
  g_enabled = true;
  return 1;
}

__attribute__((visibility("default"))) void strata_torch_disable(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_enabled) return;
  at::removeCallback(g_handle);
  torch_tracer::stop_memory_tracking();
  g_enabled = false;
}

// Benchmark seam (bench/torch/model_overhead.py): installs a callback that records nothing, with the
// same scopes and input capture as strata_torch_enable, so what PyTorch's RecordFunction machinery
// costs by itself can be told apart from what Strata adds. Undone by strata_torch_disable.
__attribute__((visibility("default"))) int strata_torch_enable_empty(int needs_inputs) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_enabled) return 0;
  at::RecordFunctionCallback callback(
      [](const at::RecordFunction&) -> std::unique_ptr<at::ObserverContext> { return nullptr; },
      [](const at::RecordFunction&, at::ObserverContext*) {});
  callback.needsInputs(needs_inputs != 0)
      .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
               at::RecordScope::TORCHSCRIPT_FUNCTION, at::RecordScope::USER_SCOPE});
  g_handle = at::addGlobalCallback(callback);
  g_enabled = true;
  return 1;
}

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
