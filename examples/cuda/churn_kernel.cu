// The kernel context_churn.cu loads as a module, again and again (compiled to a cubin):
//   nvcc -cubin -arch=sm_90 -o churn_kernel.cubin examples/cuda/churn_kernel.cu
extern "C" __global__ void spin(long long cycles, float* out) {
  long long start = clock64();
  float a = threadIdx.x;
  while (clock64() - start < cycles) a = a * 1.000001f + 1e-7f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}
