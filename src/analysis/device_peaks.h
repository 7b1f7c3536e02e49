// Peak arithmetic throughput and memory bandwidth per device, for roofline analyses.
//
// The figures are the vendors' published datasheet numbers, listed in device_peaks.cc with their
// source: dense FP32 (non-tensor-core), the dense tensor-core (matrix-core) peaks per input
// precision (NVIDIA's datasheets print the 2:4-sparsity figures; the table holds half of them), and
// the bandwidth of the board's DRAM/HBM. They are nominal. Precedence: --param peak_gflops=,
// peak_gbps= win; --param device=KEY picks an entry; otherwise the device properties of the GPU that
// ran the trace's kernels (Nsight Systems' TARGET_INFO_GPU: SM count, clock, compute capability,
// memory bandwidth) give FP32 and bandwidth, and its name picks the entry for the tensor peaks;
// otherwise the device name alone picks the entry. The CPU entry is a per-core nominal for an
// AVX-512 server core and only a starting point: pass the measured peaks of the machine.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "analysis/analysis.h"
#include "core/kernel_names.h"

namespace strata::analysis {

// Dense tensor-core (matrix-core) peaks in GFLOP/s (GOP/s for int8); 0 where the device has no
// such tensor-core path or the datasheet gives none.
struct TensorPeaks {
  double tf32 = 0, fp16 = 0, fp8 = 0, int8 = 0, fp64 = 0;  // fp16 also stands for bf16 (same rate)
};

struct DevicePeak {
  std::string_view key;     // short name used with --param device=KEY
  std::string_view match;   // case-insensitive substring of a reported device name
  double peak_gflops;       // FP32 GFLOP/s (SIMT)
  double peak_gbps;         // DRAM/HBM GB/s (1e9 bytes/s)
  TensorPeaks tensor;       // dense tensor-core peaks
  std::string_view source;  // where the figures come from
};

// Finds the entry whose `match` occurs in `device_name` (case-insensitive), or whose key equals it.
const DevicePeak* find_device_peak(std::string_view device_name);

// FP32 lanes per SM of an NVIDIA compute capability (64 on 6.0, 7.x, 8.0; 128 on 6.1, 8.6-8.9, 9.x,
// 10.x, 12.x); 0 when unknown. Peak FP32 = SMs x clock x lanes x 2 (an FMA is two flops).
int fp32_lanes_per_sm(int major, int minor);

struct ResolvedPeaks {
  double gflops = 0;  // FP32
  double gbps = 0;
  TensorPeaks tensor;       // zero when unknown (a --param override, a device without an entry)
  std::string description;  // e.g. "peaks 19500 GFLOP/s, 1555.0 GB/s ... from <source>" for table notes

  // The compute ceiling of one kernel: the tensor-core peak of its precision (core/kernel_names.h)
  // when it is a tensor-core kernel and the peak is known, else the FP16/BF16 tensor peak for a
  // tensor-core kernel of unrecognized precision, else FP32. *label says which ("fp32",
  // "tensor bf16", "tensor fp16 (precision not in the name)").
  double ceiling(std::string_view kernel_name, std::string* label = nullptr) const;
};

// Peaks for an analysis (precedence above). Returns nullopt with *why saying what to pass.
std::optional<ResolvedPeaks> resolve_peaks(const trace::Trace& trace, const Params& params, bool cpu_trace,
                                           std::string* why);

}  // namespace strata::analysis
