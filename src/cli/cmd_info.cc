// strata info FILE: header of every process, span counts, drops by cause, clock domains, damage,
// every non-zero stat. Streams native files (trace::summarize_file): memory stays flat however long
// the recording was. Other formats (Kineto JSON, ...) are opened through the reader registry.
#include <cinttypes>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "core/activity_type.h"
#include "core/level.h"
#include "core/stats.h"
#include "export/text_escape.h"
#include "trace/trace_reader.h"
#include "trace/trace_summary.h"
#ifdef STRATA_HAVE_IMPORT
#include "import/importer.h"
#endif

namespace strata::cli {
namespace {

// Text from the trace, safe to print on a terminal.
std::string shown(std::string_view text) { return exporter::escape_terminal(text); }

void print_clock(const trace::Process& p, uint64_t snapshots) {
  if (auto domains = p.properties.get("clock_domains")) {
    std::printf("  clock domains: %s (spans on monotonic)", shown(*domains).c_str());
    if (auto ratio = p.properties.get("tsc_ns_per_tick"))
      std::printf("; tsc ns/tick %s", shown(*ratio).c_str());
    if (auto ppm = p.properties.get("tsc_correction_ppm"))
      std::printf("; start-up calibration corrected by %s ppm", shown(*ppm).c_str());
    std::printf("\n");
  }
  for (size_t k = 0; k < p.clock_snapshots.size(); ++k) {
    const char* which = p.clock_snapshots.size() == 1 ? "" : k == 0 ? " (first)" : " (last)";
    std::printf("  clock snapshot%s:", which);
    for (const auto& [domain, value] : p.clock_snapshots[k].readings)
      std::printf(" [%u]=%lld", domain, static_cast<long long>(value));
    std::printf("\n");
  }
  if (snapshots > 2)
    std::printf("  clock snapshots: %llu in all\n", static_cast<unsigned long long>(snapshots));
}

// The process's place in a multi-rank job and, in a merged job, its clock alignment (strata merge).
void print_rank(const trace::Process& p) {
  const auto& props = p.properties;
  const auto rank = props.get("rank");
  if (!rank) return;
  std::printf("  rank: %s", shown(std::string(*rank)).c_str());
  if (auto w = props.get("world_size")) std::printf(" of %s", shown(std::string(*w)).c_str());
  if (auto l = props.get("local_rank")) std::printf(", local rank %s", shown(std::string(*l)).c_str());
  if (auto j = props.get("job_id")) std::printf(", job %s", shown(std::string(*j)).c_str());
  std::printf("\n");
  const auto method = props.get("clock.method");
  if (!method) return;
  const int64_t bound = props.get_int("clock.uncertainty_ns").value_or(-1);
  std::string bound_text = "unknown";
  if (bound >= 0) {
    char buf[48];
    std::snprintf(buf, sizeof(buf), "+-%.3f us", bound / 1e3);
    bound_text = buf;
  }
  std::printf(
      "  clock: %s (reference rank %s), offset %.3f us, drift %s ppm, uncertainty %s; %lld collective "
      "ends matched, %lld rejected, residual p90 %.3f us\n",
      shown(std::string(*method)).c_str(),
      shown(std::string(props.get("clock.reference_rank").value_or("?"))).c_str(),
      props.get_int("clock.offset_ns").value_or(0) / 1e3,
      shown(std::string(props.get("clock.drift_ppm").value_or("0"))).c_str(), bound_text.c_str(),
      static_cast<long long>(props.get_int("clock.matched").value_or(0)),
      static_cast<long long>(props.get_int("clock.rejected").value_or(0)),
      props.get_int("clock.residual_p90_ns").value_or(-1) / 1e3);
}

// What the collectors said about themselves, written with the stats as "collector.<group>.<key>"
// (GPU PC sampling's mode, period, contexts and sample totals; the GPUs; the CUPTI clock; the CPU
// sampler; oneDNN's verbose capture): one line per group.
void print_collectors(const trace::Process& p) {
  constexpr std::string_view kPrefix = "stats.collector.";
  std::map<std::string, std::vector<std::pair<std::string, std::string>>> groups;
  for (const auto& [key, value] : p.properties.entries()) {
    if (key.rfind(kPrefix, 0) != 0) continue;
    std::string rest = key.substr(kPrefix.size());
    const size_t dot = rest.find('.');
    if (dot == std::string::npos) continue;
    groups[rest.substr(0, dot)].emplace_back(rest.substr(dot + 1), value);
  }
  for (const auto& [group, entries] : groups) {
    std::string line;
    for (const auto& [key, value] : entries) line += (line.empty() ? "" : "; ") + key + "=" + value;
    std::printf("  %s: %s\n", shown(group).c_str(), shown(line).c_str());
  }
}

void print_process(const trace::Process& p, uint64_t snapshots) {
  std::printf("process %lld (parent %lld) on %s\n", static_cast<long long>(p.pid),
              static_cast<long long>(p.ppid), shown(p.host).c_str());
  std::printf("  command: %s\n", shown(p.command_line).c_str());
  std::printf("  trace id: %s%s%s\n", shown(p.trace_id).c_str(),
              p.parent_span_id.empty() ? "" : ", parent span ", shown(p.parent_span_id).c_str());
  if (p.level_gate) std::printf("  level: %s\n", level_name(*p.level_gate).c_str());
  std::printf("  spans: %llu, stream %016" PRIx64 ", %s\n", static_cast<unsigned long long>(p.span_count),
              p.stream_id,
              p.ended_cleanly
                  ? "finished cleanly"
                  : "no End chunk (killed, _exit or exec without exit handlers, or still running); "
                    "every flushed chunk loaded");
  print_clock(p, snapshots);
  print_rank(p);
  print_collectors(p);
}

}  // namespace

int run_info(int argc, char** argv) {
  std::string path;
  CommandLine cl(
      "info",
      "Show a trace's header, processes, span counts, drops by cause, clock domains, damage and every "
      "non-zero stat.");
  cl.app()
      .add_option(
          "FILE", path,
          "a .strata trace (or a directory of them), read as a stream so any size fits in memory; or any "
          "trace a reader of this build opens (Kineto/PyTorch, ONNX Runtime, TensorFlow JSON, ...); a "
          "name starting with '-' goes after --")
      ->required();
  cl.set_extra_argument_note("one trace at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;

  trace::TraceSummary summary;
  std::string error;
  if (!check_inputs({path}, InputKind::kTrace, &error)) return fail("info", error, 1);
#ifdef STRATA_HAVE_IMPORT
  import::register_readers();
#endif
  const trace::TraceReader* reader = trace::reader_for(path, "auto", &error);
  if (reader == nullptr) return fail("info", error, 1);
  trace::Trace trace;                // only for formats that are not streamed
  if (reader->name() == "native") {  // streamed: memory independent of the trace's size
    detail("info", "reading %s with the native reader, as a stream", shown(path).c_str());
    Progress progress("info");
    progress.phase("reading " + path);
    if (!trace::summarize_file(path, &summary, &error)) return fail("info", error, 1);
  } else {
    if (!load_native_or_import(path, &trace, &error)) return fail("info", error, 1);
    summary = trace::summarize(trace);
    for (const stats::StatInfo& s : stats::all_stats())  // the tree's counters too: it was built
      if (s.source == stats::Source::kCorrelation && trace.stats.get(s.id))
        summary.stats.set(s.id, trace.stats.get(s.id));
  }

  std::printf("file: %s (%llu bytes)\n", shown(path).c_str(),
              static_cast<unsigned long long>(summary.stats.get(stats::Stat::kLoadBytes)));
  if (!summary.record.entries().empty()) {
    std::printf("record:\n");
    for (const auto& [key, value] : summary.record.entries()) {
      if (key.rfind("warning.", 0) == 0) continue;
      if (key == "wall_ns") {
        auto ns = summary.record.get_int(key);
        std::printf("  %-18s %s\n", "wall time", format_duration_ns(ns.value_or(0)).c_str());
        continue;
      }
      std::printf("  %-18s %s\n", shown(key).c_str(), shown(value).c_str());
    }
  }
  for (size_t k = 0; k < summary.processes.size(); ++k)
    print_process(summary.processes[k], summary.clock_snapshot_counts[k]);
  std::printf("kinds:");
  for (const auto& [kind, count] : summary.spans_per_kind)
    std::printf(" %s=%llu", kind_name(kind).c_str(), static_cast<unsigned long long>(count));
  std::printf("\nactivities:");
  for (const auto& [activity, count] : summary.spans_per_activity)
    std::printf(" %s=%llu", activity_name(activity).c_str(), static_cast<unsigned long long>(count));
  std::printf("\n");
  if (summary.format_1_0_spans)
    std::printf(
        "format 1.0: %llu spans stored without an activity type (typed and their attribute keys renamed "
        "when loaded: analyze, export, iterations)\n",
        static_cast<unsigned long long>(summary.format_1_0_spans));
  print_summary(summary, stdout, 64);
  print_stats(summary.stats, summary.processes, stdout);
  for (const auto& [key, value] : summary.record.entries())
    if (key.rfind("warning.", 0) == 0) std::printf("recording warning: %s\n", shown(value).c_str());
  return 0;
}

}  // namespace strata::cli
