#include "cli/cli_util.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/level.h"
#include "format/file_format.h"
#include "model/trace_loader.h"
#include "model/trace_summary.h"
#ifdef STRATA_HAVE_IMPORT
#include "import/importer.h"
#endif

namespace strata::cli {

int fail(std::string_view command, std::string_view message, int code) {
  std::fprintf(stderr, "strata %.*s: %.*s\n", static_cast<int>(command.size()), command.data(),
               static_cast<int>(message.size()), message.data());
  return code;
}

bool take_option(int argc, char** argv, int* i, std::string_view name, std::string* value, bool* missing) {
  std::string_view arg = argv[*i];
  if (arg == name) {
    if (*i + 1 >= argc) {
      *missing = true;
      return true;
    }
    *value = argv[++*i];
    return true;
  }
  if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
    *value = std::string(arg.substr(name.size() + 1));
    return true;
  }
  return false;
}

namespace {
bool has_native_magic(const std::string& path) {
  if (std::filesystem::is_directory(path)) return true;
  std::ifstream in(path, std::ios::binary);
  char magic[sizeof(format::kFileMagic)] = {};
  in.read(magic, sizeof(magic));
  return in.gcount() == sizeof(magic) && std::memcmp(magic, format::kFileMagic, sizeof(magic)) == 0;
}
}  // namespace

bool load_native_or_import(const std::string& path, model::Trace* trace, std::string* error) {
  if (!std::filesystem::exists(path)) {
    *error = path + ": no such file or directory";
    return false;
  }
  if (has_native_magic(path)) return model::load_trace(path, trace, error);
#ifdef STRATA_HAVE_IMPORT
  return import::import_trace(path, trace, error);
#else
  *error = path + ": not a Strata trace (no STRATA magic at offset 0); convert foreign profiles with strata import";
  return false;
#endif
}

std::string executable_dir() {
  char buf[4096];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n <= 0) return ".";
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string format_duration_ns(int64_t ns) {
  char buf[64];
  double v = static_cast<double>(ns);
  if (ns >= 1'000'000'000) std::snprintf(buf, sizeof(buf), "%.3f s", v / 1e9);
  else if (ns >= 1'000'000) std::snprintf(buf, sizeof(buf), "%.3f ms", v / 1e6);
  else if (ns >= 1'000) std::snprintf(buf, sizeof(buf), "%.3f us", v / 1e3);
  else std::snprintf(buf, sizeof(buf), "%lld ns", static_cast<long long>(ns));
  return buf;
}

void print_summary(const model::Trace& trace, FILE* out, size_t max_warnings) {
  model::TraceSummary s = model::summarize(trace);
  std::fprintf(out, "spans: %zu in %zu process(es), span time range %s\n", trace.spans.size(),
               trace.processes.size(), format_duration_ns(s.last_ns - s.first_ns).c_str());
  // Spans per level (rows) and process (columns), as one small table.
  std::set<int64_t> pids;
  for (const auto& [key, count] : s.spans_per_process_level) pids.insert(key.first);
  if (!s.spans_per_level.empty()) {
    std::fprintf(out, "  %-14s %12s", "level", "total");
    size_t shown = 0;
    for (int64_t pid : pids) {
      if (++shown > 6) break;
      std::fprintf(out, " %11s", ("pid " + std::to_string(pid)).c_str());
    }
    std::fprintf(out, "\n");
    for (const auto& [level, count] : s.spans_per_level) {
      std::fprintf(out, "  %-14s %12llu", level_name(level).c_str(), static_cast<unsigned long long>(count));
      shown = 0;
      for (int64_t pid : pids) {
        if (++shown > 6) break;
        auto it = s.spans_per_process_level.find({pid, level});
        std::fprintf(out, " %11llu",
                     static_cast<unsigned long long>(it == s.spans_per_process_level.end() ? 0 : it->second));
      }
      std::fprintf(out, "\n");
    }
    if (pids.size() > 6) std::fprintf(out, "  (%zu more processes not shown)\n", pids.size() - 6);
  }
  uint64_t dropped = 0;
  for (const auto& [cause, count] : s.drops) dropped += count;
  if (dropped == 0) {
    std::fprintf(out, "dropped events: 0\n");
  } else {
    std::fprintf(out, "dropped events: %llu (", static_cast<unsigned long long>(dropped));
    bool first = true;
    for (const auto& [cause, count] : s.drops) {
      if (count == 0) continue;
      std::fprintf(out, "%s%s %llu", first ? "" : ", ", cause.c_str(), static_cast<unsigned long long>(count));
      first = false;
    }
    std::fprintf(out, ")\n");
  }
  if (s.unfinished) std::fprintf(out, "unfinished spans (no end recorded): %llu\n", static_cast<unsigned long long>(s.unfinished));
  const model::LoadReport& r = trace.report;
  if (r.truncated_files || r.corrupt_chunks || r.unknown_chunks || r.unknown_strings) {
    std::fprintf(out, "load: %llu truncated file(s), %llu corrupt chunk(s), %llu unknown chunk(s), %llu undefined string(s)\n",
                 static_cast<unsigned long long>(r.truncated_files), static_cast<unsigned long long>(r.corrupt_chunks),
                 static_cast<unsigned long long>(r.unknown_chunks), static_cast<unsigned long long>(r.unknown_strings));
  }
  for (size_t i = 0; i < r.warnings.size() && i < max_warnings; ++i)
    std::fprintf(out, "warning: %s\n", r.warnings[i].c_str());
  if (r.warnings.size() > max_warnings)
    std::fprintf(out, "(%zu more warnings)\n", r.warnings.size() - max_warnings);
}

}  // namespace strata::cli
