// A oneDNN program the tests record: runs N ReLU (eltwise) executions on a 1x8x16x16 tensor, each
// inside a layer-level span "probe::op" (so the tests can check parents and clock placement), and
// prints its own lines to stdout with printf (so they can check the capture leaves them alone).
//
//   onednn_dlsym_probe handle N   calls dnnl_primitive_execute through dlsym(libdnnl handle): the
//                                 interposer never sees it, as with oneDNN linked statically
//   onednn_dlsym_probe default N  calls it through dlsym(RTLD_DEFAULT): the interposer's, when
//                                 preloaded, as for a program linked against libdnnl
//
// libdnnl and libstrata are both looked up at run time: the probe links neither.
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

template <class Fn>
Fn must(void* handle, const char* name) {
  void* p = dlsym(handle, name);
  if (p == nullptr) {
    std::fprintf(stderr, "probe: %s not found\n", name);
    std::exit(2);
  }
  return reinterpret_cast<Fn>(p);
}

#define CHECK(call)                                                   \
  do {                                                                \
    if ((call) != dnnl_success) {                                     \
      std::fprintf(stderr, "probe: %s failed\n", #call);              \
      std::exit(3);                                                   \
    }                                                                 \
  } while (0)

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s handle|default N\n", argv[0]);
    return 1;
  }
  const bool via_handle = std::strcmp(argv[1], "handle") == 0;
  const int n = std::atoi(argv[2]);
  void* lib = dlopen("libdnnl.so.2", RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "probe: %s\n", dlerror());
    return 2;
  }
  auto engine_create = must<decltype(&dnnl_engine_create)>(lib, "dnnl_engine_create");
  auto md_init = must<decltype(&dnnl_memory_desc_init_by_tag)>(lib, "dnnl_memory_desc_init_by_tag");
  auto eltwise_init = must<decltype(&dnnl_eltwise_forward_desc_init)>(lib, "dnnl_eltwise_forward_desc_init");
  auto pd_create = must<decltype(&dnnl_primitive_desc_create)>(lib, "dnnl_primitive_desc_create");
  auto prim_create = must<decltype(&dnnl_primitive_create)>(lib, "dnnl_primitive_create");
  auto mem_create = must<decltype(&dnnl_memory_create)>(lib, "dnnl_memory_create");
  auto stream_create = must<decltype(&dnnl_stream_create)>(lib, "dnnl_stream_create");
  auto stream_wait = must<decltype(&dnnl_stream_wait)>(lib, "dnnl_stream_wait");
  auto execute = must<decltype(&dnnl_primitive_execute)>(via_handle ? lib : RTLD_DEFAULT, "dnnl_primitive_execute");
  // The span API of the preloaded libstrata, when there is one.
  using BeginFn = uint64_t (*)(const char*, int);
  using EndFn = void (*)(uint64_t);
  auto span_begin = reinterpret_cast<BeginFn>(dlsym(RTLD_DEFAULT, "strata_span_begin"));
  auto span_end = reinterpret_cast<EndFn>(dlsym(RTLD_DEFAULT, "strata_span_end"));

  dnnl_engine_t engine;
  CHECK(engine_create(&engine, dnnl_cpu, 0));
  dnnl_memory_desc_t md;
  const dnnl_dims_t dims = {1, 8, 16, 16};
  CHECK(md_init(&md, 4, dims, dnnl_f32, dnnl_nchw));
  dnnl_eltwise_desc_t desc;
  CHECK(eltwise_init(&desc, dnnl_forward_inference, dnnl_eltwise_relu, &md, 0.f, 0.f));
  dnnl_primitive_desc_t pd;
  CHECK(pd_create(&pd, &desc, nullptr, engine, nullptr));
  dnnl_primitive_t relu;
  CHECK(prim_create(&relu, pd));
  dnnl_memory_t mem;
  CHECK(mem_create(&mem, &md, engine, DNNL_MEMORY_ALLOCATE));
  dnnl_stream_t stream;
  CHECK(stream_create(&stream, engine, dnnl_stream_default_flags));
  const dnnl_exec_arg_t args[2] = {{DNNL_ARG_SRC, mem}, {DNNL_ARG_DST, mem}};

  std::printf("probe: start\n");
  for (int i = 0; i < n; ++i) {
    uint64_t span = span_begin != nullptr ? span_begin("probe::op", 30) : 0;
    CHECK(execute(relu, stream, 2, args));
    CHECK(stream_wait(stream));
    if (span_end != nullptr) span_end(span);
    std::printf("probe: execution %d of %s\n", i + 1, argv[2]);  // the user's own output, kept
  }
  // A "%s" call with a runtime argument: the capture peeks at the argument, then lets it through.
  const char* volatile plain = "probe: plain line\n";
  std::printf("%s", plain);
  std::printf("probe: done\n");
  return 0;
}
