// Launch-bound loop for the GPU validation (issue 7): many tiny kernels inside NVTX ranges, so the
// overhead of `strata record --level device` can be compared with Kineto's and every kernel must be
// attributed to its "step" range by id. Not built by CMake (needs nvcc and a GPU):
//   nvcc -O2 -o launch_loop examples/cuda/launch_loop.cu
//   ./launch_loop 20000                                    # baseline
//   strata record --level device -o loop.strata -- ./launch_loop 20000
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void tiny(float* x) { x[threadIdx.x] += 1.0f; }

int main(int argc, char** argv) {
  int launches = argc > 1 ? std::atoi(argv[1]) : 10000;
  float* x = nullptr;
  if (cudaMalloc(&x, 32 * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "launch_loop: cudaMalloc failed (no GPU?)\n");
    return 1;
  }
  cudaMemset(x, 0, 32 * sizeof(float));
  cudaDeviceSynchronize();
  auto start = std::chrono::steady_clock::now();
  for (int step = 0; step < launches / 100; ++step) {
    nvtxRangePushA("step");
    for (int i = 0; i < 100; ++i) tiny<<<1, 32>>>(x);
    nvtxRangePop();
  }
  cudaDeviceSynchronize();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%d launches in %.3f s: %.0f launches/s\n", launches, s, launches / s);
  cudaFree(x);
  return 0;
}
