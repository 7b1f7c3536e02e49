// Helpers for the importer tests: paths of fixtures, gzip reading for independent counts.
#pragma once

#include <zlib.h>

#include <map>
#include <string>
#include <string_view>

#include "core/stats.h"
#include "trace/trace.h"

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

// A process's dropped-event counters by stat name ("import.<cause>"), as the stats registry keeps them.
inline std::map<std::string, uint64_t> drops_of(const trace::Process& p) {
  std::map<std::string, uint64_t> out;
  for (const auto& [stat, count] : p.stats.nonzero())
    if (stats::info(stat).disk == stats::Disk::kStats) out[std::string(stats::info(stat).name)] = count;
  for (const auto& [key, count] : p.stats.unregistered()) out[key] = count;
  return out;
}

// The producer an import recognized (its main process's "import.format").
inline std::string imported_format(const trace::Trace& t) {
  for (const trace::Process& p : t.processes)
    if (auto f = p.properties.get("import.format")) return std::string(*f);
  return "";
}

}  // namespace strata::testing
