// Shared pieces of the cuDNN/cuBLAS interposer: finding the real function behind the preloaded
// wrapper, and one library-level span per outermost call.
#pragma once

#include <cstdint>
#include <string>

#include "strata/strata.h"

namespace strata::cudalibs {

// The real cuDNN/cuBLAS function behind the preloaded wrapper, looked up once per name: the next
// definition after this library (RTLD_NEXT) or, when the library was loaded into a local scope, the
// definition in the loaded library itself (find_real_function).
#define STRATA_REAL(fn)                                                                              \
  ([]() {                                                                                            \
    static auto real = reinterpret_cast<decltype(&fn)>(::strata::cudalibs::find_real_function(#fn)); \
    return real;                                                                                     \
  }())
// The same for a name C++ overloads (cuBLAS adds overloads taking cublasDataType_t): `Type` picks one.
#define STRATA_REAL_AS(fn, Type)                                                            \
  ([]() {                                                                                   \
    static auto real = reinterpret_cast<Type>(::strata::cudalibs::find_real_function(#fn)); \
    return real;                                                                            \
  }())

// RTLD_NEXT sees only the global scope. A Python extension is loaded with RTLD_LOCAL, so PyTorch's
// cuDNN and cuBLAS (dependencies of torch/_C's libraries) are not in it: their calls still bind to
// the preloaded wrappers, but RTLD_NEXT finds no real function (seen on an H100 with PyTorch 2.11:
// every cudnnBackendExecute failed and convolutions raised). Then the already-loaded library is
// asked by soname (RTLD_NOLOAD: never loads one), which searches it and its own dependencies only,
// never the preloaded wrapper. nullptr when no loaded library defines `name`.
void* find_real_function(const char* name);

// A library span for the outermost traced call on this thread. cuDNN implements some calls with
// others (legacy convolution through the graph API): nested calls are not recorded, only counted
// on the enclosing span ("nested_calls").
class LibrarySpan {
 public:
  LibrarySpan(const char* name, const char* library);
  ~LibrarySpan();
  LibrarySpan(const LibrarySpan&) = delete;
  LibrarySpan& operator=(const LibrarySpan&) = delete;

  bool active() const { return id_ != 0; }
  strata_span_id id() const { return id_; }
  void set_int(const char* key, int64_t v) {
    if (id_ != 0) strata_span_set_int(id_, key, v);
  }
  void set_double(const char* key, double v) {
    if (id_ != 0) strata_span_set_double(id_, key, v);
  }
  void set_string(const char* key, const std::string& v) {
    if (id_ != 0) strata_span_set_string(id_, key, v.c_str());
  }
  // The call's return status (0 = success); a missing real function is recorded as an error.
  void set_status(int status, const char* text);
  void missing_real_function();

 private:
  strata_span_id id_ = 0;
  bool outermost_ = false;
};

std::string join_dims(const int* dims, int n);  // "1x3x224x224"

}  // namespace strata::cudalibs
