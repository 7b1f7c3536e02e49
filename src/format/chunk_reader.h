// Streaming reader of framed chunks. Never trusts the input: every length is bounded, every chunk
// checksummed, and every problem becomes one line naming the file, the offset and the reason.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "format/file_format.h"
#include "format/input_file.h"

namespace strata::format {

struct Chunk {
  uint16_t type = 0;
  uint16_t flags = 0;
  uint64_t stream_id = 0;
  uint64_t offset = 0;           // file offset of the chunk header
  std::string_view payload;      // decompressed payload, valid until the next call to next()
  std::string_view framed;       // header + stored payload as in the file (for merging)
};

// Where bytes come from: a file or a memory buffer (fuzzing, tests).
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to n bytes at offset; returns the count read (short only at end of input), -1 on error.
  virtual int64_t read_at(uint64_t offset, void* dst, size_t n) = 0;
  virtual uint64_t size() const = 0;
};

std::unique_ptr<ByteSource> memory_source(std::string_view bytes);

class ChunkReader {
 public:
  enum class Status { kChunk, kEnd, kError };

  // Opens a file. Returns false with error() set when it cannot be read or is not a Strata trace.
  bool open(const std::string& path);
  // Takes an open descriptor (closed by the reader, also on failure); `name` names it in messages.
  bool open_fd(int fd, std::string name);
  bool open(std::unique_ptr<ByteSource> source, std::string name);

  // Next valid chunk. Corrupt chunks are skipped (warned about); a cut-off tail ends the stream
  // with truncated() set. kError only for I/O errors.
  Status next(Chunk* out);

  const std::string& error() const { return error_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  bool truncated() const { return truncated_; }
  uint64_t truncated_offset() const { return truncated_offset_; }
  uint64_t truncated_bytes() const { return truncated_bytes_; }
  uint64_t corrupt_chunks() const { return corrupt_chunks_; }
  uint64_t skipped_bytes() const { return skipped_bytes_; }
  uint64_t unknown_chunks() const { return unknown_chunks_; }
  uint64_t file_size() const { return size_; }
  uint16_t version_minor() const { return version_minor_; }
  const std::string& name() const { return name_; }

 private:
  bool read_header();
  bool resync(uint64_t from);
  void warn(uint64_t offset, const std::string& reason);

  std::unique_ptr<ByteSource> source_;
  std::string name_;
  std::string error_;
  std::vector<std::string> warnings_;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  uint16_t version_minor_ = 0;
  bool truncated_ = false;
  uint64_t truncated_offset_ = 0;
  uint64_t truncated_bytes_ = 0;
  uint64_t corrupt_chunks_ = 0;
  uint64_t skipped_bytes_ = 0;
  uint64_t unknown_chunks_ = 0;
  std::string frame_;
  std::string decompressed_;
  InflateLimits inflate_;
};

// True when the bytes start with the Strata magic (used to tell native files from foreign ones).
bool has_strata_magic(std::string_view first_bytes);

}  // namespace strata::format
