#include "format/chunk_writer.h"

#include <fcntl.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "core/crc32c.h"

namespace strata::format {
namespace {

// The chunks that say who wrote a stream, what it lost and that it ended: the reserve is theirs.
bool closes_stream(uint16_t type) {
  switch (static_cast<ChunkType>(type)) {
    case ChunkType::kProcess:
    case ChunkType::kStats:
    case ChunkType::kClockSnapshot:
    case ChunkType::kEnd:
    case ChunkType::kRecord:
      return true;
    default:
      return false;
  }
}

bool no_space(int number) { return number == ENOSPC || number == EDQUOT; }

// Allocates [from, from + length) without changing the file's size; false with errno set.
bool allocate_past_end(int fd, uint64_t from, uint64_t length) {
  for (;;) {
    if (::fallocate(fd, FALLOC_FL_KEEP_SIZE, static_cast<off_t>(from), static_cast<off_t>(length)) == 0)
      return true;
    if (errno != EINTR) return false;
  }
}

}  // namespace

FileHeader make_file_header() {
  FileHeader h{};
  std::memcpy(h.magic, kFileMagic, sizeof(h.magic));
  h.version_major = kVersionMajor;
  h.version_minor = kVersionMinor;
  h.header_size = sizeof(FileHeader);
  h.crc = crc32c(&h, offsetof(FileHeader, crc));
  return h;
}

ChunkHeader make_chunk_header(ChunkType type, uint16_t flags, uint64_t stream_id, std::string_view stored,
                              uint32_t raw_size) {
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
    error_number_ = errno;
    error_ = path + ": cannot create trace file: " + std::strerror(errno);
    return false;
  }
  FileHeader header = make_file_header();
  return write_all(&header, sizeof(header));
}

bool ChunkWriter::open_new(const std::string& path, bool* exists) {
  return open_new_at(AT_FDCWD, path, path, exists);
}

bool ChunkWriter::open_new_at(int dir_fd, const std::string& name, const std::string& shown, bool* exists) {
  close();
  path_ = shown;
  fd_ = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (exists != nullptr) *exists = fd_ < 0 && errno == EEXIST;
  if (fd_ < 0) {
    error_ = shown + ": cannot create trace file: " + std::strerror(errno);
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

void ChunkWriter::fail(const std::string& what, int number) {
  error_number_ = number;
  error_ = path_ + ": " + what + ": " + std::strerror(number);
}

bool ChunkWriter::write_all(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed at offset " + std::to_string(bytes_written_), errno);
      return false;
    }
    p += n;
    size -= static_cast<size_t>(n);
    bytes_written_ += static_cast<uint64_t>(n);
  }
  return true;
}

void ChunkWriter::keep_reserve(uint64_t bytes) {
  reserve_bytes_ = bytes;
  reserved_end_ = bytes_written_;
  make_room(ChunkType::kSpans, 0);
}

// Before a data chunk of `chunk_bytes`: room for it and, after it, the whole reserve. Allocated a
// reserve ahead, so most chunks find their room there without a system call.
bool ChunkWriter::make_room(ChunkType type, uint64_t chunk_bytes) {
  if (reserve_bytes_ == 0 || fd_ < 0 || closes_stream(static_cast<uint16_t>(type))) return true;
  const uint64_t needed = bytes_written_ + chunk_bytes + reserve_bytes_;
  if (reserved_end_ >= needed) return true;
  int number = 0;
  allocated_past_end_ = true;  // even a failed fallocate may leave blocks allocated
  for (uint64_t end : {needed + reserve_bytes_, needed}) {
    if (allocate_past_end(fd_, bytes_written_, end - bytes_written_)) {
      reserved_end_ = end;
      space_low_ = false;
      return true;
    }
    number = errno;
    if (!no_space(number)) {  // EOPNOTSUPP, ...: this file system keeps no reserve
      reserve_bytes_ = 0;
      return true;
    }
  }
  space_low_ = true;
  fail("no room for a chunk of " + std::to_string(chunk_bytes) + " bytes at offset " +
           std::to_string(bytes_written_) + " (the space left is kept to end the stream)",
       number);
  return false;
}

// After a chunk: a failed one leaves nothing behind (a cut chunk at the end would read as a writer
// killed in the middle of it), and the file stays readable up to the last chunk written.
bool ChunkWriter::finish_chunk(bool ok, uint64_t chunk_start) {
  if (ok) return true;
  // The descriptor's offset goes back too: the next chunk must follow the last whole one, not
  // leave a hole where the cut one was.
  if (bytes_written_ > chunk_start && ::ftruncate(fd_, static_cast<off_t>(chunk_start)) == 0 &&
      ::lseek(fd_, static_cast<off_t>(chunk_start), SEEK_SET) >= 0) {
    bytes_written_ = chunk_start;
    reserved_end_ = std::min(reserved_end_, bytes_written_);  // truncating freed what lay beyond
  }
  return false;
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
    // Kept only when a reader with the default limits takes it back (file_format.h): a payload of
    // repeated text compresses past that ratio and is stored as it is instead.
    if (!ZSTD_isError(n) && n < payload.size() && inflate_within(payload.size(), n, kDefaultInflateRatio)) {
      stored = std::string_view(compressed_.data(), n);
      flags |= kChunkZstd;
    }
  }
  if (!make_room(type, sizeof(ChunkHeader) + stored.size())) return false;
  ChunkHeader header =
      make_chunk_header(type, flags, stream_id, stored, static_cast<uint32_t>(payload.size()));
  // One writev for header and payload keeps a chunk contiguous even if another process appends, and
  // copies nothing (a per-chunk frame buffer cost a fresh allocation and a copy of every payload).
  iovec parts[2] = {{&header, sizeof(header)}, {const_cast<char*>(stored.data()), stored.size()}};
  const uint64_t chunk_start = bytes_written_;
  return finish_chunk(write_all_v(parts, 2), chunk_start);
}

bool ChunkWriter::write_chunk_parts(ChunkType type, uint64_t stream_id,
                                    std::span<const std::string_view> parts) {
  if (fd_ < 0) return false;
  if (parts.size() > 7) {
    error_ = path_ + ": a chunk of more than 7 parts";
    return false;
  }
  uint64_t size = 0;
  uint32_t crc = 0;
  for (std::string_view part : parts) {
    size += part.size();
    crc = crc32c(part.data(), part.size(), crc);
  }
  if (size > kMaxChunkPayload) {
    error_ = path_ + ": chunk payload of " + std::to_string(size) + " bytes exceeds the limit";
    return false;
  }
  if (!make_room(type, sizeof(ChunkHeader) + size)) return false;
  ChunkHeader header{};
  header.magic = kChunkMagic;
  header.type = static_cast<uint16_t>(type);
  header.stored_size = static_cast<uint32_t>(size);
  header.raw_size = static_cast<uint32_t>(size);
  header.stream_id = stream_id;
  header.payload_crc = crc;
  header.header_crc = crc32c(&header, offsetof(ChunkHeader, header_crc));
  iovec iov[8];
  int count = 0;
  iov[count++] = {&header, sizeof(header)};
  for (std::string_view part : parts)
    if (!part.empty()) iov[count++] = {const_cast<char*>(part.data()), part.size()};
  const uint64_t chunk_start = bytes_written_;
  return finish_chunk(write_all_v(iov, count), chunk_start);
}

bool ChunkWriter::write_all_v(iovec* parts, int count) {
  while (count > 0) {
    ssize_t n = ::writev(fd_, parts, count);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write failed at offset " + std::to_string(bytes_written_), errno);
      return false;
    }
    bytes_written_ += static_cast<uint64_t>(n);
    // A short write: continue after what was written.
    auto left = static_cast<size_t>(n);
    while (count > 0 && left >= parts[0].iov_len) {
      left -= parts[0].iov_len;
      ++parts;
      --count;
    }
    if (count > 0) {
      parts[0].iov_base = static_cast<char*>(parts[0].iov_base) + left;
      parts[0].iov_len -= left;
    }
  }
  return true;
}

bool ChunkWriter::write_raw(std::string_view framed) {
  if (fd_ < 0) return false;
  ChunkHeader header{};
  std::memcpy(&header, framed.data(), std::min(framed.size(), sizeof(header)));
  if (!make_room(static_cast<ChunkType>(header.type), framed.size())) return false;
  const uint64_t chunk_start = bytes_written_;
  return finish_chunk(write_all(framed.data(), framed.size()), chunk_start);
}

void ChunkWriter::close() {
  if (fd_ < 0) return;
  // The reserve past the end is given back: truncating to the size frees blocks beyond it.
  if (allocated_past_end_) (void)::ftruncate(fd_, static_cast<off_t>(bytes_written_));
  ::close(fd_);
  fd_ = -1;
  reserve_bytes_ = reserved_end_ = bytes_written_ = 0;
  space_low_ = allocated_past_end_ = false;
}

}  // namespace strata::format
