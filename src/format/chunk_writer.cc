#include "format/chunk_writer.h"

#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "core/crc32c.h"

namespace strata::format {

FileHeader make_file_header() {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(h.magic));
  h.version_major = kVersionMajor;
  h.version_minor = kVersionMinor;
  h.header_size = sizeof(FileHeader);
  h.crc = crc32c(&h, offsetof(FileHeader, crc));
  return h;
}

ChunkHeader make_chunk_header(ChunkType type, uint16_t flags, uint64_t stream_id,
                              std::string_view stored, uint32_t raw_size) {
  ChunkHeader h{};
  h.magic = kChunkMagic;
  h.type = static_cast<uint16_t>(type);
  h.flags = flags;
  h.stored_size = static_cast<uint32_t>(stored.size());
  h.raw_size = raw_size;
  h.stream_id = stream_id;
  h.payload_crc = crc32c(stored.data(), stored.size());
  h.header_crc = crc32c(&h, offsetof(ChunkHeader, header_crc));
  return h;
}

ChunkWriter::~ChunkWriter() { close(); }

bool ChunkWriter::open(const std::string& path) {
  close();
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = path + ": cannot create trace file: " + std::strerror(errno);
    return false;
  }
  FileHeader header = make_file_header();
  return write_all(&header, sizeof(header));
}

bool ChunkWriter::open_new(const std::string& path, bool* exists) {
  close();
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (exists != nullptr) *exists = fd_ < 0 && errno == EEXIST;
  if (fd_ < 0) {
    error_ = path + ": cannot create trace file: " + std::strerror(errno);
    return false;
  }
  FileHeader header = make_file_header();
  return write_all(&header, sizeof(header));
}

bool ChunkWriter::open_append(const std::string& path) {
  close();
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    error_ = path + ": cannot open trace file for appending: " + std::strerror(errno);
    return false;
  }
  off_t end = ::lseek(fd_, 0, SEEK_END);
  if (end == 0) {
    FileHeader header = make_file_header();
    return write_all(&header, sizeof(header));
  }
  bytes_written_ = static_cast<uint64_t>(end);
  return true;
}

bool ChunkWriter::write_all(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      error_ = path_ + ": write failed at offset " + std::to_string(bytes_written_) + ": " +
               std::strerror(errno);
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return true;
}

bool ChunkWriter::write_chunk(ChunkType type, uint64_t stream_id, std::string_view payload,
                              int compression_level) {
  if (fd_ < 0) return false;
  if (payload.size() > kMaxChunkPayload) {
    error_ = path_ + ": chunk payload of " + std::to_string(payload.size()) + " bytes exceeds the limit";
    return false;
  }
  std::string_view stored = payload;
  uint16_t flags = 0;
  if (compression_level > 0 && payload.size() > 256) {
    compressed_.resize(ZSTD_compressBound(payload.size()));
    size_t n = ZSTD_compress(compressed_.data(), compressed_.size(), payload.data(), payload.size(),
                             compression_level);
    if (!ZSTD_isError(n) && n < payload.size()) {
      stored = std::string_view(compressed_.data(), n);
      flags |= kChunkZstd;
    }
  }
  ChunkHeader header =
      make_chunk_header(type, flags, stream_id, stored, static_cast<uint32_t>(payload.size()));
  // One write for header and payload keeps a chunk contiguous even if another process appends.
  std::string frame;
  frame.reserve(sizeof(header) + stored.size());
  frame.append(reinterpret_cast<const char*>(&header), sizeof(header));
  frame.append(stored);
  return write_all(frame.data(), frame.size());
}

bool ChunkWriter::write_raw(std::string_view framed) {
  if (fd_ < 0) return false;
  return write_all(framed.data(), framed.size());
}

void ChunkWriter::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

}  // namespace strata::format
