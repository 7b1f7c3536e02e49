// One converter per foreign format. Each parses the JSON, turns events into pending spans on the
// builder, and calls builder.finish(). Internal to the import module.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "import/import_builder.h"

namespace strata::import {

bool convert_kineto(std::string_view json, ImportBuilder& builder, ImportStats* stats, std::string* error);
bool convert_onnxruntime(std::string_view json, ImportBuilder& builder, ImportStats* stats,
                         std::string* error);
bool convert_tensorflow(std::string_view json, ImportBuilder& builder, ImportStats* stats,
                        std::string* error);

// Kineto's spellings of canonical facts as attributes (the builder's ArgTranslation for Kineto;
// kineto_args.cc): appends what `arg` becomes to *out and returns true, or false to keep it as it is.
bool kineto_arg(const ChromeArg& arg, ImportBuilder& builder, std::vector<AttrRecord>* out);

// Binds Chrome flow events ("s"/"t"/"f") to the slices they point at, on the flow's own pid/tid
// track: the enclosing slice (for "s" and for "f" with bp "e"), else the next slice to start.
struct FlowEvent {
  int64_t track_pid = 0;
  int64_t track_tid = 0;
  int64_t ts_ns = 0;
  uint64_t id = 0;
  char phase = 's';
  bool enclosing = false;
  enum Type : uint8_t { kOther, kLaunchToDevice, kForwardToBackward } type = kOther;  // ac2g, fwdbwd
  size_t event_index = 0;
  size_t offset = 0;
};
// Returns, per flow, the index of the bound pending span or SIZE_MAX.
// Hopper: TMA descriptor calls (cuTensorMapEncode*) get the API class "tma_descriptor"; the kernels
// of extensible launches (cuLaunchKernelEx, cudaLaunchKernelExC: the launches that carry cluster
// dimensions) the attribute launch_api naming that launch (core/kernel_names.h). Run by a converter
// once its spans and correlation ids are complete (hopper_calls.cc).
void mark_hopper_calls(ImportBuilder& builder);

std::vector<size_t> bind_flows(const std::vector<PendingSpan>& spans, const std::vector<FlowEvent>& flows);

}  // namespace strata::import
