#include "cli/malloc_settings.h"

#include <cstdlib>
#include <string_view>

#include "format/payloads.h"

namespace strata::cli {
namespace {

namespace keys = format::keys;

// glibc's environment aliases of the malloc tunables that decide the regime (the glibc manual,
// "Memory Allocation Tunables"), and the tunables' own names in GLIBC_TUNABLES.
constexpr const char* kThresholdVariables[] = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                               "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"};
constexpr std::string_view kThresholdTunables[] = {"glibc.malloc.mmap_threshold",
                                                   "glibc.malloc.trim_threshold", "glibc.malloc.top_pad",
                                                   "glibc.malloc.mmap_max"};

// The user's own threshold settings, as "NAME=value" joined by spaces; empty when there are none.
std::string user_threshold_settings() {
  std::string found;
  auto add = [&found](std::string_view name, std::string_view value) {
    if (!found.empty()) found += ' ';
    found.append(name).append("=").append(value);
  };
  for (const char* name : kThresholdVariables)
    if (const char* value = std::getenv(name); value != nullptr) add(name, value);
  if (const char* tunables = std::getenv("GLIBC_TUNABLES"); tunables != nullptr)
    for (std::string_view tunable : kThresholdTunables)
      if (std::string_view(tunables).find(tunable) != std::string_view::npos) {
        add("GLIBC_TUNABLES", tunables);
        break;
      }
  return found;
}

}  // namespace

MallocPlan plan_malloc(const std::string& mode) {
  MallocPlan plan;
  if (std::string user = user_threshold_settings(); !user.empty()) {
    plan.record = std::string(keys::kMallocUser) + ": " + user;
    return plan;
  }
  if (mode == keys::kMallocDefault) {
    plan.record = keys::kMallocDefault;
    return plan;
  }
  plan.pin = true;
  plan.record = std::string(keys::kMallocPinned) + ": MALLOC_MMAP_THRESHOLD_=" + kPinnedMmapThreshold +
                " MALLOC_TRIM_THRESHOLD_=" + kPinnedTrimThreshold;
  return plan;
}

void apply_malloc_plan(const MallocPlan& plan) {
  if (!plan.pin) return;
  setenv("MALLOC_MMAP_THRESHOLD_", kPinnedMmapThreshold, 1);
  setenv("MALLOC_TRIM_THRESHOLD_", kPinnedTrimThreshold, 1);
}

}  // namespace strata::cli
