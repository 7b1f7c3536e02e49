#include "cli/safe_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace strata::cli {
namespace {

std::string errno_text() { return std::strerror(errno); }

// "dir/name" -> ("dir", "name"); a bare name lives in ".".
std::pair<std::string, std::string> split_path(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == std::string::npos) return {".", path};
  if (slash == 0) return {"/", path.substr(1)};
  return {path.substr(0, slash), path.substr(slash + 1)};
}

// Other users may write into `dir` and it has no sticky bit: they can rename or replace any entry
// in it, so no name there can be trusted. Messages name `shown` (the directory as the user gave it).
bool check_parent_dir(const std::string& dir, const std::string& shown, const std::string& what,
                      std::string* error) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0) {
    *error = shown + ": cannot use the directory for " + what + ": " + errno_text();
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = shown + ": not a directory";
    return false;
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    *error = shown + ": writable by every user and without the sticky bit, so another user could replace " +
             what + " there; choose a directory of your own (or one with the sticky bit, like /tmp)";
    return false;
  }
  return true;
}

bool check_parent_dir(const std::string& dir, const std::string& what, std::string* error) {
  return check_parent_dir(dir, dir, what, error);
}

// check_output_target, with messages naming `shown` (and its directory `shown_dir`).
bool check_target_named(const std::string& target, const std::string& shown, const std::string& shown_dir,
                        bool force, std::string* error) {
  if (target.empty()) {
    *error = "empty output file name";
    return false;
  }
  struct stat st {};
  if (::lstat(target.c_str(), &st) != 0) {
    if (errno == ENOENT) return check_parent_dir(split_path(target).first, shown_dir, "the output", error);
    *error = shown + ": cannot check the output file: " + errno_text();
    return false;
  }
  if (S_ISLNK(st.st_mode)) {
    *error = shown +
             ": is a symbolic link; strata does not write through links (one planted in a shared directory "
             "could point at any of your files): remove it or choose another output";
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = shown + ": exists and is not a regular file; choose another output";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    *error = shown + ": belongs to another user (uid " + std::to_string(st.st_uid) +
             "); it is not replaced: choose another output";
    return false;
  }
  if (!force) {
    *error = shown + ": exists; pass --force to replace it (or choose another output)";
    return false;
  }
  return check_parent_dir(split_path(target).first, shown_dir, "the output", error);
}

std::string mode_text(mode_t mode) {
  char text[16];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

// An output directory's descriptor: a directory of this user that not every user may write to
// (unless it has the sticky bit: then they cannot rename or remove what is ours).
bool check_output_dir_fd(int fd, const std::string& shown, std::string* error) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = shown + ": cannot check the output directory: " + errno_text();
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *error = shown + ": not a directory";
    return false;
  }
  if (st.st_uid != ::geteuid()) {
    *error = shown + ": the output directory belongs to another user (uid " + std::to_string(st.st_uid) +
             "), who could replace what strata writes there; choose a directory of your own";
    return false;
  }
  if ((st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX)) {
    *error = shown + ": the output directory is writable by every user (mode " + mode_text(st.st_mode) +
             ") without the sticky bit; chmod o-w (or +t) it or choose another";
    return false;
  }
  return true;
}

mode_t creation_mode() {
  mode_t mask = ::umask(0);  // read the umask (the CLI is single-threaded here)
  ::umask(mask);
  return 0666 & ~mask;
}

bool remove_tree_at(int dir_fd, const std::string& name, int depth, std::string* error) {
  if (depth > 64) {
    *error = name + ": directory nesting too deep to remove";
    return false;
  }
  int copy = ::dup(dir_fd);
  DIR* dir = copy >= 0 ? ::fdopendir(copy) : nullptr;
  if (dir == nullptr) {
    if (copy >= 0) ::close(copy);
    *error = name + ": cannot list: " + errno_text();
    return false;
  }
  ::rewinddir(dir);  // the duplicate shares the descriptor's position: list from the start
  bool ok = true;
  std::vector<std::string> entries;
  while (dirent* e = ::readdir(dir)) {
    std::string entry = e->d_name;
    if (entry != "." && entry != "..") entries.push_back(entry);
  }
  ::closedir(dir);
  for (const std::string& entry : entries) {
    struct stat st {};
    if (::fstatat(dir_fd, entry.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      int sub = ::openat(dir_fd, entry.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0 || !remove_tree_at(sub, name + "/" + entry, depth + 1, error)) ok = false;
      if (sub >= 0) ::close(sub);
      if (ok && ::unlinkat(dir_fd, entry.c_str(), AT_REMOVEDIR) != 0) ok = false;
    } else if (::unlinkat(dir_fd, entry.c_str(), 0) != 0) {
      ok = false;
    }
    if (!ok) {
      if (error->empty()) *error = name + "/" + entry + ": cannot remove: " + errno_text();
      return false;
    }
  }
  return true;
}

}  // namespace

bool check_output_target(const std::string& target, bool force, std::string* error) {
  return check_target_named(target, target, split_path(target).first, force, error);
}

OutputFile::~OutputFile() { discard(); }

bool OutputFile::begin(const std::string& target, bool force, std::string* error) {
  discard();
  real_dir_.clear();
  shown_dir_.clear();
  return begin_named(target, split_path(target).first, force, error);
}

bool OutputFile::begin_in(const OutputDir& dir, const std::string& name, bool force, std::string* error) {
  discard();
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    *error = dir.path() + "/" + name + ": not a file name";
    return false;
  }
  real_dir_ = split_path(dir.entry_path(name)).first;
  shown_dir_ = dir.path();
  return begin_named(dir.entry_path(name), shown_dir_, force, error);
}

std::string OutputFile::shown(const std::string& path) const {
  if (real_dir_.empty() || path.compare(0, real_dir_.size() + 1, real_dir_ + "/") != 0) return path;
  return shown_dir_ + path.substr(real_dir_.size());
}

bool OutputFile::begin_named(const std::string& target, const std::string& shown_dir, bool force,
                             std::string* error) {
  if (!check_target_named(target, shown(target), shown_dir, force, error)) return false;
  auto [dir, base] = split_path(target);
  std::string tmpl = dir + "/." + base + ".tmp-XXXXXX";
  int fd = ::mkostemp(tmpl.data(), O_CLOEXEC);  // O_CREAT|O_EXCL, mode 0600
  if (fd < 0) {
    *error = shown(target) + ": cannot create a file in " + shown_dir + ": " + errno_text();
    return false;
  }
  ::fchmod(fd, creation_mode());  // what open(O_CREAT, 0666) would have made
  ::close(fd);
  target_ = target;
  temp_ = tmpl;
  force_ = force;
  return true;
}

bool OutputFile::commit(std::string* error) {
  if (temp_.empty()) {
    *error = shown(target_) + ": nothing to move into place";
    return false;
  }
  if (force_) {
    // rename() replaces the directory entry itself; a link there is replaced, never followed.
    if (::rename(temp_.c_str(), target_.c_str()) != 0) {
      *error = shown(target_) + ": cannot replace: " + errno_text() + "; the result is in " + shown(temp_);
      temp_.clear();
      return false;
    }
  } else if (::renameat2(AT_FDCWD, temp_.c_str(), AT_FDCWD, target_.c_str(), RENAME_NOREPLACE) != 0) {
    const int rename_errno = errno;
    // File systems without RENAME_NOREPLACE: link() also refuses an existing name.
    bool linked = false;
    if (rename_errno == EINVAL || rename_errno == ENOSYS) {
      linked = ::link(temp_.c_str(), target_.c_str()) == 0;
      if (linked) ::unlink(temp_.c_str());
    } else {
      errno = rename_errno;
    }
    if (!linked) {
      *error = shown(target_) +
               (errno == EEXIST ? ": appeared while strata was writing; not replaced"
                                : ": cannot create: " + errno_text()) +
               "; the result is in " + shown(temp_);
      temp_.clear();  // kept for the user
      return false;
    }
  }
  temp_.clear();
  return true;
}

std::string OutputFile::about_target(std::string message) const {
  if (temp_.empty()) return message;
  for (size_t at; (at = message.find(temp_)) != std::string::npos;)
    message.replace(at, temp_.size(), target_);
  return message;
}

void OutputFile::discard() {
  if (!temp_.empty()) ::unlink(temp_.c_str());
  temp_.clear();
}

OutputDir::~OutputDir() {
  if (fd_ >= 0) ::close(fd_);
}

bool OutputDir::open(const std::string& path, std::string* error) {
  if (path.empty()) {
    *error = "empty output directory name";
    return false;
  }
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  auto [parent, name] = split_path(trimmed);
  if (name.empty() || name == "." || name == "..") {
    name = ".";  // "/", "." or "..": opened as they are, checked like any other
    parent = trimmed;
  }
  if (!check_parent_dir(parent, "the output directory", error)) return false;
  const int parent_fd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) {
    *error = parent + ": cannot open the directory: " + errno_text();
    return false;
  }
  if (name != "." && ::mkdirat(parent_fd, name.c_str(), 0755) != 0 && errno != EEXIST) {
    *error = path + ": cannot create the directory: " + errno_text();
    ::close(parent_fd);
    return false;
  }
  const int fd = ::openat(parent_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  const int open_errno = errno;
  ::close(parent_fd);
  if (fd < 0) {
    struct stat st {};
    const bool link = open_errno == ELOOP || (::lstat(trimmed.c_str(), &st) == 0 && S_ISLNK(st.st_mode));
    *error = path + (link ? ": is a symbolic link; strata does not write through links (one planted in a "
                            "shared directory could point at any of your directories): choose another"
                     : open_errno == ENOTDIR
                         ? ": exists and is not a directory"
                         : std::string(": cannot open the directory: ") + std::strerror(open_errno));
    return false;
  }
  if (!check_output_dir_fd(fd, path, error)) {
    ::close(fd);
    return false;
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  path_ = trimmed;
  return true;
}

bool OutputDir::verify(std::string* error) const {
  if (fd_ < 0) {
    *error = "no output directory";
    return false;
  }
  return check_output_dir_fd(fd_, path_, error);
}

std::string OutputDir::entry_path(const std::string& name) const {
  return "/proc/self/fd/" + std::to_string(fd_) + "/" + name;
}

bool verify_private_dir_fd(int fd, const std::string& name, std::string* error) {
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    *error = name + ": cannot check the work directory: " + errno_text();
    return false;
  }
  if (!S_ISDIR(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof(mode), "%04o", static_cast<unsigned>(st.st_mode & 07777));
    *error = name + ": the work directory is not a private directory of this user (owner uid " +
             std::to_string(st.st_uid) + ", mode " + mode + "); stopping";
    return false;
  }
  return true;
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) ::close(fd_);
}

bool PrivateDir::create(const std::string& prefix, std::string* error) {
  if (!check_parent_dir(split_path(prefix).first, "a work directory", error)) return false;
  std::string tmpl = prefix + "XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) {
    *error = tmpl + ": cannot create the work directory: " + errno_text();
    return false;
  }
  int fd = ::open(tmpl.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = tmpl + ": cannot open the work directory just created: " + errno_text();
    return false;
  }
  ::fchmod(fd, 0700);  // mkdtemp's 0700 minus the umask: keep it usable, and closed to others
  struct stat by_fd {
  }, by_name{};
  if (!verify_private_dir_fd(fd, tmpl, error)) {
    ::close(fd);
    return false;
  }
  if (::fstat(fd, &by_fd) != 0 || ::lstat(tmpl.c_str(), &by_name) != 0 || by_fd.st_dev != by_name.st_dev ||
      by_fd.st_ino != by_name.st_ino) {
    ::close(fd);
    *error = tmpl + ": the work directory was replaced right after it was created; stopping";
    return false;
  }
  path_ = tmpl;
  fd_ = fd;
  return true;
}

int PrivateDir::make_subdir(const std::string& name, std::string* error) {
  if (::mkdirat(fd_, name.c_str(), 0700) != 0) {
    *error = path_ + "/" + name + ": cannot create: " + errno_text();
    return -1;
  }
  int fd = ::openat(fd_, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    *error = path_ + "/" + name + ": cannot open: " + errno_text();
    return -1;
  }
  ::fchmod(fd, 0700);
  if (!verify_private_dir_fd(fd, path_ + "/" + name, error)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool PrivateDir::verify(std::string* error) const {
  if (fd_ < 0) {
    *error = "no work directory";
    return false;
  }
  return verify_private_dir_fd(fd_, path_, error);
}

bool PrivateDir::remove(std::string* error) {
  if (fd_ < 0) return true;
  if (!remove_tree_at(fd_, path_, 0, error)) return false;
  // The name is ours (mkdtemp, checked); remove it only while it still is this directory.
  struct stat by_fd {
  }, by_name{};
  if (::fstat(fd_, &by_fd) == 0 && ::lstat(path_.c_str(), &by_name) == 0 && by_fd.st_dev == by_name.st_dev &&
      by_fd.st_ino == by_name.st_ino && ::rmdir(path_.c_str()) != 0) {
    *error = path_ + ": cannot remove: " + errno_text();
    return false;
  }
  ::close(fd_);
  fd_ = -1;
  return true;
}

std::vector<std::string> leftover_work_dirs(const std::string& output) {
  std::vector<std::string> found;
  auto [dir, base] = split_path(output);
  const std::string prefix = base + ".parts";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return found;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0 || (name.size() > prefix.size() && name[prefix.size()] != '.')) continue;
    std::string path = dir == "." ? name : dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == ::geteuid())
      found.push_back(path);
  }
  ::closedir(d);
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace strata::cli
