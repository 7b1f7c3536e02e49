// Files the CLI writes, made safe for shared directories (/tmp, a team's scratch space) the way
// OpenSSH and coreutils do it: nothing is opened through a name another user could have planted.
//
// - Outputs (-o of record, import, export) are written to a new file created exclusively next to
//   the target and then moved into place, so a symbolic link at the target is never followed and
//   an existing file is replaced only with --force (and only a regular file of the user's).
// - `strata record`'s work directory is created like mkdtemp (a fresh name, 0700) and checked
//   through its own descriptor; what is read back from it is opened relative to that descriptor.
// - Output directories (attach -o, analyze --output, bench generate -o) follow the rules of output
//   files: a directory of the user's, opened once without following a link and used only through
//   that descriptor (OutputDir).
#pragma once

#include <string>
#include <vector>

namespace strata::cli {

// An output file: begin() checks the target and creates the temporary file; the caller writes to
// temp_path(); commit() moves it into place. Without commit() the temporary file is removed.
class OutputDir;

class OutputFile {
 public:
  OutputFile() = default;
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Refuses (false, one line in *error naming the file and what to do) when the target is a
  // symbolic link, not a regular file, another user's file, or exists and `force` is false.
  bool begin(const std::string& target, bool force, std::string* error);
  // The same for `name` inside an open output directory: reached through its descriptor, so the
  // directory's name swapped for a link meanwhile is never followed; messages name dir.path()/name.
  bool begin_in(const OutputDir& dir, const std::string& name, bool force, std::string* error);
  // A path to the temporary file (for writers that take a path; inside an OutputDir it goes
  // through the directory's descriptor).
  const std::string& temp_path() const { return temp_; }
  const std::string& target() const { return target_; }
  // Without force, fails (keeping the finished temporary file, whose name *error gives) if
  // anything appeared at the target meanwhile; with force, replaces the target's directory entry.
  bool commit(std::string* error);
  // Drops the temporary file (also done by the destructor when not committed).
  void discard();
  // An error line of a writer about the temporary file, told about the target instead (the
  // temporary file is removed when the output fails).
  std::string about_target(std::string message) const;

 private:
  bool begin_named(const std::string& target, const std::string& shown_dir, bool force, std::string* error);
  // The name shown in messages for a path of ours (the OutputDir's name instead of /proc/self/fd/N).
  std::string shown(const std::string& path) const;

  std::string target_;
  std::string temp_;
  std::string real_dir_, shown_dir_;  // begin_in: the descriptor's path and the name to show for it
  bool force_ = false;
};

// Checks a target before anything long runs (same rules as OutputFile::begin, nothing created).
bool check_output_target(const std::string& target, bool force, std::string* error);

// An output directory: created when missing (mode 0755 less the umask), then opened once with
// O_DIRECTORY|O_NOFOLLOW relative to its parent's descriptor and used only through its own
// descriptor. Refused (false, one line in *error): a symbolic link, anything not a directory, a
// directory of another user, one every user may write to without the sticky bit, and a parent every
// user may write to without the sticky bit. What other users may put in a sticky directory of ours
// is theirs: callers read, count, continue or remove only the files of this user they created.
class OutputDir {
 public:
  OutputDir() = default;
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  bool open(const std::string& path, std::string* error);
  // Re-checks the descriptor (still a directory of this user, not open to everyone's writes).
  bool verify(std::string* error) const;
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }
  // `name` in this directory reached through the descriptor (/proc/self/fd/N/name), for writers
  // that take a path.
  std::string entry_path(const std::string& name) const;

 private:
  std::string path_;
  int fd_ = -1;
};

// A private work directory: mkdtemp(prefix + "XXXXXX") (mode 0700, fails if the name exists),
// verified through its descriptor: a directory owned by this user, closed to group and others,
// the same inode as the name. Refused inside a directory other users may write to without the
// sticky bit (they could rename it away and put their own in its place).
class PrivateDir {
 public:
  PrivateDir() = default;
  ~PrivateDir();
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;

  bool create(const std::string& prefix, std::string* error);
  // A subdirectory (mode 0700) created under the verified descriptor; -1 with *error on failure.
  // The returned descriptor belongs to the caller.
  int make_subdir(const std::string& name, std::string* error);
  // Re-checks the descriptor (still a directory of ours, closed to others).
  bool verify(std::string* error) const;
  // Removes everything in it and the directory itself, without following any link.
  bool remove(std::string* error);

  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Checks that an open directory descriptor is a directory owned by this user and closed to group
// and others; false with a reason in *error (naming `name`).
bool verify_private_dir_fd(int fd, const std::string& name, std::string* error);

// Work directories `strata record -o OUTPUT` left behind (OUTPUT.parts.*, owned by this user): a
// recorder killed before it finished keeps its processes' data there.
std::vector<std::string> leftover_work_dirs(const std::string& output);

}  // namespace strata::cli
