// Stack unwinding on the sampling thread, from what a sample carries: the registers and a copy of
// the top of the user stack (perf_event's REGS_USER + STACK_USER, or the fallback's signal
// handler). DWARF call-frame information comes from the mapped files' .eh_frame_hdr/.eh_frame, read
// from our own read-only mapping of those files (never from the sampled process's memory), so the
// same code unwinds this process and, for `strata attach`, another one. libunwind's remote API
// does the CFI interpretation. The frame-pointer walk is here too (for the fallback's copies).
//
// The input is untrusted (a fuzz target feeds it): every stack read is checked against the copy,
// every file read against the file.
#pragma once

#include <cstdint>
#include <memory>

#include "sample/mappings.h"
#include "sample/sample_types.h"

namespace strata::sample {

enum class UnwindStatus {
  kComplete,   // reached the outermost frame
  kTruncated,  // stopped at the end of the stack copy, or at the depth limit
  kFailed,     // no unwind information for a frame, or unreadable data
};

class Unwinder {
 public:
  explicit Unwinder(MappingTable* mappings);
  ~Unwinder();
  Unwinder(const Unwinder&) = delete;
  Unwinder& operator=(const Unwinder&) = delete;

  // Instruction pointers, leaf first (callers as return addresses). Needs s.has_regs.
  UnwindStatus unwind_dwarf(const RawSample& s, uint64_t* ips, uint32_t max, uint32_t* n);
  UnwindStatus unwind_frame_pointers(const RawSample& s, uint64_t* ips, uint32_t max, uint32_t* n);

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

}  // namespace strata::sample
