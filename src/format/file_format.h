// On-disk layout of a Strata trace file (docs/trace-format.md describes it for humans).
//
//   FileHeader (32 bytes) | Chunk | Chunk | ...
//   Chunk = ChunkHeader (32 bytes) | payload (stored_size bytes, zstd-compressed when flagged)
//
// Chunks are self-describing and append-only: a file cut anywhere loads up to the last complete
// chunk. A file may hold chunks of several processes (streams), told apart by stream_id, which is
// how `strata record` merges the processes of one command into one file.
#pragma once

#include <cstdint>
#include <cstring>

namespace strata::format {

inline constexpr char kFileMagic[8] = {'\x89', 'S', 'T', 'R', 'A', 'T', 'A', '\n'};
inline constexpr uint16_t kVersionMajor = 1;  // readers refuse a larger major version
// Readers accept any minor version (unknown chunks skipped). 1: SpanRecord byte 62 holds the activity
// type (0 in 1.0 files: the loader types those spans, trace/activity_upgrade.h).
inline constexpr uint16_t kVersionMinor = 1;
inline constexpr uint32_t kChunkMagic = 0x4B484353u;  // "SCHK" little-endian

struct FileHeader {
  char magic[8];
  uint16_t version_major;
  uint16_t version_minor;
  uint32_t header_size;  // sizeof(FileHeader) for this version; readers skip what they don't know
  uint64_t flags;        // reserved, 0
  uint32_t reserved;
  uint32_t crc;          // crc32c of the preceding 28 bytes
};
static_assert(sizeof(FileHeader) == 32);

// Fixed numeric values: never renumber, only add.
enum class ChunkType : uint16_t {
  kProcess = 1,        // properties of the writing process (host, pid, command line, clocks, ...)
  kStrings = 2,        // string table entries (id -> bytes), per stream, incremental
  kSpans = 3,          // span records and their attributes
  kClockSnapshot = 4,  // simultaneous readings of several clock domains
  kStats = 5,          // cumulative counters (dropped events by cause, ...); the last one wins
  kEnd = 6,            // clean end of a stream
  kRecord = 7,         // written by `strata record`: the command, exit status, wall time
  // CPU sampling (src/sample; payloads in format/sample_payloads.h). Chunks of a stream refer to
  // ids defined by earlier chunks of the same stream, as span names refer to Strings entries.
  kSampleConfig = 16,    // property list: mode, rate, unwinding, events, what Python frames need
  kSampleMappings = 17,  // executable mappings: address range, file offset, path, build id
  kSampleFrames = 18,    // frames: (mapping, offset), a Python (function, file, line), or an address
  kSampleStacks = 19,    // stacks: frame ids, leaf first, interned by content
  kSampleCounts = 20,    // per-epoch counts keyed by (thread, stack, span, event) (DCPI aggregation)
  kSampleTimeline = 21,  // each sample's time, thread, stack and span (the timeline exports draw)
};

enum ChunkFlags : uint16_t {
  kChunkZstd = 1u << 0,
};

struct ChunkHeader {
  uint32_t magic;        // kChunkMagic
  uint16_t type;         // ChunkType
  uint16_t flags;        // ChunkFlags
  uint32_t stored_size;  // payload bytes in the file
  uint32_t raw_size;     // payload bytes after decompression
  uint64_t stream_id;    // which process session wrote it
  uint32_t payload_crc;  // crc32c of the stored payload
  uint32_t header_crc;   // crc32c of the preceding 28 bytes
};
static_assert(sizeof(ChunkHeader) == 32);

// Upper bound on one chunk's payload: anything larger is treated as corruption.
inline constexpr uint32_t kMaxChunkPayload = 256u << 20;

// How far a zstd chunk may expand: readers skip a chunk whose raw_size exceeds `ratio` times its
// stored bytes plus kInflateAllowance (a compression bomb), before allocating anything for it.
// Writers hold themselves to the default ratio, whatever STRATA_MAX_INFLATE_RATIO says where they
// run: a payload that compresses further (a name of 100 KB of repeated text) is stored
// uncompressed, so every file a writer makes loads in a reader with the default limits.
inline constexpr uint64_t kDefaultInflateRatio = 128;
inline constexpr uint64_t kInflateAllowance = 4096;  // frame overhead makes tiny chunks look dense
constexpr bool inflate_within(uint64_t raw_size, uint64_t stored_size, uint64_t ratio) {
  // In 128 bits: a ratio raised through the environment cannot wrap the product around.
  return static_cast<unsigned __int128>(raw_size) <=
         static_cast<unsigned __int128>(ratio) * stored_size + kInflateAllowance;
}

// Spans payload: SpansChunkHeader | SpanRecord[span_count] | AttrRecord[attr_count]
struct SpansChunkHeader {
  uint32_t span_count;
  uint32_t attr_count;
};

// ClockSnapshot payload: ClockReading[n]
struct ClockReading {
  uint32_t domain;  // ClockDomain
  uint32_t reserved;
  int64_t value;    // ns (or ticks for kTsc)
};
static_assert(sizeof(ClockReading) == 16);

}  // namespace strata::format
