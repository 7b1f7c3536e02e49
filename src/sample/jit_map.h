// Names of JIT-generated code from the perf map convention: a process that generates code appends
// "START SIZE NAME" lines (hex) to /tmp/perf-PID.map (oneDNN with ONEDNN_JIT_PROFILE / DNNL_JIT_PROFILE
// = 2, CPython 3.12's perf trampoline, V8's --perf-basic-prof, the JVM's perf-map-agent). Linux perf
// reads the same file. The sampler names frames in anonymous executable memory from it while the
// process runs, because the file (and the code) is gone by the time a trace is read.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

namespace strata::sample {

class JitMap {
 public:
  // `path`: normally perf_map_path(pid). Nothing is read until the first find().
  explicit JitMap(std::string path);

  // The name of the generated code that holds `address`, or null. A miss reads the lines added to
  // the file since the last read (an fstat per miss; a file not there yet is looked for at most
  // every kMinOpenRetryNs), so code generated after the last read is found.
  const std::string* find(uint64_t address, int64_t now_ns);
  ~JitMap();
  JitMap(const JitMap&) = delete;
  JitMap& operator=(const JitMap&) = delete;

  size_t entries() const { return by_start_.size(); }
  // Why the file is not used ("" when it is, or does not exist): another owner, not a regular file.
  const std::string& problem() const { return problem_; }
  // Lines that are not "HEX HEX NAME" (counted, skipped).
  uint64_t malformed_lines() const { return malformed_; }

  static std::string perf_map_path(pid_t pid);
  // Creates the perf map of process `pid` for a library Strata asks to write one (oneDNN opens it
  // with fopen "w+", following a link and truncating what it points at): O_CREAT|O_EXCL|O_NOFOLLOW,
  // mode 0600, in `dir` (/tmp) only when other users cannot rename entries there (sticky, or not
  // writable by them). Returns the descriptor (the caller closes it), or -1 with *why (one line):
  // the name exists (a file or link another user may have planted) or cannot be created; the
  // caller then turns the library's perf map off for that process.
  static int create_perf_map(pid_t pid, std::string* why, const std::string& dir = "/tmp");
  // Adds lines of the file's format (tests and the reader of the file share this).
  void add_lines(std::string_view text);

  static constexpr int64_t kMinOpenRetryNs = 10'000'000;
  static constexpr uint64_t kMaxFileBytes = uint64_t{256} << 20;  // read at most (a JIT map: ~100 B a kernel)

 private:
  void refresh(int64_t now_ns);
  bool open_file();
  struct Entry {
    uint64_t end = 0;
    std::string name;
  };
  std::string path_;
  std::map<uint64_t, Entry> by_start_;
  std::string partial_;  // a line not ended yet (the writer appends in pieces)
  uint64_t read_bytes_ = 0;
  uint64_t malformed_ = 0;
  int fd_ = -1;
  int64_t last_open_ns_ = 0;
  bool opened_once_ = false;
  std::string problem_;
};

}  // namespace strata::sample
