// Where each step's time goes (run_recognition.h gives the steps): a partition of every step's wall
// time into phases, so the parts add up to the step time exactly.
//
// Host phases, from the main process's top-level host work (run_recognition.h: is_host_work) on any of
// its threads; at each instant of a step the highest of these that is running decides:
//   eval           the step's evaluation section (an evaluation pass ran there), whatever runs
//   data           waiting for the DataLoader (`enumerate(DataLoader)#...` scopes)
//   optimizer      Optimizer.step / Optimizer.zero_grad scopes
//   communication  a collective runs on a device of the main process and no compute kernel does
//                  (HTA's exposed communication); only on traces with collectives
//   backward       autograd engine scopes; other ops after the step's first backward scope
//   forward        other framework ops, library and runtime calls before the first backward scope
//   other          nothing of the above: Python and framework time not inside an op; also ops after
//                  the step's optimizer step outside an evaluation pass (logging, metrics)
// Device (TensorBoard's step-time categories, over the same step windows, devices of the main process):
// busy = union of kernel, copy and memset executions; kernel = time a kernel (collectives included)
// runs; memcpy = a copy runs and no kernel; memset = a memset runs and neither; idle = not busy.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/run_recognition.h"
#include "trace/span_tree.h"
#include "trace/trace.h"

namespace strata::analysis {

enum class Phase : uint8_t { kData, kForward, kBackward, kOptimizer, kEval, kCommunication, kOther };
inline constexpr size_t kPhaseCount = 7;
std::string_view phase_name(Phase phase);

struct DeviceTime {
  int64_t busy_ns = 0, kernel_ns = 0, memcpy_ns = 0, memset_ns = 0;
};

// A framework op whose self time (its duration less the framework ops inside it) is at least this per
// call counts as computing; shorter ops are mostly the framework's own dispatch (the threshold of the
// framework_overhead verdict, docs/summary.md). PyTorch's scopes (optimizer, autograd engine, data
// wait) never count: their self time is Python and the engine.
inline constexpr int64_t kComputeOpMinNs = 50'000;

struct StepTime {
  int64_t wall_ns = 0;
  std::array<int64_t, kPhaseCount> phase_ns{};
  DeviceTime device;
  // Self time of the computing ops (kComputeOpMinNs) that started in the step, eval sections left out.
  int64_t compute_op_ns = 0;
  int64_t phase(Phase p) const { return phase_ns[static_cast<size_t>(p)]; }
};

struct Breakdown {
  std::vector<StepTime> steps;  // one per window of RunRecognition::windows()
  StepTime total;               // summed over the windows
  bool has_device = false;      // kernels, copies or memsets in the main process
  bool has_collectives = false;
  uint16_t device_process = 0;  // whose device work was read (the main process)
};

Breakdown step_breakdown(const trace::Trace& trace, const trace::SpanTree& tree, const RunRecognition& run);

}  // namespace strata::analysis
