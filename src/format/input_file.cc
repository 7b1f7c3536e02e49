#include "format/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "core/input_file.h"

namespace strata::format {
namespace {

std::string not_regular(const std::string& path, mode_t mode) {
  if (S_ISDIR(mode)) return path + ": is a directory, not a file; pass a file inside it";
  return path + ": not a regular file (" + describe_file_type(mode) +
         "); Strata reads its inputs from files on disk: save the data to a file first and pass that";
}

}  // namespace

std::string describe_file_type(mode_t mode) { return core::describe_file_type(mode); }

int open_regular_file(const std::string& path, uint64_t* size, std::string* error) {
  // The one input check (core/input_file.h); a user's input gets the advice of what to do instead.
  mode_t refused = 0;
  const int fd = core::open_regular_file(path, UINT64_MAX, size, error, &refused);
  if (fd < 0 && refused != 0) *error = not_regular(path, refused);
  return fd;
}

bool read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& limit_hint,
                       std::string* bytes, std::string* error) {
  uint64_t size = 0;
  int fd = open_regular_file(path, &size, error);
  if (fd < 0) return false;
  if (size > max_bytes) {
    ::close(fd);
    *error = path + ": " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes) +
             " bytes; " + limit_hint;
    return false;
  }
  bytes->assign(static_cast<size_t>(size), '\0');
  size_t done = 0;
  while (done < size) {
    ssize_t n = ::read(fd, bytes->data() + done, size - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": offset " + std::to_string(done) + ": read error: " + std::strerror(errno);
      ::close(fd);
      return false;
    }
    if (n == 0) break;  // the file shrank while being read: keep what was there
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  bytes->resize(done);
  return true;
}

InflateLimits inflate_limits() {
  InflateLimits limits;
  auto positive = [](const char* name, uint64_t* out) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') return;
    char* end = nullptr;
    unsigned long long v = std::strtoull(text, &end, 10);
    if (*end == '\0' && v > 0) *out = v;
  };
  positive(kInflateRatioEnv, &limits.ratio);
  uint64_t mb = limits.max_bytes >> 20;
  positive(kInflateBytesEnv, &mb);
  limits.max_bytes = mb > (UINT64_MAX >> 20) ? UINT64_MAX : mb << 20;
  return limits;
}

bool check_input_path(const std::string& path, bool directory_ok, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + (errno == ENOENT ? ": no such file or directory"
                                     : ": cannot access: " + std::string(std::strerror(errno)));
    return false;
  }
  if (S_ISREG(st.st_mode) || (directory_ok && S_ISDIR(st.st_mode))) return true;
  *error = not_regular(path, st.st_mode);
  return false;
}

}  // namespace strata::format
