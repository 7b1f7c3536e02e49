// Fuzzes the sample chunk reader: the input is a sequence of chunks, each [u8 type selector]
// [u16 length][payload], handed to the loader of sample chunks in order (definitions, then the
// counts and timelines that use them, as a stream has them) from two interleaved streams. Every
// decoder must reject damage with a message; references to ids never defined must map to 0.
#include <cstdint>
#include <cstring>
#include <string>

#include "format/chunk_reader.h"
#include "format/file_format.h"
#include "format/sample_payloads.h"
#include "model/sample_loader.h"

using namespace strata;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const format::ChunkType kTypes[] = {format::ChunkType::kSampleConfig,   format::ChunkType::kSampleMappings,
                                             format::ChunkType::kSampleFrames,   format::ChunkType::kSampleStacks,
                                             format::ChunkType::kSampleCounts,   format::ChunkType::kSampleTimeline};
  model::SampleData samples;
  model::SampleChunkLoader loader(&samples);
  size_t pos = 0;
  while (pos + 3 <= size) {
    const uint8_t selector = data[pos];
    uint16_t length;
    std::memcpy(&length, data + pos + 1, 2);
    pos += 3;
    if (length > size - pos) length = static_cast<uint16_t>(size - pos);
    format::Chunk chunk;
    chunk.type = static_cast<uint16_t>(kTypes[(selector & 0x7F) % 6]);
    chunk.stream_id = selector >> 7;  // two streams: ids are local to each
    chunk.payload = std::string_view(reinterpret_cast<const char*>(data + pos), length);
    pos += length;
    std::string error;
    const bool ok = loader.handle(chunk, static_cast<uint16_t>(selector >> 7),
                                  [](uint32_t id) { return id % 64; }, &error);
    if (!ok && error.empty()) __builtin_trap();  // a skipped chunk always says why
  }
  // Everything the loader kept must be self-consistent: stacks within the frame table.
  for (size_t i = 1; i < samples.stack_count(); ++i)
    for (uint32_t f : samples.stack(static_cast<uint32_t>(i)))
      if (f >= samples.frames.size()) __builtin_trap();
  (void)samples.total();
  return 0;
}
