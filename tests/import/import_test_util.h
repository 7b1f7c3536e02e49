// Helpers for the importer tests: paths of fixtures, gzip reading for independent counts.
#pragma once

#include <zlib.h>

#include <string>
#include <string_view>

namespace strata::testing {

inline std::string source_path(const std::string& relative) {
  return std::string(STRATA_SOURCE_DIR) + "/" + relative;
}

// Decompresses a .gz file with zlib's gz* API (not the importer's code path).
inline std::string gunzip_file(const std::string& path) {
  std::string out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

inline size_t count_occurrences(std::string_view text, std::string_view needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string_view::npos;
       at = text.find(needle, at + needle.size()))
    ++count;
  return count;
}

}  // namespace strata::testing
