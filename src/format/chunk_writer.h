// Appends framed chunks to a trace file. Not thread-safe: one writer thread owns it.
#pragma once

#include <sys/uio.h>

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "format/file_format.h"

namespace strata::format {

class ChunkWriter {
 public:
  ChunkWriter() = default;
  ~ChunkWriter();
  ChunkWriter(const ChunkWriter&) = delete;
  ChunkWriter& operator=(const ChunkWriter&) = delete;

  // Creates (truncates) the file and writes the file header. On failure returns false and sets
  // error() to one line naming the file and the reason.
  bool open(const std::string& path);
  // Creates a new file: fails if the name exists (*exists set) and never follows a symbolic link,
  // so a file planted in a shared directory is neither overwritten nor written through.
  bool open_new(const std::string& path, bool* exists = nullptr);
  // The same for `name` relative to the open directory `dir_fd` (`shown` names the file in
  // messages): a directory opened once is written through its descriptor, never its name.
  bool open_new_at(int dir_fd, const std::string& name, const std::string& shown, bool* exists = nullptr);
  // Appends to an existing file, writing the header only if the file is empty.
  bool open_append(const std::string& path);
  // compression_level <= 0 stores the payload uncompressed.
  bool write_chunk(ChunkType type, uint64_t stream_id, std::string_view payload, int compression_level = 0);
  // An uncompressed chunk whose payload is the concatenation of `parts` (at most 7), written with
  // one writev: no copy into a contiguous buffer first.
  bool write_chunk_parts(ChunkType type, uint64_t stream_id, std::span<const std::string_view> parts);
  // Copies an already-framed chunk (header + stored payload) verbatim.
  bool write_raw(std::string_view framed);
  void close();

  // Keeps `bytes` of disk allocated past the end of the file (fallocate, FALLOC_FL_KEEP_SIZE) for
  // the chunks that close a stream (Process, Stats, ClockSnapshot, End, Record): when the file
  // system fills up, data chunks are refused first (space_low()), so the counts of what was lost
  // and the End chunk still reach the file. A file system without fallocate gets no reserve.
  void keep_reserve(uint64_t bytes);
  // Data chunks are being refused: the disk had no room for the next one and its reserve.
  bool space_low() const { return space_low_; }

  const std::string& error() const { return error_; }
  int error_number() const { return error_number_; }  // errno of the last failure (ENOSPC, EIO, ...)
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  bool write_all(const void* data, size_t size);
  bool write_all_v(struct iovec* parts, int count);
  bool make_room(ChunkType type, uint64_t chunk_bytes);
  bool finish_chunk(bool ok, uint64_t chunk_start);
  void fail(const std::string& what, int number);

  int fd_ = -1;
  std::string path_;
  std::string error_;
  int error_number_ = 0;
  std::string compressed_;
  uint64_t bytes_written_ = 0;
  uint64_t reserve_bytes_ = 0;  // 0: no reserve kept
  uint64_t reserved_end_ = 0;   // blocks are allocated up to here
  bool space_low_ = false;
  bool allocated_past_end_ = false;  // close() gives the blocks past the end back
};

FileHeader make_file_header();
ChunkHeader make_chunk_header(ChunkType type, uint16_t flags, uint64_t stream_id, std::string_view stored,
                              uint32_t raw_size);

}  // namespace strata::format
