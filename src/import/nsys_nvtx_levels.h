// Which NVTX ranges of an Nsight Systems export are model-level spans (a whole step of the program's
// loop, or a run of them) and which are layer-level (the work inside a step). NVTX carries no level:
// programs push ranges at every granularity, so the reader decides by name and nesting, per thread:
//
//   1. A range whose name says it is a step is at the model level: the name, lower-cased, without a
//      trailing number and separators ("ProfilerStep#3", "train_step 12", "iteration-5"), is one of
//      profilerstep, step, train_step, training_step, eval_step, val_step, validation_step,
//      test_step, predict_step, inference_step, iteration, iter, train_iteration, batch.
//   2. Every range that encloses a model-level range on its thread is at the model level too (a
//      "training" range around the steps).
//   3. On a thread with no step-named range, its one outermost range is at the model level when it
//      encloses every other range of the thread (and there is at least one other): the program
//      wrapped its whole run, or its one evaluation, in a range.
//   4. Every other range is at the layer level.
//
// Enclosing: same thread, start <= other's start and other's end <= end (equal intervals: the
// earlier row encloses). Push/pop ranges always nest; start/end ranges that cross are treated as not
// enclosing each other. Ranges without a usable start or end take no part and are layer-level.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace strata::import {

struct NvtxRange {
  std::optional<int64_t> start, end;
  int64_t thread = 0;  // globalTid
  std::string_view name;
};

// Rule 1 alone.
bool is_step_range_name(std::string_view name);
// One flag per range, in input order: true for the model level (rules 1-3), false for the layer level.
std::vector<bool> nvtx_model_level(std::span<const NvtxRange> ranges);

}  // namespace strata::import
