#include "format/chunk_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "core/crc32c.h"
#include "format/input_file.h"

namespace strata::format {
namespace {

class FileSource : public ByteSource {
 public:
  FileSource(int fd, uint64_t size) : fd_(fd), size_(size) {}
  ~FileSource() override { ::close(fd_); }
  int64_t read_at(uint64_t offset, void* dst, size_t n) override {
    size_t done = 0;
    while (done < n) {
      ssize_t r = ::pread(fd_, static_cast<char*>(dst) + done, n - done,
                          static_cast<off_t>(offset + done));
      if (r < 0) {
        if (errno == EINTR) continue;
        return -1;
      }
      if (r == 0) break;
      done += static_cast<size_t>(r);
    }
    return static_cast<int64_t>(done);
  }
  uint64_t size() const override { return size_; }

 private:
  int fd_;
  uint64_t size_;
};

class MemorySource : public ByteSource {
 public:
  explicit MemorySource(std::string_view bytes) : bytes_(bytes) {}
  int64_t read_at(uint64_t offset, void* dst, size_t n) override {
    if (offset >= bytes_.size()) return 0;
    size_t take = std::min<size_t>(n, bytes_.size() - offset);
    std::memcpy(dst, bytes_.data() + offset, take);
    return static_cast<int64_t>(take);
  }
  uint64_t size() const override { return bytes_.size(); }

 private:
  std::string_view bytes_;
};

bool valid_chunk_header(const ChunkHeader& h) {
  return h.magic == kChunkMagic && h.header_crc == crc32c(&h, offsetof(ChunkHeader, header_crc));
}

}  // namespace

std::unique_ptr<ByteSource> memory_source(std::string_view bytes) {
  return std::make_unique<MemorySource>(bytes);
}

bool has_strata_magic(std::string_view first_bytes) {
  return first_bytes.size() >= sizeof(kFileMagic) &&
         std::memcmp(first_bytes.data(), kFileMagic, sizeof(kFileMagic)) == 0;
}

bool ChunkReader::open(const std::string& path) {
  uint64_t size = 0;
  int fd = open_regular_file(path, &size, &error_);  // a FIFO or device neither blocks nor is read
  if (fd < 0) return false;
  return open_fd(fd, path);
}

bool ChunkReader::open_fd(int fd, std::string name) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    error_ = name + ": not a regular file (" + describe_file_type(st.st_mode) +
             "); pass a trace file saved on disk";
    return false;
  }
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return open(std::make_unique<FileSource>(fd, static_cast<uint64_t>(st.st_size)), std::move(name));
}

bool ChunkReader::open(std::unique_ptr<ByteSource> source, std::string name) {
  source_ = std::move(source);
  name_ = std::move(name);
  inflate_ = inflate_limits();
  size_ = source_->size();
  return read_header();
}

bool ChunkReader::read_header() {
  FileHeader h{};
  int64_t n = source_->read_at(0, &h, sizeof(h));
  if (n < 0) {
    error_ = name_ + ": offset 0: read error: " + std::strerror(errno);
    return false;
  }
  if (n == 0) {
    error_ = name_ +
             ": offset 0: empty file (0 bytes): the writer never wrote to it (was it killed at start, or is "
             "this the wrong file?)";
    return false;
  }
  if (n < static_cast<int64_t>(sizeof(kFileMagic)) ||
      std::memcmp(h.magic, kFileMagic, sizeof(kFileMagic)) != 0) {
    error_ = name_ + ": offset 0: not a Strata trace (bad magic); if it is a Chrome/Kineto JSON or other "
             "profiler output, convert it with `strata import`";
    return false;
  }
  if (n < static_cast<int64_t>(sizeof(h))) {
    error_ = name_ + ": offset " + std::to_string(n) + ": file header cut short (" + std::to_string(n) +
             " of " + std::to_string(sizeof(h)) + " bytes); the writer died before writing anything";
    return false;
  }
  if (h.crc != crc32c(&h, offsetof(FileHeader, crc))) {
    error_ = name_ + ": offset 0: file header checksum mismatch; the file is corrupt";
    return false;
  }
  if (h.version_major > kVersionMajor) {
    error_ = name_ + ": offset 8: format version " + std::to_string(h.version_major) + "." +
             std::to_string(h.version_minor) + " is newer than this reader (" +
             std::to_string(kVersionMajor) + "." + std::to_string(kVersionMinor) +
             "); upgrade Strata to read it";
    return false;
  }
  if (h.version_major == 0 || h.header_size < sizeof(FileHeader) || h.header_size > 4096) {
    error_ = name_ + ": offset 8: invalid format version or header size; the file is corrupt";
    return false;
  }
  version_minor_ = h.version_minor;
  pos_ = h.header_size;
  return true;
}

void ChunkReader::warn(uint64_t offset, const std::string& reason) {
  // Bounded: a badly damaged file must not turn into millions of warning lines.
  if (warnings_.size() < 64)
    warnings_.push_back(name_ + ": offset " + std::to_string(offset) + ": " + reason);
}

bool ChunkReader::resync(uint64_t from) {
  // Look for the next plausible chunk header after damage; everything skipped is reported.
  constexpr size_t kWindow = 1 << 16;
  std::string window(kWindow + sizeof(ChunkHeader), '\0');
  for (uint64_t base = from; base < size_; base += kWindow) {
    int64_t n = source_->read_at(base, window.data(), window.size());
    if (n <= 0) break;
    for (int64_t i = 0; i + static_cast<int64_t>(sizeof(ChunkHeader)) <= n; ++i) {
      uint32_t magic;
      std::memcpy(&magic, window.data() + i, 4);
      if (magic != kChunkMagic) continue;
      ChunkHeader h;
      std::memcpy(&h, window.data() + i, sizeof(h));
      if (!valid_chunk_header(h)) continue;
      uint64_t found = base + static_cast<uint64_t>(i);
      skipped_bytes_ += found - pos_;
      warn(pos_, "corrupt data, skipped " + std::to_string(found - pos_) +
                     " bytes to the next valid chunk at offset " + std::to_string(found));
      pos_ = found;
      return true;
    }
    if (n < static_cast<int64_t>(window.size())) break;
  }
  return false;
}

ChunkReader::Status ChunkReader::next(Chunk* out) {
  for (;;) {
    if (pos_ >= size_) return Status::kEnd;
    uint64_t remaining = size_ - pos_;
    ChunkHeader h{};
    if (remaining < sizeof(ChunkHeader)) {
      truncated_ = true;
      truncated_offset_ = pos_;
      truncated_bytes_ = remaining;
      warn(pos_, "truncated tail: " + std::to_string(remaining) +
                     " bytes of an incomplete chunk header (the writer was killed); everything "
                     "before it loaded");
      pos_ = size_;
      return Status::kEnd;
    }
    if (source_->read_at(pos_, &h, sizeof(h)) != static_cast<int64_t>(sizeof(h))) {
      error_ = name_ + ": offset " + std::to_string(pos_) + ": read error: " + std::strerror(errno);
      return Status::kError;
    }
    if (!valid_chunk_header(h)) {
      ++corrupt_chunks_;
      if (resync(pos_ + 1)) continue;
      skipped_bytes_ += remaining;
      warn(pos_, "corrupt chunk header and no valid chunk after it; " + std::to_string(remaining) +
                     " bytes ignored");
      pos_ = size_;
      return Status::kEnd;
    }
    if (h.stored_size > kMaxChunkPayload || h.raw_size > kMaxChunkPayload) {
      ++corrupt_chunks_;
      warn(pos_, "chunk claims " + std::to_string(h.stored_size) + " bytes, over the limit; skipped");
      if (resync(pos_ + 1)) continue;
      pos_ = size_;
      return Status::kEnd;
    }
    if (remaining - sizeof(ChunkHeader) < h.stored_size) {
      truncated_ = true;
      truncated_offset_ = pos_;
      truncated_bytes_ = remaining;
      warn(pos_, "truncated tail: last chunk has " + std::to_string(remaining - sizeof(ChunkHeader)) +
                     " of " + std::to_string(h.stored_size) +
                     " payload bytes (the writer was killed); everything before it loaded");
      pos_ = size_;
      return Status::kEnd;
    }
    frame_.resize(sizeof(ChunkHeader) + h.stored_size);
    if (source_->read_at(pos_, frame_.data(), frame_.size()) != static_cast<int64_t>(frame_.size())) {
      error_ = name_ + ": offset " + std::to_string(pos_) + ": read error: " + std::strerror(errno);
      return Status::kError;
    }
    uint64_t chunk_offset = pos_;
    pos_ += frame_.size();
    std::string_view stored(frame_.data() + sizeof(ChunkHeader), h.stored_size);
    if (crc32c(stored.data(), stored.size()) != h.payload_crc) {
      ++corrupt_chunks_;
      warn(chunk_offset, "chunk payload checksum mismatch (type " + std::to_string(h.type) +
                             "); chunk skipped");
      continue;
    }
    std::string_view payload = stored;
    if (h.flags & kChunkZstd) {
      // raw_size comes from the file: checked against the compressed bytes actually present before
      // anything is allocated for it, so a small forged chunk cannot claim 256 MiB.
      if (!inflate_within(h.raw_size, h.stored_size, inflate_.ratio)) {
        ++corrupt_chunks_;
        warn(chunk_offset, "zstd chunk claims " + std::to_string(h.raw_size) + " bytes from " +
                               std::to_string(h.stored_size) + " compressed, more than the limit of " +
                               std::to_string(inflate_.ratio) +
                               ":1 (a compression bomb or corrupt); chunk "
                               "skipped; if the file is genuine, raise the limit with " +
                               kInflateRatioEnv + "=N");
        continue;
      }
      decompressed_.resize(h.raw_size);
      size_t n = ZSTD_decompress(decompressed_.data(), decompressed_.size(), stored.data(), stored.size());
      if (ZSTD_isError(n) || n != h.raw_size) {
        ++corrupt_chunks_;
        warn(chunk_offset, "zstd payload does not decompress to its stated size; chunk skipped");
        continue;
      }
      payload = decompressed_;
    } else if (h.raw_size != h.stored_size) {
      ++corrupt_chunks_;
      warn(chunk_offset, "uncompressed chunk with mismatched sizes; chunk skipped");
      continue;
    }
    out->type = h.type;
    out->flags = h.flags;
    out->stream_id = h.stream_id;
    out->offset = chunk_offset;
    out->payload = payload;
    out->framed = std::string_view(frame_);
    return Status::kChunk;
  }
}

}  // namespace strata::format
