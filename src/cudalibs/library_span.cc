#include "cudalibs/library_span.h"

#include <dlfcn.h>

#include <cstring>
#include <initializer_list>

#include "core/attr_keys.h"

namespace strata::cudalibs {
namespace {
thread_local int tl_depth = 0;
thread_local int64_t tl_nested = 0;
}  // namespace

void* find_real_function(const char* name) {
  if (void* next = dlsym(RTLD_NEXT, name)) return next;
  // cuDNN 9 splits into sub-libraries (the backend API is libcudnn_graph's); 8 and the cuBLAS of CUDA
  // 11-13 are listed too, newest first.
  for (const char* soname :
       {"libcudnn.so.9", "libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9", "libcudnn.so.8",
        "libcudnn_ops_infer.so.8", "libcudnn_cnn_infer.so.8", "libcublas.so.13", "libcublasLt.so.13",
        "libcublas.so.12", "libcublasLt.so.12", "libcublas.so.11", "libcublasLt.so.11"}) {
    void* library = dlopen(soname, RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) continue;
    void* symbol = dlsym(library, name);
    dlclose(library);  // drops the reference RTLD_NOLOAD took; the library stays loaded by its user
    if (symbol != nullptr) return symbol;
  }
  return nullptr;
}

LibrarySpan::LibrarySpan(const char* name, const char* library) {
  outermost_ = tl_depth++ == 0;
  if (!outermost_) {
    ++tl_nested;
    return;
  }
  tl_nested = 0;
  id_ = strata_span_begin_as(name, std::strlen(name), STRATA_LEVEL_LIBRARY, STRATA_ACTIVITY_LIBRARY_CALL);
  if (id_ != 0) strata_span_set_string(id_, attr_keys::kLibrary.data(), library);
}

LibrarySpan::~LibrarySpan() {
  --tl_depth;
  if (id_ == 0) return;
  if (tl_nested > 0) strata_span_set_int(id_, "nested_calls", tl_nested);
  strata_span_end(id_);
}

void LibrarySpan::set_status(int status, const char* text) {
  if (id_ == 0) return;
  strata_span_set_int(id_, "status", status);
  if (status != 0 && text != nullptr) strata_span_set_string(id_, "status_text", text);
}

void LibrarySpan::missing_real_function() {
  if (id_ != 0) strata_span_set_string(id_, "error", "real function not found (library not loaded?)");
}

std::string join_dims(const int* dims, int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace strata::cudalibs
