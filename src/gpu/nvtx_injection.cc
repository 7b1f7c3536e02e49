// libstrata_nvtx.so: NVTX v3 injection (NVTX_INJECTION64_PATH). NVTX-annotated code (PyTorch
// emit_nvtx, TensorRT, any nvtxRangePush/Start/Mark) becomes layer spans and instants, with the
// domain, category and payload as attributes. Needs no GPU: NVTX is a header-only API that loads
// this library on the first NVTX call and asks it to fill its function tables.
#include <nvtx3/nvToolsExt.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cwchar>
#include <mutex>
#include <string>
#include <vector>

#include "core/attr_keys.h"
#include "core/torch_nvtx_names.h"
#include "strata/strata.h"

struct nvtxDomainRegistration_st {
  std::string name;
};
struct nvtxStringRegistration_st {
  std::string text;
};

namespace strata::gpu {
namespace {

constexpr int kLayer = STRATA_LEVEL_LAYER;

std::atomic<uint64_t> g_unmatched_pops{0}, g_ranges{0}, g_marks{0}, g_unknown_messages{0};
std::mutex g_registry_mu;
// Handles stay valid for the whole process (NVTX may be called from static destructors), so the
// registries are never destroyed: heap vectors reached from a global pointer.
auto* g_domains = new std::vector<nvtxDomainRegistration_st*>;
auto* g_strings = new std::vector<nvtxStringRegistration_st*>;

struct PushedRange {
  nvtxDomainHandle_t domain;
  strata_span_id span;
};
// Push/pop ranges nest per thread and per domain.
thread_local std::vector<PushedRange> tl_stack;

std::string utf8(const wchar_t* w) {
  std::string out;
  if (w == nullptr) return out;
  for (; *w != 0; ++w) {
    uint32_t c = static_cast<uint32_t>(*w);
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::string message_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "<nvtx>";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      return a->message.ascii != nullptr ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE:
      return utf8(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr ? a->message.registered->text : "";
    default:
      g_unknown_messages.fetch_add(1, std::memory_order_relaxed);
      return "<nvtx>";
  }
}

// Describes the range: domain (when not the default one), category, payload.
void annotate(strata_span_id span, nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  if (span == 0) return;
  strata_span_set_string(span, "source", "nvtx");
  if (domain != nullptr) strata_span_set_string(span, "nvtx.domain", domain->name.c_str());
  if (a == nullptr) return;
  if (a->category != 0) strata_span_set_int(span, "nvtx.category", a->category);
  switch (a->payloadType) {
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT64:
      strata_span_set_int(span, "nvtx.payload", static_cast<int64_t>(a->payload.ullValue));
      break;
    case NVTX_PAYLOAD_TYPE_INT64:
      strata_span_set_int(span, "nvtx.payload", a->payload.llValue);
      break;
    case NVTX_PAYLOAD_TYPE_DOUBLE:
      strata_span_set_double(span, "nvtx.payload", a->payload.dValue);
      break;
    case NVTX_PAYLOAD_TYPE_UNSIGNED_INT32:
      strata_span_set_int(span, "nvtx.payload", a->payload.uiValue);
      break;
    case NVTX_PAYLOAD_TYPE_INT32:
      strata_span_set_int(span, "nvtx.payload", a->payload.iValue);
      break;
    case NVTX_PAYLOAD_TYPE_FLOAT:
      strata_span_set_double(span, "nvtx.payload", a->payload.fValue);
      break;
    default:
      break;
  }
}

// PyTorch's emit_nvtx names each call "aten::op, seq = N, op_id = M, sizes = [...], ...": the span
// is named by the op and the rest become attributes (core/torch_nvtx_names.h), so layer tables
// group the calls of one op.
strata_span_id begin_named(const std::string& name) {
  TorchNvtxName torch;
  if (!parse_torch_nvtx_name(name, &torch))
    return strata_span_begin_as(name.data(), name.size(), kLayer, STRATA_ACTIVITY_ANNOTATION);
  strata_span_id span =
      strata_span_begin_as(torch.op.data(), torch.op.size(), kLayer, STRATA_ACTIVITY_ANNOTATION);
  if (span == 0) return span;
  if (torch.sequence_nr) strata_span_set_int(span, kTorchSequenceNrKey.data(), *torch.sequence_nr);
  if (torch.op_id) strata_span_set_int(span, kTorchOpIdKey.data(), *torch.op_id);
  if (!torch.shapes.empty())
    strata_span_set_string(span, attr_keys::kShapes.data(), std::string(torch.shapes).c_str());
  if (!torch.input_op_ids.empty())
    strata_span_set_string(span, kTorchInputOpIdsKey.data(), std::string(torch.input_op_ids).c_str());
  return span;
}

strata_span_id start_span(nvtxDomainHandle_t domain, const std::string& name,
                          const nvtxEventAttributes_t* a) {
  strata_span_id span = begin_named(name);
  annotate(span, domain, a);
  g_ranges.fetch_add(1, std::memory_order_relaxed);
  return span;
}

int push(nvtxDomainHandle_t domain, const std::string& name, const nvtxEventAttributes_t* a) {
  tl_stack.push_back({domain, start_span(domain, name, a)});
  int depth = 0;
  for (const auto& r : tl_stack) depth += r.domain == domain ? 1 : 0;
  return depth - 1;
}

int pop(nvtxDomainHandle_t domain) {
  for (size_t i = tl_stack.size(); i-- > 0;) {
    if (tl_stack[i].domain != domain) continue;
    strata_span_end(tl_stack[i].span);
    tl_stack.erase(tl_stack.begin() + static_cast<std::ptrdiff_t>(i));
    int depth = 0;
    for (const auto& r : tl_stack) depth += r.domain == domain ? 1 : 0;
    return depth;
  }
  g_unmatched_pops.fetch_add(1, std::memory_order_relaxed);
  return -1;  // NVTX's "no range to pop"
}

void mark(nvtxDomainHandle_t domain, const std::string& name) {
  (void)domain;  // instants carry no attributes in the span API: the domain is not recorded
  strata_instant(name.c_str(), kLayer);
  g_marks.fetch_add(1, std::memory_order_relaxed);
}

// --- NVTX entry points -------------------------------------------------------------------------

void NVTX_API MarkEx(const nvtxEventAttributes_t* a) { mark(nullptr, message_of(a)); }
void NVTX_API MarkA(const char* m) { mark(nullptr, m != nullptr ? m : ""); }
void NVTX_API MarkW(const wchar_t* m) { mark(nullptr, utf8(m)); }
nvtxRangeId_t NVTX_API RangeStartEx(const nvtxEventAttributes_t* a) {
  return start_span(nullptr, message_of(a), a);
}
nvtxRangeId_t NVTX_API RangeStartA(const char* m) {
  return start_span(nullptr, m != nullptr ? m : "", nullptr);
}
nvtxRangeId_t NVTX_API RangeStartW(const wchar_t* m) { return start_span(nullptr, utf8(m), nullptr); }
void NVTX_API RangeEnd(nvtxRangeId_t id) { strata_span_end(id); }  // the range id is the span id
int NVTX_API RangePushEx(const nvtxEventAttributes_t* a) { return push(nullptr, message_of(a), a); }
int NVTX_API RangePushA(const char* m) { return push(nullptr, m != nullptr ? m : "", nullptr); }
int NVTX_API RangePushW(const wchar_t* m) { return push(nullptr, utf8(m), nullptr); }
int NVTX_API RangePop() { return pop(nullptr); }
void NVTX_API NameOsThreadA(uint32_t tid, const char* name) {
  if (name != nullptr && tid == static_cast<uint32_t>(::syscall(SYS_gettid))) strata_set_thread_name(name);
}

void NVTX_API DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) { mark(d, message_of(a)); }
nvtxRangeId_t NVTX_API DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return start_span(d, message_of(a), a);
}
void NVTX_API DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { strata_span_end(id); }
int NVTX_API DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return push(d, message_of(a), a);
}
int NVTX_API DomainRangePop(nvtxDomainHandle_t d) { return pop(d); }
nvtxStringHandle_t NVTX_API DomainRegisterStringA(nvtxDomainHandle_t, const char* s) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_strings->push_back(new nvtxStringRegistration_st{s != nullptr ? s : ""});
  return g_strings->back();
}
nvtxStringHandle_t NVTX_API DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_strings->push_back(new nvtxStringRegistration_st{utf8(s)});
  return g_strings->back();
}
nvtxDomainHandle_t NVTX_API DomainCreateA(const char* name) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_domains->push_back(new nvtxDomainRegistration_st{name != nullptr ? name : ""});
  return g_domains->back();
}
nvtxDomainHandle_t NVTX_API DomainCreateW(const wchar_t* name) {
  std::lock_guard<std::mutex> lock(g_registry_mu);
  g_domains->push_back(new nvtxDomainRegistration_st{utf8(name)});
  return g_domains->back();
}
void NVTX_API DomainDestroy(nvtxDomainHandle_t) {}  // handles stay valid: spans may still name them

template <typename Fn>
void set(NvtxFunctionTable table, unsigned int size, unsigned int id, Fn fn) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

void report_at_exit() {
  uint64_t unmatched = g_unmatched_pops.load(), unknown = g_unknown_messages.load();
  if (unmatched + unknown == 0) return;
  std::fprintf(stderr,
               "strata: NVTX: %llu pops without a pushed range, %llu events with an unknown message type\n",
               static_cast<unsigned long long>(unmatched), static_cast<unsigned long long>(unknown));
}

}  // namespace
}  // namespace strata::gpu

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(
    NvtxGetExportTableFunc_t get_table) {
  using namespace strata::gpu;
  if (get_table == nullptr) return 0;
  auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks)) {
    std::fprintf(stderr,
                 "strata: NVTX injection: the NVTX in this program has no callback table; NVTX ranges are "
                 "not recorded\n");
    return 0;  // NVTX falls back to no-ops
  }
  NvtxFunctionTable core = nullptr, core2 = nullptr;
  unsigned int core_size = 0, core2_size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &core_size) || core == nullptr) return 0;
  set(core, core_size, NVTX_CBID_CORE_MarkEx, MarkEx);
  set(core, core_size, NVTX_CBID_CORE_MarkA, MarkA);
  set(core, core_size, NVTX_CBID_CORE_MarkW, MarkW);
  set(core, core_size, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
  set(core, core_size, NVTX_CBID_CORE_RangeStartA, RangeStartA);
  set(core, core_size, NVTX_CBID_CORE_RangeStartW, RangeStartW);
  set(core, core_size, NVTX_CBID_CORE_RangeEnd, RangeEnd);
  set(core, core_size, NVTX_CBID_CORE_RangePushEx, RangePushEx);
  set(core, core_size, NVTX_CBID_CORE_RangePushA, RangePushA);
  set(core, core_size, NVTX_CBID_CORE_RangePushW, RangePushW);
  set(core, core_size, NVTX_CBID_CORE_RangePop, RangePop);
  set(core, core_size, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2_size) && core2 != nullptr) {
    set(core2, core2_size, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
    set(core2, core2_size, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
  }
  std::atexit(report_at_exit);
  return 1;
}
