#include "analysis/device_peaks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <set>

namespace strata::analysis {
namespace {

// Order matters: the first entry whose `match` occurs in the device name wins, so specific names
// (H100 PCIe, A100 80GB) come before the generic ones.
constexpr std::array<DevicePeak, 10> kPeaks = {{
    {"h100-pcie", "h100 pcie", 51200, 2000, "NVIDIA H100 datasheet, PCIe: 51.2 TFLOPS FP32, 2.0 TB/s HBM2e"},
    {"h100", "h100", 66900, 3350, "NVIDIA H100 datasheet, SXM: 67 TFLOPS FP32, 3.35 TB/s HBM3"},
    {"h200", "h200", 66900, 4800, "NVIDIA H200 datasheet, SXM: 67 TFLOPS FP32, 4.8 TB/s HBM3e"},
    {"a100-80gb", "a100-sxm4-80gb", 19500, 2039,
     "NVIDIA A100 datasheet, 80GB SXM: 19.5 TFLOPS FP32, 2039 GB/s"},
    {"a100", "a100", 19500, 1555, "NVIDIA A100 datasheet, 40GB: 19.5 TFLOPS FP32, 1555 GB/s"},
    {"v100", "v100", 15700, 900, "NVIDIA V100 datasheet, SXM2: 15.7 TFLOPS FP32, 900 GB/s HBM2"},
    {"mi250x", "mi250x", 47900, 3276.8,
     "AMD Instinct MI250X datasheet: 47.9 TFLOPS FP32 vector, 3.2768 TB/s"},
    {"mi250", "mi250", 45300, 3276.8, "AMD Instinct MI250 datasheet: 45.3 TFLOPS FP32 vector, 3.2768 TB/s"},
    {"mi210", "mi210", 22600, 1638.4, "AMD Instinct MI210 datasheet: 22.6 TFLOPS FP32 vector, 1.6384 TB/s"},
    // One core: 2 AVX-512 FMA units x 16 fp32 lanes x 2 flops x 2.0 GHz; one DDR4-3200 channel.
    {"cpu", "cpu", 128, 25.6, "nominal AVX-512 server core: 2x16-lane FMA at 2.0 GHz; one DDR4-3200 channel"},
}};

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Kineto reports "NVIDIA H100 PCIe"; nvidia-smi "NVIDIA H100 80GB HBM3". Normalize separators.
std::string normalize(std::string_view s) {
  std::string out = lower(s);
  for (char& c : out)
    if (c == '_') c = ' ';
  return out;
}

}  // namespace

std::span<const DevicePeak> device_peak_table() { return kPeaks; }

const DevicePeak* find_device_peak(std::string_view device_name) {
  std::string name = normalize(device_name);
  for (const DevicePeak& p : kPeaks)
    if (name == p.key) return &p;
  for (const DevicePeak& p : kPeaks)
    if (name.find(p.match) != std::string::npos) return &p;
  return nullptr;
}

std::optional<ResolvedPeaks> resolve_peaks(const model::Trace& trace, const Params& params, bool cpu_trace,
                                           std::string* why) {
  ResolvedPeaks r;
  const DevicePeak* entry = nullptr;
  std::string device = params.get("device", "");
  if (!device.empty()) {
    entry = find_device_peak(device);
    if (entry == nullptr) {
      *why = "--param device=" + device +
             " is not in the peak table (h100, h100-pcie, h200, a100, a100-80gb, "
             "v100, mi250, mi250x, mi210, cpu): pass --param peak_gflops=G peak_gbps=B instead";
      return std::nullopt;
    }
  }
  std::string from_key;  // the trace property the device name was read from
  std::string unknown;   // a device name in the trace that the table does not know
  if (entry == nullptr) {
    // Imported Kineto traces list every GPU the process could see ("device.<N>.name", from
    // deviceProperties); prefer one that ran this trace's device work.
    std::set<uint32_t> used;
    for (const SpanRecord& s : trace.spans)
      if (s.level == static_cast<uint8_t>(Level::kDevice) && s.device != kNoDevice) used.insert(s.device);
    bool entry_used = false;
    for (const model::Process& p : trace.processes) {
      for (const auto& [key, value] : p.properties.entries()) {
        std::string k = lower(key);
        if (k.find("name") == std::string::npos ||
            (k.find("device") == std::string::npos && k.find("gpu") == std::string::npos))
          continue;
        const DevicePeak* found = find_device_peak(value);
        if (found == nullptr) {
          if (unknown.empty()) unknown = "'" + value + "' (" + key + ")";
          continue;
        }
        unsigned index = 0;
        const bool is_used = std::sscanf(key.c_str(), "device.%u.name", &index) == 1 && used.count(index);
        if (entry == nullptr || (is_used && !entry_used)) {
          entry = found;
          device = value;
          from_key = key;
          entry_used = is_used;
        }
        if (entry_used) break;
      }
      if (entry_used) break;
    }
  }
  if (entry == nullptr && cpu_trace) entry = find_device_peak("cpu");
  r.gflops = params.get_double("peak_gflops", entry ? entry->peak_gflops : 0);
  r.gbps = params.get_double("peak_gbps", entry ? entry->peak_gbps : 0);
  if (!(r.gflops > 0) || !(r.gbps > 0)) {
    *why = "device peaks unknown (" +
           (unknown.empty() ? std::string("no device name in the trace")
                            : "the trace's device " + unknown + " is not in the peak table") +
           "): pass --param device=h100|h200|a100|v100|mi250|cpu or --param peak_gflops=G peak_gbps=B";
    return std::nullopt;
  }
  char buf[256];
  bool overridden = params.all().count("peak_gflops") || params.all().count("peak_gbps");
  std::snprintf(buf, sizeof(buf), "peaks %.0f GFLOP/s, %.1f GB/s (ridge %.2f flop/byte) from %s", r.gflops,
                r.gbps, r.gflops / r.gbps,
                overridden ? "--param" : (entry ? std::string(entry->source).c_str() : "?"));
  r.description = buf;
  if (!device.empty() && entry)
    r.description += " [device " + device + (from_key.empty() ? "" : " from " + from_key) + ": table entry " +
                     std::string(entry->key) + "]";
  return r;
}

}  // namespace strata::analysis
