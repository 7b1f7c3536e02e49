// Writes one stream (one process's spans) into a trace file: interns strings, batches spans into
// chunks, and emits the string entries a chunk needs before the chunk itself. Used by the
// in-process collector's writer thread and by everything that saves a trace (import, merge).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/span_record.h"
#include "format/chunk_writer.h"
#include "format/properties.h"

namespace strata::format {

class StreamWriter {
 public:
  // A spans chunk is written once it holds `max_chunk_bytes` of records (or `spans_per_chunk`
  // spans): a file cut or killed anywhere loses at most about one chunk. Writers that run for a
  // long time also flush by time (the collector every 100 ms).
  static constexpr size_t kDefaultMaxChunkBytes = 256 * 1024;
  // New strings are written in chunks of at most this many bytes (a longer string alone).
  static constexpr size_t kMaxStringsChunkBytes = 16u << 20;
  StreamWriter(ChunkWriter* out, uint64_t stream_id, int compression_level = 0,
               size_t spans_per_chunk = 16384, size_t max_chunk_bytes = kDefaultMaxChunkBytes);

  // Stream-local string id (1..n; 0 is the empty string).
  uint32_t intern(std::string_view text);

  // span.name and attribute keys/string values must be ids from intern().
  void add_span(const SpanRecord& span, std::span<const AttrRecord> attrs = {});

  bool write_properties(ChunkType type, const Properties& props);
  bool write_clock_snapshot(std::span<const ClockReading> readings);
  // A chunk of another type (the sampler's) whose payload may name interned strings: the strings
  // pending so far are written first, so a reader that stops after it has every name it uses.
  bool write_payload(ChunkType type, std::string_view payload);
  // Writes pending strings and spans as chunks now.
  bool flush();

  uint64_t spans_written() const { return spans_written_; }
  size_t pending_spans() const { return spans_.size(); }
  // Spans that could not be written (a failed write, or no room: ChunkWriter::space_low) and other
  // chunks (the sampler's) that were not: the writer's dropped.write_failed.
  uint64_t spans_lost() const { return spans_lost_; }
  uint64_t chunks_lost() const { return chunks_lost_; }
  const std::string& error() const { return out_->error(); }
  // Some write failed (what it lost is counted above). Later writes are still tried: space may come
  // back, and the chunks that close the stream use the file's reserve (ChunkWriter::keep_reserve).
  bool failed() const { return failed_; }

 private:
  bool flush_strings();
  bool write_spans_chunk();

  ChunkWriter* out_;
  uint64_t stream_id_;
  int compression_level_;
  size_t spans_per_chunk_;
  size_t max_chunk_bytes_;
  std::unordered_map<std::string, uint32_t> ids_;
  std::vector<std::pair<uint32_t, std::string_view>> pending_strings_;
  std::vector<SpanRecord> spans_;
  std::vector<AttrRecord> attrs_;
  std::string payload_;
  uint64_t spans_written_ = 0;
  uint64_t spans_lost_ = 0;
  uint64_t chunks_lost_ = 0;
  bool failed_ = false;
};

}  // namespace strata::format
