// GPU warp stall reasons (CUPTI PC sampling, Nsight Compute's "warp state" samples) and the culprit
// categories Strata reports them under. The collector stores each reason under CUPTI's own name
// without its prefix (attr_keys::kStallPrefix + short name); analyses group them here, so the table is
// in one place for every reader and analysis.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace strata {

enum class StallCategory : uint8_t {
  kMemoryDependency,     // waiting on a memory result: long/short scoreboard, constant cache miss, drain
  kExecutionDependency,  // waiting on a fixed-latency result ("wait")
  kSynchronization,      // barriers, memory barriers, sleeping warps
  kInstructionFetch,     // no instruction fetched yet, branch target not resolved
  kPipeThrottle,         // a pipe or its queue is full: math, MIO, LG, TEX, dispatch
  kNotSelected,          // eligible but another warp issued (scheduler contention, not a stall)
  kIssued,               // the warp issued ("selected"): no stall
  kOther,                // "misc" and names this table does not know
};
inline constexpr int kStallCategoryCount = 8;

// "memory_dependency", "execution_dependency", "synchronization", "instruction_fetch",
// "pipe_throttle", "not_selected", "issued", "other".
std::string_view stall_category_name(StallCategory c);

// CUPTI's stall reason name without the "smsp__pcsamp_warps_issue_stalled_" prefix (and without
// "smsp__pcsamp_" for the few other counters); other names unchanged.
std::string short_stall_reason(std::string_view cupti_name);
// True for a "_not_issued" variant: those count a subset of the plain reason's samples.
bool is_not_issued_variant(std::string_view reason);
// The category of a reason, given short or CUPTI-prefixed, with or without "_not_issued".
StallCategory classify_stall_reason(std::string_view reason);

}  // namespace strata
