// Environment for the child of `strata record` that turns on the GPU collectors for its level.
#pragma once

#include <optional>
#include <string>

#include "trace/trace_summary.h"

namespace strata::cli {

// level: the recorded strata::Level value; runtime_library: path of libstrata.so (the GPU
// libraries sit next to it). Sets, for the child about to exec:
//   >= layer:   NVTX_INJECTION64_PATH=libstrata_nvtx.so (NVTX ranges -> layer spans)
//   >= library: LD_PRELOAD += libstrata_cudnn.so (cuDNN / cuBLAS calls with their parameters)
//   >= runtime: CUDA_INJECTION64_PATH=libstrata_cupti.so (CUDA API; device activity at >= device)
// A variable the user already set to another tool is left alone, with one line on stderr. Missing
// libraries (Strata built without CUDA) give one line when the level asks for them.
void add_gpu_record_env(int level, const std::string& runtime_library);

// Why no GPU work can be recorded on this machine ("no NVIDIA driver: libcuda.so.1: cannot open
// shared object file"), or nullopt when the driver initializes and sees a GPU. Checked in a child
// process, so the recorder itself never initializes CUDA.
std::optional<std::string> gpu_unavailable_reason();

// After a run at --level runtime/device on a machine with a GPU: one line when the trace holds no
// CUDA API call and no GPU activity (the program did not use CUDA, or the collector never loaded).
std::optional<std::string> gpu_outcome_note(const trace::TraceSummary& summary, int level);

}  // namespace strata::cli
