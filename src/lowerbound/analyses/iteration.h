// The iteration a lower-bound analysis compares with the bound: one evaluation of the workload view
// (analysis/workload.h), its outermost framework ops (the evaluation's top-level layer spans) with the
// ONNX layer matched to each, and its time window. Which framework op a library call, runtime call or
// kernel belongs to goes through the workload's span tree (parent ids, launch correlation,
// containment): the analyses build no tree of their own.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/workload.h"

namespace strata::lowerbound {

class Iteration {
 public:
  Iteration(const analysis::Workload& workload, std::vector<size_t> ops, std::vector<int32_t> op_layer,
            int64_t window_start_ns, int64_t window_end_ns);
  const analysis::Workload& workload() const { return workload_; }
  const trace::Trace& trace() const { return workload_.trace(); }
  const std::vector<size_t>& ops() const { return ops_; }
  const std::vector<int32_t>& op_layer() const { return op_layer_; }  // ONNX layer per op, -1: none
  int64_t window_start_ns() const { return start_; }
  int64_t window_end_ns() const { return end_; }
  bool in_window(size_t span) const;
  // Position in ops() of the framework op span `i` ran under: >= 0; -1 under no op and inside the
  // window; -2 under an op of another evaluation, or outside the window.
  int64_t owner(size_t i) const;

 private:
  const analysis::Workload& workload_;
  std::vector<size_t> ops_;
  std::vector<int32_t> op_layer_;
  int64_t start_, end_;
  std::unordered_map<size_t, size_t> op_of_;
};

}  // namespace strata::lowerbound
