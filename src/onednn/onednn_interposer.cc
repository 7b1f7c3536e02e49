// oneDNN library tracer: an LD_PRELOAD interposer for dnnl_primitive_execute. Every primitive that
// a framework runs through libdnnl (PyTorch's ideep/MKLDNN ops, ONNX Runtime's DNNL provider, plain
// oneDNN programs) becomes a library-level span on the calling thread, so it nests under the layer
// span (aten op) open there. On CPU engines execution is synchronous in the calling thread, so the
// call's duration is the primitive's execution time (the same interval ONEDNN_VERBOSE=profile_exec
// reports, but on Strata's clock and with the parent known).
//
// What it cannot see: oneDNN linked statically with hidden symbols (PyTorch pip wheels), programs
// that dlopen+dlsym libdnnl themselves, and GPU engines (asynchronous: the call is only a launch).
// Those executions are recorded from oneDNN's verbose output instead (verbose_capture.cc; see
// onednn_tracer.h for the modes and how each execution is recorded once). With oneDNN v3
// (libdnnl.so.3) the interposer cannot describe a primitive (kind, impl, shapes), so with the
// verbose capture armed it leaves those executions to it.
#include <dlfcn.h>
#include <link.h>
#include <oneapi/dnnl/dnnl.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>

#include "onednn/onednn_tracer.h"
#include "onednn/primitive_cost.h"
#include "strata/strata.h"

namespace {

using ExecuteFn = dnnl_status_t (*)(const_dnnl_primitive_t, dnnl_stream_t, int, const dnnl_exec_arg_t*);
using GetPdFn = dnnl_status_t (*)(const_dnnl_primitive_t, const_dnnl_primitive_desc_t*);
using QueryFn = dnnl_status_t (*)(const_dnnl_primitive_desc_t, dnnl_query_t, int, void*);
using QueryMdFn = const dnnl_memory_desc_t* (*)(const_dnnl_primitive_desc_t, dnnl_query_t, int);
using KindStrFn = const char* (*)(dnnl_primitive_kind_t);
using DtStrFn = const char* (*)(dnnl_data_type_t);
using PropStrFn = const char* (*)(dnnl_prop_kind_t);

struct RealFunctions {
  // Memory descriptors are plain structs only in the v2 ABI this file is compiled against (v3 made
  // them opaque): describe primitives only when the loaded library is libdnnl.so.2.
  bool describe = false;
  ExecuteFn execute = nullptr;
  GetPdFn get_pd = nullptr;
  QueryFn query = nullptr;
  QueryMdFn query_md = nullptr;
  KindStrFn kind_str = nullptr;
  DtStrFn dt_str = nullptr;
  PropStrFn prop_str = nullptr;
};

// The loaded oneDNN library. RTLD_NEXT does not see it when it came in as a dependency of a library
// that Python dlopen()ed with RTLD_LOCAL (PyTorch's case), so look it up among the loaded objects.
int find_dnnl(struct dl_phdr_info* info, size_t, void* out) {
  const char* name = info->dlpi_name;
  if (name != nullptr && std::strstr(name, "/libdnnl.so") != nullptr) {
    *static_cast<std::string*>(out) = name;
    return 1;
  }
  return 0;
}

void* dnnl_handle(bool* is_v2) {
  std::string path;
  dl_iterate_phdr(find_dnnl, &path);
  *is_v2 = path.find("/libdnnl.so.2") != std::string::npos;
  return path.empty() ? nullptr : dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
}

const RealFunctions& real() {
  // First called from inside oneDNN's caller, so libdnnl is loaded by then.
  static const RealFunctions fns = [] {
    RealFunctions f;
    void* lib = dnnl_handle(&f.describe);
    auto lookup = [lib](const char* symbol) -> void* {
      void* p = lib != nullptr ? dlsym(lib, symbol) : nullptr;
      return p != nullptr ? p : dlsym(RTLD_NEXT, symbol);
    };
    f.execute = reinterpret_cast<ExecuteFn>(lookup("dnnl_primitive_execute"));
    f.get_pd = reinterpret_cast<GetPdFn>(lookup("dnnl_primitive_get_primitive_desc"));
    f.query = reinterpret_cast<QueryFn>(lookup("dnnl_primitive_desc_query"));
    f.query_md = reinterpret_cast<QueryMdFn>(lookup("dnnl_primitive_desc_query_md"));
    f.kind_str = reinterpret_cast<KindStrFn>(lookup("dnnl_prim_kind2str"));
    f.dt_str = reinterpret_cast<DtStrFn>(lookup("dnnl_dt2str"));
    f.prop_str = reinterpret_cast<PropStrFn>(lookup("dnnl_prop_kind2str"));
    return f;
  }();
  return fns;
}

void append_dims(std::string& out, const dnnl_memory_desc_t* md) {
  out.push_back('[');
  if (md != nullptr) {
    for (int k = 0; k < md->ndims && k < DNNL_MAX_NDIMS; ++k) {
      if (k) out.push_back(',');
      out += std::to_string(md->dims[k]);
    }
  }
  out.push_back(']');
}

// The md's dims and element size into a cost problem's tensor slot (nothing for an absent md).
void take_md(const RealFunctions& f, const dnnl_memory_desc_t* md, strata::onednn::Dims* dims, int* size) {
  if (md == nullptr || md->ndims <= 0) return;
  *dims = strata::onednn::Dims();
  for (int k = 0; k < md->ndims && k < DNNL_MAX_NDIMS; ++k) dims->push(md->dims[k]);
  *size = f.dt_str != nullptr ? strata::onednn::dtype_size(f.dt_str(md->data_type)) : 0;
}

const dnnl_memory_desc_t* md_of(const RealFunctions& f, const_dnnl_primitive_desc_t pd, dnnl_query_t what,
                                dnnl_query_t diff, int index) {
  const dnnl_memory_desc_t* md = f.query_md(pd, what, index);
  if (md == nullptr || md->ndims == 0) md = f.query_md(pd, diff, index);
  return md != nullptr && md->ndims > 0 ? md : nullptr;
}

// FLOPs and bytes (primitive_cost.h) from the primitive descriptor: the attributes the rooflines
// read. Kinds without a formula get neither.
void set_cost(strata_span_id id, const RealFunctions& f, const_dnnl_primitive_desc_t pd, const char* kind_name,
              const char* prop_name) {
  using namespace strata::onednn;
  PrimitiveProblem p;
  p.kind = cost_kind(kind_name != nullptr ? kind_name : "");
  if (p.kind == CostKind::kOther || f.query_md == nullptr) return;
  set_prop_kind(prop_name != nullptr ? prop_name : "", &p);
  take_md(f, md_of(f, pd, dnnl_query_src_md, dnnl_query_diff_src_md, 0), &p.src, &p.src_bytes);
  take_md(f, md_of(f, pd, dnnl_query_dst_md, dnnl_query_diff_dst_md, 0), &p.dst, &p.dst_bytes);
  if (p.kind == CostKind::kBatchNorm) {
    const dnnl_batch_normalization_desc_t* bn = nullptr;
    if (f.query(pd, dnnl_query_batch_normalization_d, 0, &bn) == dnnl_success && bn != nullptr) {
      p.global_stats = (bn->flags & dnnl_use_global_stats) != 0;
      p.scale_shift_arrays = (bn->flags & dnnl_use_scaleshift) != 0
                                 ? 2
                                 : ((bn->flags & dnnl_use_scale) != 0) + ((bn->flags & dnnl_use_shift) != 0);
    }
  } else if (p.kind == CostKind::kPooling) {
    const dnnl_pooling_v2_desc_t* v2 = nullptr;
    const dnnl_pooling_desc_t* v1 = nullptr;
    const dnnl_dim_t* kernel = nullptr;
    dnnl_alg_kind_t alg = dnnl_alg_kind_undef;
    if (f.query(pd, dnnl_query_pooling_v2_d, 0, &v2) == dnnl_success && v2 != nullptr) {
      kernel = v2->kernel, alg = v2->alg_kind;
    } else if (f.query(pd, dnnl_query_pooling_d, 0, &v1) == dnnl_success && v1 != nullptr) {
      kernel = v1->kernel, alg = v1->alg_kind;
    }
    if (kernel == nullptr || p.src.n < 3) return;
    for (int k = 0; k < p.src.n - 2; ++k) p.window.push(kernel[k]);
    p.average = alg != dnnl_pooling_max;
  } else if (p.kind != CostKind::kEltwise) {
    take_md(f, md_of(f, pd, dnnl_query_weights_md, dnnl_query_diff_weights_md, 0), &p.weights, &p.weights_bytes);
    take_md(f, md_of(f, pd, dnnl_query_weights_md, dnnl_query_diff_weights_md, 1), &p.bias, &p.bias_bytes);
  }
  PrimitiveCost cost = primitive_cost(p);
  if (cost.flops) strata_span_set_metric(id, "flops", *cost.flops);
  if (cost.bytes) strata_span_set_metric(id, "bytes", *cost.bytes);
}

// Names the span after the primitive kind ("onednn::convolution") and describes it with the
// implementation oneDNN chose ("brgconv:avx512_core"), the src/weights/dst shapes, the first
// tensor's data type and the propagation kind: the attributes the verbose capture also writes.
strata_span_id begin_primitive_span(const_dnnl_primitive_t primitive) {
  const RealFunctions& f = real();
  const_dnnl_primitive_desc_t pd = nullptr;
  if (!f.describe || f.get_pd == nullptr || f.query == nullptr || f.get_pd(primitive, &pd) != dnnl_success ||
      pd == nullptr)
    return strata_span_begin_as("onednn::primitive", 17, STRATA_LEVEL_LIBRARY, STRATA_ACTIVITY_LIBRARY_CALL);
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  f.query(pd, dnnl_query_primitive_kind, 0, &kind);
  const char* kind_name = f.kind_str != nullptr ? f.kind_str(kind) : nullptr;
  thread_local std::string text;
  text.assign("onednn::");
  text += kind_name != nullptr ? kind_name : "primitive";
  strata_span_id id = strata_span_begin_as(text.data(), text.size(), STRATA_LEVEL_LIBRARY, STRATA_ACTIVITY_LIBRARY_CALL);
  if (id == 0) return 0;
  const char* impl = nullptr;
  if (f.query(pd, dnnl_query_impl_info_str, 0, &impl) == dnnl_success && impl != nullptr)
    strata_span_set_string(id, "impl", impl);
  dnnl_prop_kind_t prop = dnnl_prop_kind_undef;
  const char* prop_name = nullptr;
  if (f.prop_str != nullptr && f.query(pd, dnnl_query_prop_kind, 0, &prop) == dnnl_success &&
      prop != dnnl_prop_kind_undef) {
    prop_name = f.prop_str(prop);
    strata_span_set_string(id, "prop_kind", prop_name);
  }
  strata_span_set_string(id, "source", "interposer");
  if (f.query_md != nullptr) {
    // Forward primitives have src/weights/dst; backward ones diff_*; reorders src/dst. The shapes
    // string lists the ones present, in this fixed order: "src:[..] weights:[..] dst:[..]".
    static constexpr struct {
      dnnl_query_t what;
      const char* label;
    } kMds[] = {{dnnl_query_src_md, "src"},         {dnnl_query_diff_src_md, "diff_src"},
                {dnnl_query_weights_md, "weights"}, {dnnl_query_diff_weights_md, "diff_weights"},
                {dnnl_query_dst_md, "dst"},         {dnnl_query_diff_dst_md, "diff_dst"}};
    text.clear();
    const char* dtype = nullptr;
    for (const auto& m : kMds) {
      const dnnl_memory_desc_t* md = f.query_md(pd, m.what, 0);
      if (md == nullptr || md->ndims == 0) continue;
      if (dtype == nullptr && f.dt_str != nullptr) dtype = f.dt_str(md->data_type);
      if (!text.empty()) text.push_back(' ');
      text += m.label;
      text.push_back(':');
      append_dims(text, md);
    }
    if (!text.empty()) strata_span_set_string(id, "shapes", text.c_str());
    if (dtype != nullptr) strata_span_set_string(id, "dtype", dtype);
  }
  set_cost(id, f, pd, kind_name, prop_name);
  return id;
}

}  // namespace

extern "C" __attribute__((visibility("default"))) dnnl_status_t dnnl_primitive_execute(
    const_dnnl_primitive_t primitive, dnnl_stream_t stream, int nargs, const dnnl_exec_arg_t* args) {
  const RealFunctions& f = real();
  if (f.execute == nullptr) {
    // Preloaded into a process whose libdnnl lacks the symbol: cannot happen for a caller linked
    // against libdnnl; say so rather than crash.
    std::fputs("strata: dnnl_primitive_execute called but the real one was not found\n", stderr);
    return dnnl_runtime_error;
  }
  using strata::onednn::Mode;
  const Mode mode = strata::onednn::mode();
  // Verbose-only (or off): leave every execution to the verbose capture. Undescribable (v3 ABI)
  // with the capture armed: its line says more than an anonymous span would.
  if (mode == Mode::kOff || mode == Mode::kVerbose || (!f.describe && strata::onednn::verbose_armed()))
    return f.execute(primitive, stream, nargs, args);
  // Marks the thread for the verbose capture: the line oneDNN prints inside this call belongs to
  // this span (nested calls restore the outer marks).
  const bool outer_in = strata::onednn::tls_in_execute;
  const strata_span_id outer_span = strata::onednn::tls_execute_span;
  strata_span_id id = strata_level_enabled(STRATA_LEVEL_LIBRARY) != 0 ? begin_primitive_span(primitive) : 0;
  strata::onednn::tls_in_execute = true;
  strata::onednn::tls_execute_span = id;
  dnnl_status_t status = f.execute(primitive, stream, nargs, args);
  strata::onednn::tls_in_execute = outer_in;
  strata::onednn::tls_execute_span = outer_span;
  if (id != 0 && status != dnnl_success) strata_span_set_int(id, "status", static_cast<int64_t>(status));
  strata_span_end(id);
  return status;
}
