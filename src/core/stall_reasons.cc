#include "core/stall_reasons.h"

#include <array>
#include <utility>

namespace strata {
namespace {

constexpr std::string_view kStalledPrefix = "smsp__pcsamp_warps_issue_stalled_";
constexpr std::string_view kSamplingPrefix = "smsp__pcsamp_";
constexpr std::string_view kNotIssued = "_not_issued";

// Stall reasons of Volta..Blackwell as CUPTI names them (Nsight Compute's "Warp Stall Sampling").
// Categories follow the legacy CUPTI stall kinds (CUpti_ActivityPCSamplingStallReason) where one
// existed: MEMORY_DEPENDENCY, CONSTANT_MEMORY_DEPENDENCY -> memory dependency; EXEC_DEPENDENCY ->
// execution dependency; SYNC, SLEEPING -> synchronization; INST_FETCH -> instruction fetch;
// PIPE_BUSY, MEMORY_THROTTLE, TEXTURE -> pipe throttle; NOT_SELECTED; NONE (issued) -> issued.
// A name not listed here (a newer GPU's reason) counts as "other" and keeps its own name in the trace.
constexpr std::array<std::pair<std::string_view, StallCategory>, 18> kTable = {{
    {"long_scoreboard", StallCategory::kMemoryDependency},   // L1TEX: global, local, texture, surface
    {"short_scoreboard", StallCategory::kMemoryDependency},  // MIO: shared memory, special math
    {"imc_miss", StallCategory::kMemoryDependency},          // immediate constant cache miss
    {"drain", StallCategory::kMemoryDependency},             // stores draining at exit
    {"wait", StallCategory::kExecutionDependency},           // fixed-latency dependency
    {"barrier", StallCategory::kSynchronization},
    {"membar", StallCategory::kSynchronization},
    {"sleeping", StallCategory::kSynchronization},  // nanosleep / yield: spin-waits
    {"no_instructions", StallCategory::kInstructionFetch},
    {"branch_resolving", StallCategory::kInstructionFetch},
    {"math_pipe_throttle", StallCategory::kPipeThrottle},
    {"mio_throttle", StallCategory::kPipeThrottle},
    {"lg_throttle", StallCategory::kPipeThrottle},
    {"tex_throttle", StallCategory::kPipeThrottle},
    {"dispatch_stall", StallCategory::kPipeThrottle},
    {"not_selected", StallCategory::kNotSelected},
    {"selected", StallCategory::kIssued},
    {"misc", StallCategory::kOther},
}};

}  // namespace

std::string_view stall_category_name(StallCategory c) {
  switch (c) {
    case StallCategory::kMemoryDependency:
      return "memory_dependency";
    case StallCategory::kExecutionDependency:
      return "execution_dependency";
    case StallCategory::kSynchronization:
      return "synchronization";
    case StallCategory::kInstructionFetch:
      return "instruction_fetch";
    case StallCategory::kPipeThrottle:
      return "pipe_throttle";
    case StallCategory::kNotSelected:
      return "not_selected";
    case StallCategory::kIssued:
      return "issued";
    case StallCategory::kOther:
      break;
  }
  return "other";
}

std::string short_stall_reason(std::string_view name) {
  if (name.starts_with(kStalledPrefix)) return std::string(name.substr(kStalledPrefix.size()));
  if (name.starts_with(kSamplingPrefix)) return std::string(name.substr(kSamplingPrefix.size()));
  return std::string(name);
}

bool is_not_issued_variant(std::string_view reason) { return reason.ends_with(kNotIssued); }

StallCategory classify_stall_reason(std::string_view reason) {
  std::string name = short_stall_reason(reason);
  std::string_view base = name;
  if (is_not_issued_variant(base)) base.remove_suffix(kNotIssued.size());
  for (const auto& [known, category] : kTable)
    if (base == known) return category;
  return StallCategory::kOther;
}

}  // namespace strata
