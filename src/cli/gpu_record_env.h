// Environment for the child of `strata record` that turns on the GPU collectors for its level.
#pragma once

#include <string>

namespace strata::cli {

// level: the recorded strata::Level value; runtime_library: path of libstrata.so (the GPU
// libraries sit next to it). Sets, for the child about to exec:
//   >= layer:   NVTX_INJECTION64_PATH=libstrata_nvtx.so (NVTX ranges -> layer spans)
//   >= library: LD_PRELOAD += libstrata_cudnn.so (cuDNN / cuBLAS calls with their parameters)
//   >= runtime: CUDA_INJECTION64_PATH=libstrata_cupti.so (CUDA API; device activity at >= device)
// A variable the user already set to another tool is left alone, with one line on stderr. Missing
// libraries (Strata built without CUDA) give one line when the level asks for them.
void add_gpu_record_env(int level, const std::string& runtime_library);

}  // namespace strata::cli
