// Kernels whose dominant warp stall is known, for validating GPU PC sampling (issue 15 item 9):
// `strata record --level device --gpu-pc-sampling` on this program should put each kernel's samples
// mostly in the category named beside it, on the source lines of its loop, and agree with Nsight
// Compute's own PC sampling (`ncu --section WarpStateStats --section SourceCounters`). Needs nvcc and
// a GPU; not built by CMake:
//   nvcc -O2 -lineinfo -arch=sm_90 -o stall_kernels examples/cuda/stall_kernels.cu
//   ./stall_kernels 0.5          # about 0.5 s of each kernel, launched back to back
//   ./stall_kernels --once       # one launch of each (what ncu replays)
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

// Memory dependency (long scoreboard): each load's address is the previous load's value, over a
// 256 MiB random cycle, so nearly every load misses L2 and nothing can be overlapped.
__global__ void pointer_chase(const unsigned* next, unsigned* out, int steps) {
  unsigned p = (blockIdx.x * blockDim.x + threadIdx.x) * 2654435761u % (64u << 20);
  for (int s = 0; s < steps; ++s) p = next[p];
  out[blockIdx.x * blockDim.x + threadIdx.x] = p;
}

// Execution dependency (wait): one warp per block, each FMA needs the previous one's result, so a
// warp waits out the fixed latency of every instruction and few other warps can fill the gap.
__global__ void fma_chain(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 1.000001f, c = 1e-7f;
  for (int k = 0; k < iterations; ++k) a = fmaf(a, b, c);
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

// Synchronization (barrier): only warp 0 of each block works between barriers; the other 7 warps
// wait at __syncthreads for it.
__global__ void barrier_imbalance(float* out, int rounds) {
  float a = threadIdx.x * 1e-3f;
  for (int r = 0; r < rounds; ++r) {
    if (threadIdx.x < 32)
      for (int k = 0; k < 64; ++k) a = fmaf(a, 1.000001f, 1e-7f);
    __syncthreads();
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

static double run_for(const char* name, double seconds, bool once, void (*launch)()) {
  auto t0 = std::chrono::steady_clock::now();
  int launches = 0;
  double elapsed = 0;
  do {
    launch();
    ++launches;
    if (cudaDeviceSynchronize() != cudaSuccess) {
      std::fprintf(stderr, "stall_kernels: %s failed: %s\n", name, cudaGetErrorString(cudaGetLastError()));
      std::exit(1);
    }
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  } while (!once && elapsed < seconds);
  std::printf("%s: %d launches, %.3f ms each\n", name, launches, elapsed * 1e3 / launches);
  return elapsed;
}

static unsigned* g_next = nullptr;
static unsigned* g_out = nullptr;
static float* g_fout = nullptr;

int main(int argc, char** argv) {
  bool once = argc > 1 && std::strcmp(argv[1], "--once") == 0;
  double seconds = (!once && argc > 1) ? std::atof(argv[1]) : 0.5;
  const size_t n = 64u << 20;  // 64 Mi entries, 256 MiB
  std::vector<unsigned> order(n), next(n);
  std::iota(order.begin(), order.end(), 0u);
  std::shuffle(order.begin(), order.end(), std::mt19937(7));
  for (size_t i = 0; i < n; ++i) next[order[i]] = order[(i + 1) % n];  // one cycle through all
  if (cudaMalloc(&g_next, n * sizeof(unsigned)) != cudaSuccess ||
      cudaMalloc(&g_out, (1 << 20) * sizeof(unsigned)) != cudaSuccess ||
      cudaMalloc(&g_fout, (1 << 20) * sizeof(float)) != cudaSuccess) {
    std::fprintf(stderr, "stall_kernels: cudaMalloc failed (no GPU?)\n");
    return 1;
  }
  cudaMemcpy(g_next, next.data(), n * sizeof(unsigned), cudaMemcpyHostToDevice);
  run_for("pointer_chase", seconds, once, [] { pointer_chase<<<264, 256>>>(g_next, g_out, 2000); });
  run_for("fma_chain", seconds, once, [] { fma_chain<<<264, 32>>>(g_fout, 200000); });
  run_for("barrier_imbalance", seconds, once, [] { barrier_imbalance<<<264, 256>>>(g_fout, 4000); });
  cudaFree(g_next);
  cudaFree(g_out);
  cudaFree(g_fout);
  return 0;
}
