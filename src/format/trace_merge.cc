#include "format/trace_merge.h"

#include "format/chunk_reader.h"
#include "format/chunk_writer.h"

namespace strata::format {

namespace {

// Copies every valid chunk of `inputs` verbatim to `writer`; false when the output failed.
bool copy_chunks(const std::vector<std::string>& inputs, ChunkWriter& writer, MergeResult& result) {
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
        return false;
      }
      ++result.chunks;
    }
    for (const auto& w : reader.warnings()) result.warnings.push_back(w);
    if (reader.truncated()) ++result.truncated_inputs;
  }
  return true;
}

// The merged file keeps what was wrong with its inputs: the record lists every warning.
bool finish(ChunkWriter& writer, const Properties& record, MergeResult& result) {
  Properties full_record = record;
  for (size_t i = 0; i < result.warnings.size(); ++i)
    full_record.set("warning." + std::to_string(i), result.warnings[i]);
  if (!full_record.entries().empty() && !writer.write_chunk(ChunkType::kRecord, 0, full_record.encode())) {
    result.error = writer.error();
    return false;
  }
  writer.close();
  result.ok = true;
  return true;
}

}  // namespace

MergeResult merge_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                              const Properties& record) {
  MergeResult result;
  ChunkWriter writer;
  if (!writer.open(output)) {
    result.error = writer.error();
    return result;
  }
  if (copy_chunks(inputs, writer, result)) finish(writer, record, result);
  return result;
}

MergeResult append_trace_files(const std::vector<std::string>& inputs, const std::string& output,
                               const Properties& record) {
  MergeResult result;
  ChunkWriter writer;
  if (!writer.open_append(output)) {
    result.error = writer.error();
    return result;
  }
  if (copy_chunks(inputs, writer, result)) finish(writer, record, result);
  return result;
}

}  // namespace strata::format
