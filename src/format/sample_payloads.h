// Payloads of the CPU-sampling chunks (docs/trace-format.md, "Samples"). Writers: the in-process
// sampler (src/sample, through the session's writer thread) and `strata attach`. Reader: the model's
// sample loader. Every decoder checks each count and length against the payload and fails with one
// line naming the field; a chunk that fails is skipped whole by the loader (and reported).
//
// Ids (mapping, frame, stack) are local to a stream, like string ids: a chunk refers only to ids a
// previous chunk of the same stream defined.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace strata::format {

// --- Mappings -----------------------------------------------------------------------------------
enum SampleMappingFlags : uint8_t {
  kMappingExec = 1u << 0,      // executable (only those are recorded today)
  kMappingAnonymous = 1u << 1, // no file behind it (JIT code, [vdso], ...): frames show address only
};
struct SampleMapping {
  uint32_t id = 0;
  uint64_t start = 0;        // address range [start, end) in the process
  uint64_t end = 0;
  uint64_t file_offset = 0;  // offset in the file of the byte at `start`
  int64_t time_ns = 0;       // CLOCK_MONOTONIC when it was seen mapped (0: mapped before sampling)
  uint32_t path = 0;         // string id (the file, or "[vdso]", "//anon", ...)
  uint8_t flags = 0;         // SampleMappingFlags
  std::string build_id;      // raw bytes of the GNU build id (empty when unknown), at most 64
};
void encode_sample_mappings(const std::vector<SampleMapping>& mappings, std::string* out);
bool decode_sample_mappings(std::string_view payload, std::vector<SampleMapping>* out, std::string* error);

// --- Frames -------------------------------------------------------------------------------------
enum class SampleFrameKind : uint8_t {
  kNative = 1,     // mapping + offset in its file (symbolized when the trace is read)
  kPython = 2,     // CPython frame: function, file (string ids), line
  kAddress = 3,    // an address in no known mapping
  kKernel = 4,     // a kernel address
  kTruncated = 5,  // marker at the root end: the unwinder stopped before the stack's bottom
};
// Native frames other than the leaf hold the return address minus one (an address inside the call
// instruction), so symbol and line lookups name the call site.
struct SampleFrame {
  uint32_t id = 0;
  SampleFrameKind kind = SampleFrameKind::kAddress;
  uint32_t mapping = 0;   // kNative: mapping id
  uint64_t offset = 0;    // kNative: file offset; kAddress/kKernel: the address
  uint32_t function = 0;  // kPython: string ids; kNative: the name of generated code (0: none)
  uint32_t file = 0;
  uint32_t line = 0;      // kPython: line (0: unknown)
};
inline constexpr size_t kSampleFrameBytes = 32;
void encode_sample_frames(const std::vector<SampleFrame>& frames, std::string* out);
bool decode_sample_frames(std::string_view payload, std::vector<SampleFrame>* out, std::string* error);

// --- Stacks -------------------------------------------------------------------------------------
inline constexpr uint32_t kMaxSampleStackDepth = 1024;
struct SampleStack {
  uint32_t id = 0;
  std::vector<uint32_t> frames;  // frame ids, leaf first
};
void encode_sample_stacks(const std::vector<SampleStack>& stacks, std::string* out);
bool decode_sample_stacks(std::string_view payload, std::vector<SampleStack>* out, std::string* error);

// --- Counts (one epoch's aggregation, or the entries evicted from the tables during it) -----------
struct SampleCount {
  uint32_t tid = 0;
  uint32_t stack = 0;
  uint64_t span_id = 0;  // the span open on the thread at the sample (0: none)
  uint32_t event = 0;    // index into the config's events
  uint32_t count = 0;    // samples (weighted: one sample standing for several periods counts them all)
};
struct SampleCountsHeader {
  uint32_t epoch = 0;
  int64_t start_ns = 0;  // CLOCK_MONOTONIC bounds of the epoch
  int64_t end_ns = 0;
};
inline constexpr size_t kSampleCountBytes = 24;
void encode_sample_counts(const SampleCountsHeader& header, const std::vector<SampleCount>& counts, std::string* out);
bool decode_sample_counts(std::string_view payload, SampleCountsHeader* header, std::vector<SampleCount>* out,
                          std::string* error);

// --- Timeline (every sample of one thread, in time order) ----------------------------------------
struct SamplePoint {
  int64_t time_ns = 0;  // CLOCK_MONOTONIC
  uint32_t stack = 0;
  uint32_t event = 0;
  uint32_t weight = 1;
  uint64_t span_id = 0;
};
// u32 tid, u32 count, i64 first time, then per sample LEB128 varints: time delta (ns, >= 0), stack,
// event, weight, span id delta (zigzag, from the previous sample's span id).
void encode_sample_timeline(uint32_t tid, const std::vector<SamplePoint>& points, std::string* out);
bool decode_sample_timeline(std::string_view payload, uint32_t* tid, std::vector<SamplePoint>* out,
                            std::string* error);

}  // namespace strata::format
