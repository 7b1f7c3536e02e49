// Loads a module with RTLD_LOCAL and calls its `strata_demo_entry`, the way CPython loads an
// extension (torch/_C): the module's libraries (cuDNN, cuBLAS) stay out of the global scope, where
// a preloaded interposer's RTLD_NEXT lookup cannot see them.
//   dlopen_local_runner MODULE.so
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: dlopen_local_runner MODULE.so\n");
    return 2;
  }
  void* module = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    std::fprintf(stderr, "dlopen_local_runner: %s\n", dlerror());
    return 1;
  }
  auto entry = reinterpret_cast<int (*)()>(dlsym(module, "strata_demo_entry"));
  if (entry == nullptr) {
    std::fprintf(stderr, "dlopen_local_runner: %s has no strata_demo_entry\n", argv[1]);
    return 1;
  }
  return entry();
}
