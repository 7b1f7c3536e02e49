// PyTorch layer tracer: a global RecordFunction callback turns every framework op (aten::*, autograd
// nodes, user record_function scopes) into a Strata layer span on the thread that ran it, with the
// input shapes and the nn.Module path that the Python side (strata.torch) keeps per thread.
//
// Spans go through the C span API, so they nest under the model spans open on the same thread and
// take their timestamps from Strata's own clock (no clock-domain mapping needed). Loaded with ctypes
// by strata.torch after `import torch`; every entry point is extern "C".
#include <ATen/record_function.h>
#include <c10/core/CPUAllocator.h>

#include <atomic>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "core/activity_type.h"
#include "core/attr_keys.h"
#include "strata/strata.h"

namespace {

// One per traced op, from a per-thread free list: RecordFunction wants a heap object per op, and
// malloc/free was a visible share of the per-op cost. The list holds at most as many nodes as ops
// were ever open at once on the thread (nesting depth); they are not returned at thread exit.
struct SpanContext : at::ObserverContext {
  explicit SpanContext(strata_span_id id) : span(id) {}
  strata_span_id span;
  uint32_t depth = UINT32_MAX;  // its entry in t_open_ops (UINT32_MAX: not tracked)
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

// --- Allocated memory per op (XSP Table I: a layer's allocated memory) ------------------------------
// A wrapper around PyTorch's CPU allocator adds each allocation's size to the innermost op open on
// the allocating thread; an op's total (its nested ops included) becomes its "alloc_bytes"
// attribute: bytes of tensor memory the op allocated (gross: frees are not subtracted; memory that
// oneDNN allocates for itself does not pass through this allocator). The wrapper, not the c10
// memory-reporting hook, because that hook shares torch.profiler's thread-local slot, and the
// profiler's own code would then mistake Strata's object for its state.
//
// Values, not pointers, on a fixed per-thread stack: an op whose end is reported on another thread
// leaves a stale entry that its ancestor's end folds in, never a dangling pointer; and no thread_local
// destructor runs, so an allocation during thread teardown is still safe.
struct OpenOp {
  strata_span_id span;
  int64_t bytes;
};
constexpr uint32_t kMaxOpenOps = 64;  // deeper nesting is left untracked (no alloc_bytes)
thread_local OpenOp t_open_ops[kMaxOpenOps];
thread_local uint32_t t_open_depth = 0;

class CountingCpuAllocator final : public c10::Allocator {
 public:
  explicit CountingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}
  c10::DataPtr allocate(size_t n) const override {
    if (uint32_t d = t_open_depth; d > 0) t_open_ops[d - 1].bytes += static_cast<int64_t>(n);
    return inner_->allocate(n);  // its DataPtr (and deleter) unchanged: frees never come back here
  }
  c10::DeleterFnPtr raw_deleter() const override { return inner_->raw_deleter(); }

 private:
  c10::Allocator* inner_;
};

// Installed once, at the first enable, and left in place (tensors it handed out outlive any
// disable); with no op open on a thread it costs one thread-local load per allocation.
void install_counting_allocator() {
  static CountingCpuAllocator* counting = nullptr;
  if (counting != nullptr) return;
  c10::Allocator* current = c10::GetCPUAllocator();
  counting = new CountingCpuAllocator(current);
  // The registry keeps the allocator of the highest priority seen; PyTorch registers its own at 0.
  c10::SetCPUAllocator(counting, 0);
  if (c10::GetCPUAllocator() != counting) c10::SetCPUAllocator(counting, UINT8_MAX);
}

void open_op(SpanContext* ctx) {
  if (t_open_depth >= kMaxOpenOps) return;
  ctx->depth = t_open_depth;
  t_open_ops[t_open_depth++] = {ctx->span, 0};
}

void close_op(SpanContext* ctx) {
  uint32_t d = ctx->depth;
  if (d >= t_open_depth || t_open_ops[d].span != ctx->span) return;  // ended on another thread
  int64_t bytes = 0;
  for (uint32_t k = d; k < t_open_depth; ++k) bytes += t_open_ops[k].bytes;  // + stale entries above
  t_open_depth = d;
  if (d > 0) t_open_ops[d - 1].bytes += bytes;  // a parent's total includes its nested ops
  strata_span_set_int(ctx->span, "alloc_bytes", bytes);
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
  open_op(ctx.get());
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
  install_counting_allocator();
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

}  // extern "C"
