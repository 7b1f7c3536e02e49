// Peak arithmetic throughput and memory bandwidth per device, for roofline analyses.
//
// The figures are the vendors' published datasheet numbers (dense FP32, non-tensor-core; memory
// bandwidth of the board's DRAM/HBM), listed in device_peaks.cc with their source. They are
// nominal: a measured peak (--param peak_gflops=, peak_gbps=) always wins. The CPU entry is a
// per-core nominal for an AVX-512 server core and is only a starting point: pass the measured
// peaks of the machine the trace came from.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "analysis/analysis.h"

namespace strata::analysis {

struct DevicePeak {
  std::string_view key;     // short name used with --param device=KEY
  std::string_view match;   // case-insensitive substring of a reported device name
  double peak_gflops;       // FP32 GFLOP/s
  double peak_gbps;         // DRAM/HBM GB/s (1e9 bytes/s)
  std::string_view source;  // where the figure comes from
};

std::span<const DevicePeak> device_peak_table();
// Finds the entry whose `match` occurs in `device_name` (case-insensitive), or whose key equals it.
const DevicePeak* find_device_peak(std::string_view device_name);

struct ResolvedPeaks {
  double gflops = 0;
  double gbps = 0;
  std::string description;  // e.g. "A100 (datasheet): 19500 GFLOP/s, 1555 GB/s" for table notes
};

// Peaks for an analysis: --param peak_gflops/peak_gbps override; --param device=KEY picks a table
// entry; otherwise a device name found in the trace (process properties such as "device_name",
// "gpu_name", "device.0.name"); otherwise nullopt with *why saying what to pass.
std::optional<ResolvedPeaks> resolve_peaks(const model::Trace& trace, const Params& params, bool cpu_trace,
                                           std::string* why);

}  // namespace strata::analysis
