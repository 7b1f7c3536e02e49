#include "format/trace_merge.h"

#include "format/chunk_reader.h"
#include "format/chunk_writer.h"

namespace strata::format {

MergeResult merge_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                              const Properties& record) {
  MergeResult result;
  ChunkWriter writer;
  if (!writer.open(output)) {
    result.error = writer.error();
    return result;
  }
  for (const std::string& input : inputs) {
    ChunkReader reader;
    if (!reader.open(input)) {
      result.warnings.push_back(reader.error());
      continue;
    }
    Chunk chunk;
    for (;;) {
      auto status = reader.next(&chunk);
      if (status != ChunkReader::Status::kChunk) {
        if (status == ChunkReader::Status::kError) result.warnings.push_back(reader.error());
        break;
      }
      if (!writer.write_raw(chunk.framed)) {
        result.error = writer.error();
        return result;
      }
      ++result.chunks;
    }
    for (const auto& w : reader.warnings()) result.warnings.push_back(w);
    if (reader.truncated()) ++result.truncated_inputs;
  }
  // The merged file keeps what was wrong with its inputs: the record lists every warning.
  Properties full_record = record;
  for (size_t i = 0; i < result.warnings.size(); ++i)
    full_record.set("warning." + std::to_string(i), result.warnings[i]);
  if (!full_record.entries().empty() && !writer.write_chunk(ChunkType::kRecord, 0, full_record.encode())) {
    result.error = writer.error();
    return result;
  }
  writer.close();
  result.ok = true;
  return result;
}

}  // namespace strata::format
