// Opening the files a user names as input (traces, profiles, models). A named pipe or a device
// would block `open` or never end (`/dev/zero`), so inputs are opened without blocking and must be
// regular files; whole-file reads are bounded. Every refusal is one line naming the file, what it
// is and what to do.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>

#include "core/env_vars.h"
#include "format/file_format.h"

namespace strata::format {

// "a named pipe (FIFO)", "a character device", "a directory", ... for a st_mode.
std::string describe_file_type(mode_t mode);

// Opens `path` read-only without blocking (a FIFO with no writer does not hang) and checks that it
// is a regular file. Returns the descriptor (the caller closes it) and its size, or -1 with *error
// set to one line.
int open_regular_file(const std::string& path, uint64_t* size, std::string* error);

// Reads all of a regular file of at most `max_bytes` bytes into *bytes. `limit_hint` says how to
// read a larger one (or what the limit protects) and ends the error line when the file is larger.
bool read_regular_file(const std::string& path, uint64_t max_bytes, const std::string& limit_hint,
                       std::string* bytes, std::string* error);

// The one check before a command reads a path: it exists, and is a regular file (or a directory
// when `directory_ok`). Nothing is opened, so nothing blocks. One line in *error otherwise.
bool check_input_path(const std::string& path, bool directory_ok, std::string* error);

// Decompression limits, for gzip'd profiles and zstd chunks alike: the output may be at most `ratio`
// times the compressed bytes (a compression bomb expands a thousandfold; real traces 5-20x, the
// most regular span chunks measured 22x) and at most `max_bytes` in all. STRATA_MAX_INFLATE_RATIO
// and STRATA_MAX_INFLATE_MB raise them for an input known to be genuine.
struct InflateLimits {
  uint64_t ratio = kDefaultInflateRatio;  // file_format.h: the limit writers keep to
  uint64_t max_bytes = uint64_t{4} << 30;
};
InflateLimits inflate_limits();  // the defaults, or the environment's values
// "raise it with STRATA_MAX_INFLATE_RATIO=N" or the MB variant, for error lines.
inline constexpr const char* kInflateRatioEnv = env::kMaxInflateRatio;
inline constexpr const char* kInflateBytesEnv = env::kMaxInflateMb;

}  // namespace strata::format
