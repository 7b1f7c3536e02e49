#include "analysis/device_peaks.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <utility>

namespace strata::analysis {
namespace {

// Order matters: the first entry whose `match` occurs in the device name wins, so specific names
// (H100 PCIe, H100 NVL, H200 NVL, A100 80GB) come before the generic ones. Tensor peaks are dense:
// NVIDIA's datasheets print TF32/FP16/BF16/FP8/INT8 with 2:4 sparsity (marked *), halved here.
// {tf32, fp16/bf16, fp8, int8, fp64} in GFLOP/s (GOP/s for int8).
// clang-format off
constexpr std::array<DevicePeak, 12> kPeaks = {{
    {"h100-pcie", "h100 pcie", 51200, 2000, {378000, 756500, 1513000, 1513000, 51000},
     "NVIDIA H100 Tensor Core GPU datasheet, PCIe: FP32 51 TFLOPS, TF32 756*, BF16/FP16 1513*, "
     "FP8 3026*, INT8 3026* TOPS, FP64 Tensor 51 TFLOPS (* sparse, halved); 2.0 TB/s HBM2e"},
    {"h100-nvl", "h100 nvl", 60000, 3900, {417500, 835500, 1670500, 1670500, 60000},
     "NVIDIA H100 Tensor Core GPU datasheet, H100 NVL: FP32 60 TFLOPS, TF32 835*, BF16/FP16 1671*, "
     "FP8 3341*, INT8 3341* TOPS, FP64 Tensor 60 TFLOPS (* sparse, halved); 3.9 TB/s HBM3"},
    {"h100", "h100", 66900, 3350, {494500, 989500, 1979000, 1979000, 67000},
     "NVIDIA H100 Tensor Core GPU datasheet, SXM: FP32 67 TFLOPS, TF32 989*, BF16/FP16 1979*, "
     "FP8 3958*, INT8 3958* TOPS, FP64 Tensor 67 TFLOPS (* sparse, halved); 3.35 TB/s HBM3"},
    {"h200-nvl", "h200 nvl", 60000, 4800, {417500, 835500, 1670500, 1670500, 60000},
     "NVIDIA H200 Tensor Core GPU datasheet, H200 NVL: FP32 60 TFLOPS, TF32 835*, BF16/FP16 1671*, "
     "FP8 3341*, INT8 3341* TOPS, FP64 Tensor 60 TFLOPS (* sparse, halved); 4.8 TB/s HBM3e"},
    {"h200", "h200", 66900, 4800, {494500, 989500, 1979000, 1979000, 67000},
     "NVIDIA H200 Tensor Core GPU datasheet, SXM: FP32 67 TFLOPS, TF32 989*, BF16/FP16 1979*, "
     "FP8 3958*, INT8 3958* TOPS, FP64 Tensor 67 TFLOPS (* sparse, halved); 4.8 TB/s HBM3e"},
    {"a100-80gb", "a100-sxm4-80gb", 19500, 2039, {156000, 312000, 0, 624000, 19500},
     "NVIDIA A100 datasheet, 80GB SXM: FP32 19.5 TFLOPS, TF32 156, BF16/FP16 312, INT8 624 TOPS, "
     "FP64 Tensor 19.5 TFLOPS (dense); 2039 GB/s"},
    {"a100", "a100", 19500, 1555, {156000, 312000, 0, 624000, 19500},
     "NVIDIA A100 datasheet, 40GB: FP32 19.5 TFLOPS, TF32 156, BF16/FP16 312, INT8 624 TOPS, "
     "FP64 Tensor 19.5 TFLOPS (dense); 1555 GB/s"},
    {"v100", "v100", 15700, 900, {0, 125000, 0, 0, 0},
     "NVIDIA V100 datasheet, SXM2: FP32 15.7 TFLOPS, Tensor (FP16) 125 TFLOPS; 900 GB/s HBM2"},
    {"mi250x", "mi250x", 47900, 3276.8, {0, 383000, 0, 383000, 95700},
     "AMD Instinct MI250X datasheet: FP32 vector 47.9 TFLOPS, FP16/BF16 matrix 383, INT8 383 TOPS, "
     "FP64 matrix 95.7; 3.2768 TB/s"},
    {"mi250", "mi250", 45300, 3276.8, {0, 362100, 0, 362100, 90500},
     "AMD Instinct MI250 datasheet: FP32 vector 45.3 TFLOPS, FP16/BF16 matrix 362.1, INT8 362.1 TOPS, "
     "FP64 matrix 90.5; 3.2768 TB/s"},
    {"mi210", "mi210", 22600, 1638.4, {0, 181000, 0, 181000, 45300},
     "AMD Instinct MI210 datasheet: FP32 vector 22.6 TFLOPS, FP16/BF16 matrix 181, INT8 181 TOPS, "
     "FP64 matrix 45.3; 1.6384 TB/s"},
    // One core: 2 AVX-512 FMA units x 16 fp32 lanes x 2 flops x 2.0 GHz; one DDR4-3200 channel.
    {"cpu", "cpu", 128, 25.6, {},
     "nominal AVX-512 server core: 2x16-lane FMA at 2.0 GHz; one DDR4-3200 channel"},
}};
// clang-format on

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

const DevicePeak* find_device_peak(std::string_view device_name) {
  std::string name = normalize(device_name);
  for (const DevicePeak& p : kPeaks)
    if (name == p.key) return &p;
  for (const DevicePeak& p : kPeaks)
    if (name.find(p.match) != std::string::npos) return &p;
  return nullptr;
}

namespace {

// The properties of one GPU as an importer stored them ("device.<N>.<field>": Kineto's
// deviceProperties, Nsight Systems' TARGET_INFO_GPU columns).
struct DeviceProperties {
  std::string name;
  double sm_count = 0, clock_hz = 0, memory_bandwidth = 0;  // bytes/s
  int major = -1, minor = -1;
  bool usable() const { return memory_bandwidth > 0 || fp32_gflops() > 0; }
  double fp32_gflops() const {
    const int lanes = fp32_lanes_per_sm(major, minor);
    return sm_count > 0 && clock_hz > 0 && lanes > 0 ? sm_count * clock_hz * lanes * 2 / 1e9 : 0;
  }
};

std::set<uint32_t> devices_used(const trace::Trace& trace) {
  std::set<uint32_t> used;
  for (const SpanRecord& s : trace.spans)
    if (s.level == static_cast<uint8_t>(Level::kDevice) && s.device != kNoDevice) used.insert(s.device);
  return used;
}

double number(const std::string& text) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end != text.c_str() && *end == '\0' && v > 0 && v < 1e18 ? v : 0;
}

// The lowest-numbered GPU that ran device work and whose properties give a peak; only the GPUs
// actually used count (a node lists all of its GPUs).
std::optional<std::pair<uint32_t, DeviceProperties>> used_device_properties(const trace::Trace& trace,
                                                                            const std::set<uint32_t>& used) {
  std::map<uint32_t, DeviceProperties> devices;
  for (const trace::Process& p : trace.processes)
    for (const auto& [key, value] : p.properties.entries()) {
      unsigned id = 0;
      int consumed = 0;
      if (std::sscanf(key.c_str(), "device.%u.%n", &id, &consumed) != 1 || consumed == 0 || !used.count(id))
        continue;
      const std::string field = key.substr(static_cast<size_t>(consumed));
      DeviceProperties& d = devices[id];
      if (field == "name")
        d.name = value;
      else if (field == "smCount" || field == "numSms")
        d.sm_count = number(value);
      else if (field == "clockRate")
        d.clock_hz = number(value);
      else if (field == "memoryBandwidth")
        d.memory_bandwidth = number(value);
      else if (field == "computeMajor")
        d.major = static_cast<int>(number(value));
      else if (field == "computeMinor")
        d.minor = value == "0" ? 0 : static_cast<int>(number(value));
    }
  for (const auto& [id, d] : devices)
    if (d.usable()) return std::make_pair(id, d);
  return std::nullopt;
}

}  // namespace

int fp32_lanes_per_sm(int major, int minor) {
  if (major == 6) return minor == 0 ? 64 : 128;
  if (major == 7) return 64;
  if (major == 8) return minor == 0 ? 64 : 128;
  if (major == 9 || major == 10 || major == 12) return 128;
  return 0;
}

double ResolvedPeaks::ceiling(std::string_view kernel_name, std::string* label) const {
  auto say = [&](std::string text) {
    if (label) *label = std::move(text);
  };
  if (!is_tensor_core_kernel(kernel_name)) {
    say("fp32");
    return gflops;
  }
  const TensorPrecision p = tensor_core_precision(kernel_name);
  double peak = 0;
  switch (p) {
    case TensorPrecision::kTf32:
      peak = tensor.tf32;
      break;
    case TensorPrecision::kFp16:
    case TensorPrecision::kBf16:
      peak = tensor.fp16;
      break;
    case TensorPrecision::kFp8:
      peak = tensor.fp8;
      break;
    case TensorPrecision::kInt8:
      peak = tensor.int8;
      break;
    case TensorPrecision::kFp64:
      peak = tensor.fp64;
      break;
    default:
      break;
  }
  if (peak > 0) {
    say("tensor " + std::string(tensor_precision_name(p)));
    return peak;
  }
  if (tensor.fp16 > 0) {
    say(p == TensorPrecision::kUnknown
            ? "tensor fp16 (precision not in the name)"
            : "tensor fp16 (no " + std::string(tensor_precision_name(p)) + " peak known)");
    return tensor.fp16;
  }
  say("fp32 (no tensor peak known)");
  return gflops;
}

std::optional<ResolvedPeaks> resolve_peaks(const trace::Trace& trace, const Params& params, bool cpu_trace,
                                           std::string* why) {
  ResolvedPeaks r;
  const DevicePeak* entry = nullptr;
  std::string device = params.get("device", "");
  if (!device.empty()) {
    entry = find_device_peak(device);
    if (entry == nullptr) {
      *why = "--param device=" + device +
             " is not in the peak table (h100, h100-pcie, h100-nvl, h200, h200-nvl, a100, a100-80gb, "
             "v100, mi250, mi250x, mi210, cpu): pass --param peak_gflops=G peak_gbps=B instead";
      return std::nullopt;
    }
  }
  const std::set<uint32_t> used = devices_used(trace);
  std::string from_key;  // the trace property the device name was read from
  std::string unknown;   // a device name in the trace that the table does not know
  std::string measured;  // how the used GPU's own properties gave the peaks
  double props_gflops = 0, props_gbps = 0;
  if (entry == nullptr)
    if (auto props = used_device_properties(trace, used)) {
      const auto& [id, d] = *props;
      props_gflops = d.fp32_gflops();
      props_gbps = d.memory_bandwidth / 1e9;
      entry = d.name.empty() ? nullptr : find_device_peak(d.name);
      device = d.name;
      from_key = "device." + std::to_string(id) + ".name";
      char buf[256];
      std::snprintf(buf, sizeof(buf), "device.%u properties:", id);
      measured = buf;
      if (props_gflops > 0) {
        std::snprintf(buf, sizeof(buf), " FP32 = %.0f SMs x %.3f GHz x %d lanes x 2", d.sm_count,
                      d.clock_hz / 1e9, fp32_lanes_per_sm(d.major, d.minor));
        measured += buf;
      }
      if (props_gbps > 0) {
        std::snprintf(buf, sizeof(buf), "%s memoryBandwidth %.1f GB/s", props_gflops > 0 ? ";" : "",
                      props_gbps);
        measured += buf;
      }
    }
  if (entry == nullptr && measured.empty()) {
    // Imported Kineto traces list every GPU the process could see ("device.<N>.name", from
    // deviceProperties); prefer one that ran this trace's device work.
    bool entry_used = false;
    for (const trace::Process& p : trace.processes) {
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
  if (entry == nullptr && measured.empty() && cpu_trace) entry = find_device_peak("cpu");
  const double base_gflops = props_gflops > 0 ? props_gflops : entry ? entry->peak_gflops : 0;
  const double base_gbps = props_gbps > 0 ? props_gbps : entry ? entry->peak_gbps : 0;
  r.gflops = params.get_double("peak_gflops", base_gflops);
  r.gbps = params.get_double("peak_gbps", base_gbps);
  const bool gflops_overridden = params.all().count("peak_gflops") > 0;
  if (entry && !gflops_overridden) r.tensor = entry->tensor;
  if (!(r.gflops > 0) || !(r.gbps > 0)) {
    *why = "device peaks unknown (" +
           (!measured.empty() ? "the properties of the trace's device '" + device + "' give only " + measured
            : unknown.empty() ? std::string("no device name in the trace")
                              : "the trace's device " + unknown + " is not in the peak table") +
           "): pass --param device=h100|h200|a100|v100|mi250|cpu or --param peak_gflops=G peak_gbps=B";
    return std::nullopt;
  }
  char buf[256];
  bool overridden = gflops_overridden || params.all().count("peak_gbps");
  std::snprintf(buf, sizeof(buf), "peaks %.0f GFLOP/s, %.1f GB/s (ridge %.2f flop/byte) from ", r.gflops,
                r.gbps, r.gflops / r.gbps);
  r.description = buf;
  r.description += overridden          ? std::string("--param")
                   : !measured.empty() ? measured
                   : entry             ? std::string(entry->source)
                                       : std::string("?");
  if (!device.empty() && entry)
    r.description += " [device " + device + (from_key.empty() ? "" : " from " + from_key) + ": table entry " +
                     std::string(entry->key) + "]";
  if (r.tensor.fp16 > 0 || r.tensor.tf32 > 0) {
    std::snprintf(buf, sizeof(buf),
                  "; tensor-core kernels (recognized by name) use the dense tensor peaks of %s: TF32 %.0f, "
                  "FP16/BF16 %.0f, FP8 %.0f GFLOP/s",
                  std::string(entry->key).c_str(), r.tensor.tf32, r.tensor.fp16, r.tensor.fp8);
    r.description += buf;
  }
  return r;
}

}  // namespace strata::analysis
