// The one check before Strata reads a file: opened read-only without blocking (a named pipe with
// no writer would block `open` forever, a device never ends), never becoming the controlling
// terminal, closed on exec; a regular file of at most a given size. Every reader goes through it:
// the inputs a user names (format/input_file.h builds on it) and the files a trace or a sampled
// process names (the modules of sample mappings, their debug files by build id or .gnu_debuglink,
// the perf maps of generated code), which are counted when refused: a trace is untrusted, and so
// is the path a process maps.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

namespace strata::core {

// "a named pipe (FIFO)", "a character device", "a directory", ... for a st_mode.
std::string describe_file_type(mode_t mode);

// Opens `path` as said above. Returns the descriptor (the caller closes it) and its size, or -1
// with *error set to one line naming the file; *refused_mode (when given) receives the file's type
// when the file is there but refused: not a regular file, or (S_IFREG) larger than `max_bytes`.
int open_regular_file(const std::string& path, uint64_t max_bytes, uint64_t* size, std::string* error,
                      mode_t* refused_mode = nullptr, int extra_flags = 0);

// open_regular_file for a file named by a trace or by a sampled process. A file that is there but
// refused (not a regular file, or larger than `max_bytes`) is counted, process-wide, with the first
// refusal's line: the commands say it once (named_file_refusals), the sampler stores the count.
// A file that is not there is not counted (modules are often gone when a trace is read).
// `extra_flags`: more open(2) flags (O_NOFOLLOW for a file in a shared directory).
int open_named_file(const std::string& path, uint64_t max_bytes, uint64_t* size, std::string* error,
                    int extra_flags = 0, mode_t* refused_mode = nullptr);

struct NamedFileRefusals {
  uint64_t count = 0;
  std::string first;  // the first refusal's error line
};
NamedFileRefusals named_file_refusals();

}  // namespace strata::core
