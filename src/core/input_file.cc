#include "core/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace strata::core {
namespace {

std::atomic<uint64_t> g_refused{0};
std::mutex g_first_mutex;
std::string g_first;  // guarded by g_first_mutex

void count_refusal(const std::string& line) {
  if (g_refused.fetch_add(1, std::memory_order_relaxed) == 0) {
    std::lock_guard<std::mutex> lock(g_first_mutex);
    g_first = line;
  }
}

}  // namespace

std::string describe_file_type(mode_t mode) {
  if (S_ISREG(mode)) return "a regular file";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a named pipe (FIFO)";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "an unknown kind of file";
}

int open_regular_file(const std::string& path, uint64_t max_bytes, uint64_t* size, std::string* error,
                      mode_t* refused_mode, int extra_flags) {
  // O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer forever. It changes nothing
  // for a regular file, the only kind read past this point.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY | extra_flags);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return -1;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = path + ": cannot stat: " + std::strerror(errno);
    ::close(fd);
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file (" + describe_file_type(st.st_mode) + "), not read";
    if (refused_mode != nullptr) *refused_mode = st.st_mode;
    ::close(fd);
    return -1;
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    *error = path + ": " + std::to_string(st.st_size) + " bytes, over the limit of " +
             std::to_string(max_bytes) + " bytes, not read";
    if (refused_mode != nullptr) *refused_mode = st.st_mode;
    ::close(fd);
    return -1;
  }
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

int open_named_file(const std::string& path, uint64_t max_bytes, uint64_t* size, std::string* error,
                    int extra_flags, mode_t* refused_mode) {
  mode_t mode = 0;
  const int fd = open_regular_file(path, max_bytes, size, error, &mode, extra_flags);
  if (fd < 0 && mode != 0) count_refusal(*error);
  if (refused_mode != nullptr) *refused_mode = mode;
  return fd;
}

NamedFileRefusals named_file_refusals() {
  NamedFileRefusals r;
  r.count = g_refused.load(std::memory_order_relaxed);
  if (r.count > 0) {
    std::lock_guard<std::mutex> lock(g_first_mutex);
    r.first = g_first;
  }
  return r;
}

}  // namespace strata::core
