// The PyTorch bridge of the layer tracer: a global RecordFunction callback turns every framework op
// (aten::*, autograd nodes, user record_function scopes) into a Strata layer span on the thread that
// ran it, and a wrapper around PyTorch's CPU allocator reports every allocation and free.
//
// This file is all of the layer tracer that includes PyTorch's headers, and it is kept that small on
// purpose: strata/_torch_bridge.py compiles it at first use against the torch the program runs
// (cached per torch version, ABI and compiler), and Strata's build compiles it once against
// Debian's torch (libstrata_torch.so). It talks to Strata only through strata_torch_bridge.h (C),
// so its C++ ABI need not match Strata's. Loaded with ctypes after `import torch`.
//
// Versions: written against PyTorch 1.13 (validated) and the 2.x API (not compiled here: no 2.x
// headers on the build machine); see TrackingCpuAllocator for the one difference known to matter.
#include <ATen/record_function.h>
#include <c10/core/Allocator.h>
#include <c10/core/CPUAllocator.h>
#include <torch/version.h>

#include <charconv>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "strata_torch_bridge.h"

#define STRATA_BRIDGE_STR2(x) #x
#define STRATA_BRIDGE_STR(x) STRATA_BRIDGE_STR2(x)

namespace {

// One per traced op, from a per-thread free list: RecordFunction wants a heap object per op, and
// malloc/free was a visible share of the per-op cost. The list holds at most as many nodes as ops
// were ever open at once on the thread (nesting depth); they are not returned at thread exit.
struct SpanContext : at::ObserverContext {
  SpanContext(uint64_t id, uint32_t d) : span(id), depth(d) {}
  uint64_t span;
  uint32_t depth;  // its entry in the thread's open-op stack (UINT32_MAX: not tracked)
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
bool g_record_shapes = true;  // set before the callback is installed; read only by it

void append_int(std::string& out, int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);  // no locale, no format parsing
  out.append(buf, static_cast<size_t>(end - buf));
}

void append_sizes(std::string& out, const at::Tensor& t) {
  out.push_back('[');
  if (t.defined()) {
    bool first = true;
    for (int64_t d : t.sizes()) {
      if (!first) out.push_back(',');
      first = false;
      append_int(out, d);
    }
  }
  out.push_back(']');
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
    if (v.isTensor()) {
      append_sizes(out, v.toTensor());
    } else if (v.isTensorList()) {
      out.push_back('[');
      bool first_t = true;
      for (const at::Tensor& t : v.toTensorVector()) {
        if (!first_t) out.push_back(',');
        first_t = false;
        append_sizes(out, t);
      }
      out.push_back(']');
    } else {
      out.append("[]");
    }
  }
  out.push_back(']');
}

std::unique_ptr<at::ObserverContext> on_op_start(const at::RecordFunction& fn) {
  if (strata_torch_rt_layer_enabled() == 0) return nullptr;
  const char* name = fn.name();
  const char* shapes = nullptr;
  if (g_record_shapes && fn.num_inputs() > 0) {
    thread_local std::string text;
    format_shapes(fn, text);
    shapes = text.c_str();
  }
  uint32_t depth = UINT32_MAX;
  uint64_t id = strata_torch_rt_op_begin(name, std::strlen(name), shapes, &depth);
  if (id == 0) return nullptr;
  return std::make_unique<SpanContext>(id, depth);
}

void on_op_end(const at::RecordFunction&, at::ObserverContext* observer) {
  if (observer == nullptr) return;
  auto* ctx = static_cast<SpanContext*>(observer);
  strata_torch_rt_op_end(ctx->span, ctx->depth);
}

// Hands out the inner allocator's memory under strata_torch_rt_on_free (so frees come back to the
// runtime's table) while tracking is on. Why a wrapper and not c10's memory-reporting hook: the hook
// lives in the thread-local slot torch.profiler uses for its own state (docs/memory.md).
//
// c10::Allocator changed in PyTorch 2.x (2.3, as far as known): allocate() lost its const and
// copy_data() became pure virtual. Rather than guess the release with #if, the wrapper declares
// allocate() both ways (the one matching the base class overrides it; the other is a plain
// overload) and defines copy_data() (an override where it exists, an unused member in 1.13).
class TrackingCpuAllocator final : public c10::Allocator {
 public:
  explicit TrackingCpuAllocator(c10::Allocator* inner) : inner_(inner) {}

  c10::DataPtr allocate(size_t n) const { return allocate_tracked(n); }
  c10::DataPtr allocate(size_t n) { return allocate_tracked(n); }

  // No `override` anywhere here: clang warns when only some overriding members say it.
  c10::DeleterFnPtr raw_deleter() const { return &strata_torch_rt_on_free; }

  void copy_data(void* dest, const void* src, std::size_t count) const { std::memcpy(dest, src, count); }

 private:
  c10::DataPtr allocate_tracked(size_t n) const {
    c10::DataPtr inner = inner_->allocate(n);
    void* data = inner.get();
    if (data == nullptr || strata_torch_rt_memory_tracking() == 0) return inner;
    const c10::Device device = inner.device();
    if (strata_torch_rt_on_alloc(data, static_cast<int64_t>(n), inner.get_context(), inner.get_deleter()) ==
        0)
      return inner;
    static_cast<void>(inner.release_context());  // the runtime's table owns the block now
    return {data, data, &strata_torch_rt_on_free, device};
  }

  c10::Allocator* inner_;
};

// Wraps the CPU allocator once (the wrapper stays: tensors outlive tracing) and returns the deleter
// of the allocator it wraps (for blocks allocated before tracking began).
strata_torch_deleter install_tracking_allocator() {
  static strata_torch_deleter inner_raw_deleter = [] {
    c10::Allocator* current = c10::GetCPUAllocator();
    strata_torch_deleter raw = current->raw_deleter();
    auto* tracking = new TrackingCpuAllocator(current);
    // The registry keeps the allocator of the highest priority seen; PyTorch registers its own at 0.
    c10::SetCPUAllocator(tracking, 0);
    if (c10::GetCPUAllocator() != tracking) c10::SetCPUAllocator(tracking, UINT8_MAX);
    return raw;
  }();
  return inner_raw_deleter;
}

const std::initializer_list<at::RecordScope> kScopes = {
    at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::TORCHSCRIPT_FUNCTION,
    at::RecordScope::USER_SCOPE};

}  // namespace

extern "C" {

// "torch=1.13.0 abi=1 bridge=1": what this bridge was compiled against (checked by the loader).
__attribute__((visibility("default"))) const char* strata_torch_bridge_info(void) {
  return "torch=" STRATA_BRIDGE_STR(TORCH_VERSION_MAJOR) "." STRATA_BRIDGE_STR(TORCH_VERSION_MINOR) "." STRATA_BRIDGE_STR(
      TORCH_VERSION_PATCH) " abi=" STRATA_BRIDGE_STR(_GLIBCXX_USE_CXX11_ABI) " bridge=" STRATA_BRIDGE_STR(STRATA_TORCH_BRIDGE_ABI);
}

// Starts tracing every thread's ops. Returns 1 when the callback is installed (or already was), 0
// when the runtime library is not the one this bridge was built for.
__attribute__((visibility("default"))) int strata_torch_enable(int record_shapes) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (strata_torch_rt_abi() != STRATA_TORCH_BRIDGE_ABI) return 0;
  if (g_enabled) return 1;
  g_record_shapes = record_shapes != 0;
  strata_torch_rt_memory_start(install_tracking_allocator());
  at::RecordFunctionCallback callback(on_op_start, on_op_end);
  callback.needsInputs(g_record_shapes).scopes(kScopes);
  g_handle = at::addGlobalCallback(callback);
  g_enabled = true;
  return 1;
}

__attribute__((visibility("default"))) void strata_torch_disable(void) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_enabled) return;
  at::removeCallback(g_handle);
  strata_torch_rt_memory_stop();
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
  callback.needsInputs(needs_inputs != 0).scopes(kScopes);
  g_handle = at::addGlobalCallback(callback);
  g_enabled = true;
  return 1;
}

}  // extern "C"
