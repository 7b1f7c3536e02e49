#include "sample/jit_map.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "core/input_file.h"

namespace strata::sample {

JitMap::JitMap(std::string path) : path_(std::move(path)) {}

std::string JitMap::perf_map_path(pid_t pid) { return "/tmp/perf-" + std::to_string(pid) + ".map"; }

int JitMap::create_perf_map(pid_t pid, std::string* why, const std::string& dir) {
  const std::string path = dir + "/perf-" + std::to_string(pid) + ".map";
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *why = dir + ": not a directory; " + path + " not created";
    return -1;
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    *why = dir + ": writable by every user without the sticky bit (another user could replace " + path +
           "); not created";
    return -1;
  }
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd >= 0) {
    fchmod(fd, 0600);  // whatever the umask: the names of the process's code are its own
    return fd;
  }
  *why = path + (errno == EEXIST || errno == ELOOP
                     ? ": exists and was not created by strata (a file or link another user may have planted)"
                     : std::string(": cannot create: ") + std::strerror(errno));
  return -1;
}

namespace {
bool parse_hex(std::string_view* s, uint64_t* out) {
  while (!s->empty() && s->front() == ' ') s->remove_prefix(1);
  if (s->size() >= 2 && (*s)[0] == '0' && ((*s)[1] == 'x' || (*s)[1] == 'X')) s->remove_prefix(2);
  uint64_t v = 0;
  size_t n = 0;
  for (; n < s->size() && n < 17; ++n) {
    const char c = (*s)[n];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) break;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  if (n == 0 || n > 16) return false;
  s->remove_prefix(n);
  *out = v;
  return true;
}
}  // namespace

void JitMap::add_lines(std::string_view text) {
  while (!text.empty()) {
    const size_t eol = text.find('\n');
    std::string_view line = text.substr(0, eol);
    text = eol == std::string_view::npos ? std::string_view() : text.substr(eol + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) continue;
    uint64_t start = 0, size = 0;
    std::string_view rest = line;
    if (!parse_hex(&rest, &start) || rest.empty() || rest.front() != ' ' || !parse_hex(&rest, &size) ||
        rest.empty() || rest.front() != ' ' || size == 0 || start + size < start) {
      ++malformed_;
      continue;
    }
    rest.remove_prefix(1);
    if (rest.empty()) {
      ++malformed_;
      continue;
    }
    // Later lines win: generated code is freed and new code placed at the same addresses.
    const uint64_t end = start + size;
    auto it = by_start_.lower_bound(start);
    if (it != by_start_.begin() && std::prev(it)->second.end > start) --it;
    while (it != by_start_.end() && it->first < end) it = by_start_.erase(it);
    by_start_.emplace(start, Entry{end, std::string(rest.substr(0, 512))});
  }
}

JitMap::~JitMap() {
  if (fd_ >= 0) close(fd_);
}

bool JitMap::open_file() {
  // Another user's file of that name is not ours to trust (perf refuses it too); a link is not
  // followed; a FIFO or a device is refused (counted) without blocking: the one input check.
  uint64_t size = 0;
  mode_t refused = 0;
  std::string error;
  const int fd = core::open_named_file(path_, UINT64_MAX, &size, &error, O_NOFOLLOW, &refused);
  if (fd < 0) {
    if (refused != 0)
      problem_ = error;
    else if (errno == ELOOP)
      problem_ = path_ + ": a symbolic link, not followed";
    return false;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    problem_ = path_ + ": cannot stat, not read";
  } else if (st.st_nlink != 1) {
    problem_ = path_ + ": a file with more than one name (a hard link to another file?), not read";
  } else if (st.st_uid != geteuid() && st.st_uid != 0) {
    problem_ = path_ + ": owned by another user, not read";
  } else {
    fd_ = fd;
    return true;
  }
  close(fd);
  return false;
}

void JitMap::refresh(int64_t now_ns) {
  if (fd_ < 0) {
    if (!problem_.empty() || (opened_once_ && now_ns - last_open_ns_ < kMinOpenRetryNs)) return;
    opened_once_ = true;
    last_open_ns_ = now_ns;
    if (!open_file()) return;
  }
  struct stat st {};
  if (fstat(fd_, &st) != 0 || static_cast<uint64_t>(st.st_size) == read_bytes_) return;
  if (static_cast<uint64_t>(st.st_size) < read_bytes_) {  // truncated: written anew
    read_bytes_ = 0;
    partial_.clear();
    by_start_.clear();
  }
  std::string chunk(64 * 1024, '\0');
  for (;;) {
    if (read_bytes_ >= kMaxFileBytes) {  // a writer that never stops: the names so far are kept
      problem_ = path_ + ": over " + std::to_string(kMaxFileBytes) + " bytes, later lines not read";
      break;
    }
    const ssize_t n = pread(fd_, chunk.data(), chunk.size(), static_cast<off_t>(read_bytes_));
    if (n <= 0) break;
    read_bytes_ += static_cast<uint64_t>(n);
    partial_.append(chunk.data(), static_cast<size_t>(n));
    const size_t last_eol = partial_.rfind('\n');
    if (last_eol == std::string::npos) continue;
    add_lines(std::string_view(partial_).substr(0, last_eol + 1));
    partial_.erase(0, last_eol + 1);
  }
}

const std::string* JitMap::find(uint64_t address, int64_t now_ns) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    auto it = by_start_.upper_bound(address);
    if (it != by_start_.begin()) {
      --it;
      if (address < it->second.end) return &it->second.name;
    }
    if (attempt == 0) refresh(now_ns);
  }
  return nullptr;
}

}  // namespace strata::sample
