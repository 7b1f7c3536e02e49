// Creates and destroys the primary context and loads and unloads a module in a loop while kernels
// run, for validating that GPU PC sampling's poll (cuptiPCSamplingGetData on its own thread, e.g.
// with STRATA_GPU_PC_SAMPLING_POLL_MS=1) and its module-unload / context-destroy callbacks never
// deadlock (docs/gpu-collector.md, check 6b). Needs nvcc and a GPU; not built by CMake:
//   nvcc -cubin -arch=sm_90 -o churn_kernel.cubin examples/cuda/churn_kernel.cu
//   nvcc -O2 -o context_churn examples/cuda/context_churn.cu -lcuda
//   ./context_churn churn_kernel.cubin 20 5
#include <cuda.h>

#include <cstdio>
#include <cstdlib>

#define CHECK(call)                                                                          \
  do {                                                                                       \
    CUresult r_ = (call);                                                                    \
    if (r_ != CUDA_SUCCESS) {                                                                \
      const char* s_ = nullptr;                                                              \
      cuGetErrorString(r_, &s_);                                                             \
      std::fprintf(stderr, "context_churn: %s failed: %s\n", #call, s_ ? s_ : "?");          \
      return 1;                                                                              \
    }                                                                                        \
  } while (0)

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: context_churn KERNEL.cubin [CONTEXTS] [MODULES_PER_CONTEXT]\n");
    return 2;
  }
  int contexts = argc > 2 ? std::atoi(argv[2]) : 20;
  int modules = argc > 3 ? std::atoi(argv[3]) : 5;
  CHECK(cuInit(0));
  CUdevice dev;
  CHECK(cuDeviceGet(&dev, 0));
  int launches = 0;
  for (int c = 0; c < contexts; ++c) {
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    CUdeviceptr out;
    CHECK(cuMemAlloc(&out, 132 * 128 * sizeof(float)));
    for (int m = 0; m < modules; ++m) {
      CUmodule mod;
      CHECK(cuModuleLoad(&mod, argv[1]));
      CUfunction spin;
      CHECK(cuModuleGetFunction(&spin, mod, "spin"));
      long long cycles = 200000;  // ~100 us at 2 GHz
      void* params[] = {&cycles, &out};
      for (int k = 0; k < 10; ++k, ++launches)
        CHECK(cuLaunchKernel(spin, 132, 1, 1, 128, 1, 1, 0, nullptr, params, nullptr));
      // Unloaded right after the launches are queued: the unload waits for them, while the
      // sampler's poll may be fetching this very module's samples.
      CHECK(cuModuleUnload(mod));
    }
    CHECK(cuMemFree(out));
    CHECK(cuCtxSetCurrent(nullptr));
    CHECK(cuDevicePrimaryCtxRelease(dev));
    CHECK(cuDevicePrimaryCtxReset(dev));  // destroys the context: CONTEXT_DESTROY_STARTING
  }
  std::printf("context_churn: %d contexts, %d modules, %d launches\n", contexts, contexts * modules, launches);
  return 0;
}
