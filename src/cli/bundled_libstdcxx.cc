#include "cli/bundled_libstdcxx.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>

namespace strata::cli {

int libstdcxx_version_level(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return 0;
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  constexpr std::string_view kPrefix = "GLIBCXX_3.4.";
  int best = 0;
  for (size_t at = bytes.find(kPrefix); at != std::string::npos; at = bytes.find(kPrefix, at + 1)) {
    int n = 0;
    size_t i = at + kPrefix.size();
    bool digits = false;
    for (; i < bytes.size() && bytes[i] >= '0' && bytes[i] <= '9' && n < 10000; ++i, digits = true)
      n = n * 10 + (bytes[i] - '0');
    // A version string ends at its NUL; "GLIBCXX_3.4.2x" spelled in a message does not count.
    if (digits && i < bytes.size() && bytes[i] == '\0' && n > best) best = n;
  }
  return best;
}

std::string newer_system_libstdcxx(const std::string& runtime_path,
                                   const std::vector<std::string>& system_dirs) {
  const size_t slash = runtime_path.rfind('/');
  if (slash == std::string::npos) return "";
  const std::string bundled = runtime_path.substr(0, slash) + "/libstdc++.so.6";
  const int bundled_level = libstdcxx_version_level(bundled);
  if (bundled_level == 0) return "";  // not a bundle: the runtime uses the system's already
  // A sanitized build's bundle: its runtime (libasan, libtsan) must initialize before any other
  // library's constructors run, and a preloaded libstdc++ would run first (seen: a crash at start).
  const std::string dir = runtime_path.substr(0, slash);
  for (const char* runtime : {"/libasan.so", "/libtsan.so", "/libubsan.so"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().string().find(runtime) != std::string::npos) return "";
  }
  for (const std::string& dir : system_dirs) {
    const std::string candidate = dir + "/libstdc++.so.6";
    const int level = libstdcxx_version_level(candidate);
    if (level == 0) continue;
    return level >= bundled_level ? candidate : "";  // the first one found is the one the loader takes
  }
  return "";
}

std::vector<std::string> default_system_library_dirs() {
#if defined(__x86_64__)
  return {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib"};
#elif defined(__aarch64__)
  return {"/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/usr/lib"};
#else
  return {"/lib64", "/usr/lib64", "/usr/lib"};
#endif
}

}  // namespace strata::cli
