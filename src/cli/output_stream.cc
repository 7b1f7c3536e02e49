#include "cli/output_stream.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <streambuf>
#include <vector>

namespace strata::cli {

// A write buffer on a descriptor that remembers the errno of its first failed write; once a write
// failed, the rest is dropped (the output is discarded anyway).
class OutputStream::Buffer : public std::streambuf {
 public:
  Buffer(int fd, bool owned) : fd_(fd), owned_(owned), bytes_(size_t{1} << 16) {
    setp(bytes_.data(), bytes_.data() + bytes_.size());
  }
  ~Buffer() override { close(); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Writes what is buffered and closes; the errno of the first failure, or 0.
  int close() {
    if (fd_ < 0) return error_number_;
    drain();
    if (owned_ && ::close(fd_) != 0 && error_number_ == 0) error_number_ = errno;  // NFS: some at close
    fd_ = -1;
    return error_number_;
  }

 protected:
  int_type overflow(int_type ch) override {
    if (!drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return drain() ? 0 : -1; }

 private:
  bool drain() {
    const char* p = pbase();
    size_t left = static_cast<size_t>(pptr() - pbase());
    setp(bytes_.data(), bytes_.data() + bytes_.size());
    while (left > 0 && error_number_ == 0) {
      ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_number_ = errno;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    return error_number_ == 0;
  }

  int fd_;
  bool owned_;
  std::vector<char> bytes_;
  int error_number_ = 0;
};

OutputStream::OutputStream() : stream_(nullptr) {}
OutputStream::~OutputStream() = default;

bool OutputStream::open(const std::string& path, const std::string& name, std::string* error) {
  name_ = name;
  // The temporary file exists (created exclusively by OutputFile): never created or followed here.
  int fd = ::open(path.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = name + ": cannot write: " + std::strerror(errno);
    return false;
  }
  buffer_ = std::make_unique<Buffer>(fd, true);
  stream_.rdbuf(buffer_.get());
  return true;
}

void OutputStream::open_stdout() {
  name_ = "stdout";
  std::cout.flush();  // what was printed before stays before
  std::fflush(stdout);
  buffer_ = std::make_unique<Buffer>(STDOUT_FILENO, false);
  stream_.rdbuf(buffer_.get());
}

bool OutputStream::finish(std::string* error) {
  if (!buffer_) {
    *error = name_ + ": not open";
    return false;
  }
  stream_.flush();
  if (int number = buffer_->close(); number != 0) {
    *error = name_ + ": write failed: " + std::strerror(number);
    return false;
  }
  if (!stream_) {  // a formatting failure rather than a write
    *error = name_ + ": write failed";
    return false;
  }
  return true;
}

}  // namespace strata::cli
