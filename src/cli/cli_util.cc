#include "cli/cli_util.h"

#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "cli/cli_options.h"
#include "core/input_file.h"
#include "core/level.h"
#include "core/stats.h"
#include "export/text_escape.h"
#include "format/input_file.h"
#include "trace/trace_summary.h"
#ifdef STRATA_HAVE_IMPORT
#include "import/importer.h"
#endif

namespace strata::cli {

void print_warnings(const std::vector<std::string>& warnings) {
  if (is_quiet()) return;
  for (const std::string& w : warnings)
    std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(w).c_str());
}

void print_named_file_refusals() {
  const core::NamedFileRefusals refused = core::named_file_refusals();
  if (refused.count == 0 || is_quiet()) return;
  const std::string line = std::to_string(refused.count) + (refused.count == 1 ? " file" : " files") +
                           " named by the trace refused unopened (" + refused.first +
                           "): frames in them are named module+offset";
  std::fprintf(stderr, "warning: %s\n", exporter::escape_terminal(line).c_str());
}

int fail(std::string_view command, std::string_view message, int code) {
  // The one way errors reach the terminal: they quote files (names, SQLite's messages, CSV cells).
  const std::string shown = exporter::escape_terminal(message);
  std::fprintf(stderr, "strata %.*s: %s\n", static_cast<int>(command.size()), command.data(), shown.c_str());
  return code;
}

bool check_inputs(const std::vector<std::string>& paths, InputKind kind, std::string* error) {
  for (const std::string& path : paths)
    if (!format::check_input_path(path, kind == InputKind::kTrace, error)) return false;
  return true;
}

bool open_inputs(std::span<const std::string> paths, trace::Trace* trace, std::string* error,
                 const trace::OpenOptions& options) {
  if (!check_inputs(std::vector<std::string>(paths.begin(), paths.end()), InputKind::kTrace, error))
    return false;
#ifdef STRATA_HAVE_IMPORT
  import::register_readers();
#endif
  const char* command = current_command();
  if (is_verbose())
    for (const std::string& path : paths) {
      std::string why;
      const trace::TraceReader* reader = trace::reader_for(path, options.format, &why);
      std::error_code ec;
      const auto bytes =
          std::filesystem::is_regular_file(path, ec) ? std::filesystem::file_size(path, ec) : 0;
      detail(command, "reading %s (%llu bytes) with the %s reader", exporter::escape_terminal(path).c_str(),
             static_cast<unsigned long long>(bytes),
             reader ? std::string(reader->name()).c_str() : "(none: the open will say why)");
    }
  const auto start = std::chrono::steady_clock::now();
  bool ok;
  {
    Progress progress(command);
    progress.phase(paths.size() == 1 ? "reading " + paths[0]
                                     : "reading " + std::to_string(paths.size()) + " traces");
    ok = trace::open_traces(paths, trace, error, options);
  }
  if (ok)
    detail(command, "read %zu span(s) in %zu process(es), %zu warning(s), in %.3f s", trace->spans.size(),
           trace->processes.size(), trace->warnings.size(),
           std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return ok;
}

bool load_native_or_import(const std::string& path, trace::Trace* trace, std::string* error) {
  return open_inputs(std::span<const std::string>(&path, 1), trace, error);
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
  if (ns >= 1'000'000'000)
    std::snprintf(buf, sizeof(buf), "%.3f s", v / 1e9);
  else if (ns >= 1'000'000)
    std::snprintf(buf, sizeof(buf), "%.3f ms", v / 1e6);
  else if (ns >= 1'000)
    std::snprintf(buf, sizeof(buf), "%.3f us", v / 1e3);
  else
    std::snprintf(buf, sizeof(buf), "%lld ns", static_cast<long long>(ns));
  return buf;
}

namespace {

void print_level_table(const trace::TraceSummary& s, FILE* out) {
  std::set<int64_t> pids;
  for (const auto& [key, count] : s.spans_per_process_level) pids.insert(key.first);
  if (s.spans_per_level.empty()) return;
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

// Lost events by cause; events kept with damage apart (a span whose end was lost is among the
// spans above, marked unfinished: counting it as lost too would count it twice).
void print_drops(const trace::TraceSummary& s, FILE* out) {
  uint64_t lost = 0;
  std::string causes;
  for (const auto& [cause, count] : s.drops) {
    if (count == 0 || trace::drop_keeps_event(cause)) continue;
    lost += count;
    causes += (causes.empty() ? "" : ", ") + exporter::escape_terminal(cause) + " " + std::to_string(count);
  }
  if (lost == 0)
    std::fprintf(out, "lost events: 0\n");
  else
    std::fprintf(out, "lost events: %llu (%s)\n", static_cast<unsigned long long>(lost), causes.c_str());
  // Why a writer lost what it could not write (collector.write_failed): a full disk, an I/O error.
  for (const trace::Process& p : s.processes)
    if (std::optional<std::string_view> why = p.properties.get("stats.collector.writer.error"))
      std::fprintf(out, "warning: process %lld could not write all of its trace: %s\n",
                   static_cast<long long>(p.pid), exporter::escape_terminal(*why).c_str());
  auto kept = [&](const char* cause) {
    auto it = s.drops.find(cause);
    return it == s.drops.end() ? uint64_t{0} : it->second;
  };
  if (uint64_t n = kept("collector.end_lost"))
    std::fprintf(out, "span ends lost: %llu (the spans are kept, marked unfinished)\n",
                 static_cast<unsigned long long>(n));
  if (uint64_t n = kept("collector.string_truncated"))
    std::fprintf(out, "strings cut to the event limit: %llu (the events are kept)\n",
                 static_cast<unsigned long long>(n));
  if (s.unfinished)
    std::fprintf(out, "unfinished spans (no end recorded): %llu\n",
                 static_cast<unsigned long long>(s.unfinished));
  // A full buffer: say how much was lost and the budget that would have held it.
  std::vector<trace::BufferLoss> losses = trace::buffer_losses(s);
  for (size_t i = 0; i < losses.size() && i < 3; ++i) {
    const trace::BufferLoss& l = losses[i];
    const double share =
        100.0 * static_cast<double>(l.lost_spans) / static_cast<double>(l.lost_spans + l.kept_spans);
    uint64_t suggest_mb = 1;
    while ((suggest_mb << 20) < l.needed_bytes && suggest_mb < (uint64_t{1} << 20)) suggest_mb <<= 1;
    std::string budget = l.budget_bytes ? std::to_string(l.budget_bytes >> 20) + " MiB" : "unknown size";
    std::fprintf(
        out,
        "warning: process %lld lost %.1f%% of its spans (%llu of %llu) because its event buffer (%s) was "
        "full; record again with --buffer-mb %llu (STRATA_BUFFER_MB=%llu without strata record), which "
        "holds at least the lost spans, or at a shallower --level\n",
        static_cast<long long>(l.pid), share, static_cast<unsigned long long>(l.lost_spans),
        static_cast<unsigned long long>(l.lost_spans + l.kept_spans), budget.c_str(),
        static_cast<unsigned long long>(suggest_mb), static_cast<unsigned long long>(suggest_mb));
  }
  if (losses.size() > 3)
    std::fprintf(out, "(%zu more processes lost spans to a full buffer)\n", losses.size() - 3);
}

}  // namespace

void print_summary(const trace::TraceSummary& s, FILE* out, size_t max_warnings) {
  std::fprintf(out, "spans: %llu in %zu process(es), span time range %s\n",
               static_cast<unsigned long long>(s.spans), s.processes.size(),
               format_duration_ns(elapsed_ns(s.first_ns, s.last_ns)).c_str());
  print_level_table(s, out);
  if (s.samples > 0 || !s.sample_modes.empty()) {
    std::fprintf(out, "CPU samples: %llu\n", static_cast<unsigned long long>(s.samples));
    for (const std::string& mode : s.sample_modes)
      std::fprintf(out, "  sampling: %s\n", exporter::escape_terminal(mode).c_str());
  }
  print_drops(s, out);
  using stats::Stat;
  const uint64_t truncated = s.stats.get(Stat::kLoadTruncatedFiles),
                 corrupt = s.stats.get(Stat::kLoadCorruptChunks),
                 unknown = s.stats.get(Stat::kLoadUnknownChunks),
                 strings = s.stats.get(Stat::kLoadUnknownStrings);
  if (truncated || corrupt || unknown || strings) {
    std::fprintf(out,
                 "load: %llu truncated file(s), %llu corrupt chunk(s), %llu unknown chunk(s), %llu undefined "
                 "string(s)\n",
                 static_cast<unsigned long long>(truncated), static_cast<unsigned long long>(corrupt),
                 static_cast<unsigned long long>(unknown), static_cast<unsigned long long>(strings));
  }
  const uint64_t clamped = s.stats.get(Stat::kLoadClampedTimes),
                 past_limit = s.stats.get(Stat::kLoadStreamLimitChunks);
  if (clamped || past_limit)
    std::fprintf(out,
                 "load: %llu span(s) with out-of-range times (kept, clamped), %llu chunk(s) of streams past "
                 "the 65536-process limit (skipped)\n",
                 static_cast<unsigned long long>(clamped), static_cast<unsigned long long>(past_limit));
  for (size_t i = 0; i < s.warnings.size() && i < max_warnings; ++i)
    std::fprintf(out, "warning: %s\n", exporter::escape_terminal(s.warnings[i]).c_str());
  if (s.warnings.size() > max_warnings)
    std::fprintf(out, "(%zu more warnings)\n", s.warnings.size() - max_warnings);
}

void print_stats(const stats::StatSet& trace_stats, std::span<const trace::Process> processes, FILE* out) {
  struct Row {
    std::string scope;
    std::string name;
    uint64_t value;
    std::string_view severity;
    std::string_view description;
  };
  std::vector<Row> rows;
  auto add = [&](const std::string& scope, const stats::StatSet& set) {
    for (const auto& [stat, value] : set.nonzero()) {
      const stats::StatInfo& info = stats::info(stat);
      rows.push_back(
          {scope, std::string(info.name), value, stats::severity_name(info.severity), info.description});
    }
    for (const auto& [key, value] : set.unregistered())  // a key from the file: escaped
      if (value)
        rows.push_back({scope, exporter::escape_terminal(key), value, "?",
                        "not in this version's stats registry (a newer writer?)"});
  };
  add("trace", trace_stats);
  for (const trace::Process& p : processes) add("pid " + std::to_string(p.pid), p.stats);
  if (rows.empty()) {
    std::fprintf(out, "stats: none\n");
    return;
  }
  std::fprintf(out, "stats (every non-zero counter; docs/trace-format.md describes each):\n");
  for (const Row& r : rows)
    std::fprintf(out, "  %-11s %-40s %12llu  %-9.*s %.*s\n", r.scope.c_str(), r.name.c_str(),
                 static_cast<unsigned long long>(r.value), static_cast<int>(r.severity.size()),
                 r.severity.data(), static_cast<int>(r.description.size()), r.description.data());
}

}  // namespace strata::cli
