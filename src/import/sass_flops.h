// FLOPs from CUPTI's SASS instruction counters, as torch.profiler writes them on its
// "cuda_profiler_range" events (experimental_config profiler_metrics, one event per kernel):
//   smsp__sass_thread_inst_executed_op_{d,f,h}{add,mul,fma}_pred_on.sum
// counts per thread of executed FP64/FP32/FP16 add, multiply and fused multiply-add instructions.
// FLOPs = add + mul + 2 x fma, summed over the three precisions (the formula of NVIDIA's Nsight
// Compute "achieved FLOPs" section). Tensor-core instructions are not among these counters.
#pragma once

#include <optional>
#include <string_view>

namespace strata::import {

class SassFlopCounter {
 public:
  // Takes one metric; returns whether it was a SASS FLOP counter.
  bool add(std::string_view key, double value) {
    constexpr std::string_view kPrefix = "smsp__sass_thread_inst_executed_op_", kSuffix = "_pred_on.sum";
    if (key.substr(0, kPrefix.size()) != kPrefix || key.size() <= kPrefix.size() + kSuffix.size() ||
        key.substr(key.size() - kSuffix.size()) != kSuffix)
      return false;
    const std::string_view op = key.substr(kPrefix.size(), key.size() - kPrefix.size() - kSuffix.size());
    if (op.size() < 4 || (op[0] != 'd' && op[0] != 'f' && op[0] != 'h')) return false;
    const std::string_view kind = op.substr(1);
    if (kind != "add" && kind != "mul" && kind != "fma") return false;
    flops_ = flops_.value_or(0) + (kind == "fma" ? 2 * value : value);
    return true;
  }
  // The FLOPs of the counters seen; nullopt when none was.
  std::optional<double> flops() const { return flops_; }

 private:
  std::optional<double> flops_;
};

}  // namespace strata::import
