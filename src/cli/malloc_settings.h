// The allocator settings `strata record` gives the command (docs/diff.md, "Limits").
//
// With glibc's dynamic mmap and trim thresholds, each process of one unchanged program runs its
// mid-sized buffers in one of two regimes for its whole life: reused from the heap, or handed back
// to the kernel and page-faulted afresh every step (0.3 against 0.9-1.3 ms for one convolution,
// measured 2026-11-29). No statistic inside one recording can see that, so two recordings of the same
// program differed beyond `strata diff`'s threshold in 8 of 20 pairs. `record` therefore pins the
// thresholds where glibc's own rule ends up once a large block has been freed: mmap at 32 MiB (the
// rule's ceiling on 64-bit) and trim at twice that, so every process runs in the reuse regime. The
// user's own malloc settings are kept as given, and `--malloc default` leaves glibc's rule alone.
// What was done is written into the trace's Record chunk (property `malloc`, format/payloads.h) for `strata
// diff`.
#pragma once

#include <string>

namespace strata::cli {

inline constexpr const char* kPinnedMmapThreshold = "33554432";  // 32 MiB: glibc's dynamic maximum
inline constexpr const char* kPinnedTrimThreshold = "67108864";  // twice that, as glibc's rule sets it

struct MallocPlan {
  bool pin = false;    // set kPinned* in the command's environment
  std::string record;  // the Record chunk's value (format::keys::kRecordMalloc): pinned, default, user
};

// What to do, from --malloc (format::keys::kMallocPinned or kMallocDefault) and the recorder's environment:
// settings of the user's that decide the regime (MALLOC_*_ thresholds, glibc.malloc tunables) win over
// pinning.
MallocPlan plan_malloc(const std::string& mode);

// In the command's process before exec: the environment plan_malloc asked for.
void apply_malloc_plan(const MallocPlan& plan);

}  // namespace strata::cli
