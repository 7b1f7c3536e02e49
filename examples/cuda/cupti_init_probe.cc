// Loads libstrata_cupti.so the way the CUDA driver does (dlopen + InitializeInjection) and keeps
// running: on a machine without a GPU/driver this exercises the real CUPTI error path (one line on
// stderr, program untraced). Usage: cupti_init_probe /path/to/libstrata_cupti.so
#include <dlfcn.h>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LIBSTRATA_CUPTI\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 3;
  }
  auto init = reinterpret_cast<int (*)()>(dlsym(lib, "InitializeInjection"));
  if (init == nullptr) {
    std::fprintf(stderr, "InitializeInjection not exported\n");
    return 4;
  }
  int r = init();
  std::printf("InitializeInjection returned %d; program still running\n", r);
  return 0;
}
