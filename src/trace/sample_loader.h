// Decoding of the CPU-sampling chunks into trace::SampleData (kept apart from the span loader, which
// hands these chunks over). Every stream's local ids are remapped to trace-wide ones; an id used
// without a definition maps to 0 ("unknown") and is counted; a chunk that does not decode is
// skipped whole with a warning naming the field.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

#include "format/chunk_reader.h"
#include "trace/samples.h"

namespace strata::trace {

class SampleChunkLoader {
 public:
  explicit SampleChunkLoader(SampleData* data) : data_(data) {}
  static bool is_sample_chunk(uint16_t type);
  // `process`: the stream's process index; `map_string`: the stream's string id -> the pool's.
  // False with *error (one line) when the chunk is skipped.
  bool handle(const format::Chunk& chunk, uint16_t process, const std::function<uint32_t(uint32_t)>& map_string,
              std::string* error);

 private:
  struct StreamIds {
    std::unordered_map<uint32_t, uint32_t> mappings, frames, stacks;
  };
  uint32_t lookup(const std::unordered_map<uint32_t, uint32_t>& ids, uint32_t local);
  SampleData* data_;
  std::unordered_map<uint64_t, StreamIds> streams_;
};

}  // namespace strata::trace
