// Types shared by the sampler's pieces: what a sample source hands over (RawSample), and what the
// sampling thread hands to the trace writer (SampleBatch: definitions, then samples using them).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/sample_payloads.h"

namespace strata::sample {

inline constexpr size_t kMaxNativeFrames = 127;  // the kernel's default callchain depth

// x86-64 user registers in perf_event's order (PERF_REG_X86_*), the subset DWARF unwinding uses.
enum PerfReg : int {
  kRegAx = 0,
  kRegBx = 1,
  kRegCx = 2,
  kRegDx = 3,
  kRegSi = 4,
  kRegDi = 5,
  kRegBp = 6,
  kRegSp = 7,
  kRegIp = 8,
  kRegR8 = 16,
  kRegR9,
  kRegR10,
  kRegR11,
  kRegR12,
  kRegR13,
  kRegR14,
  kRegR15,
};
inline constexpr int kPerfRegCount = 24;  // array slots indexed by PerfReg
// The mask asked for: general registers, stack and instruction pointers (no flags, segments).
inline constexpr uint64_t kPerfRegMask = 0xFF01FFull;  // AX..IP (bits 0-8), R8..R15 (bits 16-23)

// One sample as a source delivers it. Pointers are valid only during the callback.
struct RawSample {
  uint32_t pid = 0;
  uint32_t tid = 0;
  int64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint32_t event = 0;   // index into the source's events
  uint32_t weight = 1;  // periods this sample stands for (timer overruns)
  // Kernel callchain (frame pointers), leaf first; empty when the source copied the stack instead.
  const uint64_t* ips = nullptr;
  uint32_t ip_count = 0;
  // Registers and a copy of the user stack from the stack pointer up (for unwinding here).
  bool has_regs = false;
  uint64_t regs[kPerfRegCount] = {};
  const uint8_t* stack = nullptr;
  uint32_t stack_size = 0;
};

// A frame before interning (the sampling thread's view).
struct FrameDef {
  format::SampleFrame frame;  // ids: mapping id for native frames; strings below for Python
  std::string function, file;
};

struct MappingDef {
  format::SampleMapping mapping;  // path left 0: the writer interns path_text
  std::string path_text;
};

struct SampleRecord {
  uint32_t tid = 0;
  int64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint32_t stack = 0;
  uint32_t event = 0;
  uint32_t weight = 1;
};

// Handed from the sampling thread to the writer: definitions are written before the counts that
// use them.
struct SampleBatch {
  std::vector<MappingDef> mappings;
  std::vector<FrameDef> frames;
  std::vector<format::SampleStack> stacks;
  std::vector<SampleRecord> samples;
  std::vector<std::pair<uint32_t, std::string>> thread_names;  // threads seen for the first time
  void clear() {
    thread_names.clear();
    mappings.clear();
    frames.clear();
    stacks.clear();
    samples.clear();
  }
  bool empty() const { return mappings.empty() && frames.empty() && stacks.empty() && samples.empty(); }
};

// Why samples were lost or kept damaged. Written as "dropped.sample_<name>" (docs/trace-format.md).
enum SampleLoss : int {
  kLossRingOverflow = 0,  // the kernel ring buffer was full (PERF_RECORD_LOST)
  kLossThrottled,         // the kernel throttled sampling (estimated samples not taken)
  kLossUnwindFailed,      // DWARF unwinding stopped early: the sample is kept with the frames found
  kLossEvictionOverflow,  // counts evicted from a full table that could not be written
  kLossSignalBuffer,      // fallback mode: the thread's sample buffer was full
  kLossNoThreadBuffer,    // fallback mode: a signal on a thread not set up yet
  kLossPythonStack,       // the Python stack could not be read: the sample keeps its native frames
  kLossBadRecord,         // a malformed kernel record (skipped)
  kLossPythonRecord,      // in-thread Python reads: no handler record for the sample (its ring was full,
                          // no ring left, the signal not delivered): the sample keeps its native frames
  kLossCount,
};
const char* loss_name(int cause);  // "ring_overflow", ...
// Whether a counted cause still keeps its sample (a partial stack).
inline bool loss_keeps_sample(int cause) {
  return cause == kLossUnwindFailed || cause == kLossPythonStack || cause == kLossPythonRecord;
}

}  // namespace strata::sample
