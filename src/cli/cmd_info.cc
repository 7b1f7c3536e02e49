// strata info FILE: header of every process, span counts, drops by cause, clock domains, damage.
#include <cinttypes>
#include <cstdio>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "core/activity_type.h"
#include "core/level.h"
#include "model/trace_loader.h"
#include "model/trace_summary.h"

namespace strata::cli {

int run_info(int argc, char** argv) {
  if (argc < 2 || std::string_view(argv[1]) == "-h" || std::string_view(argv[1]) == "--help") {
    std::fputs("usage: strata info FILE\n  FILE: a .strata trace (or a directory of them)\n", argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string path = argv[1];
  model::Trace trace;
  std::string error;
  if (!model::load_trace(path, &trace, &error)) return fail("info", error, 1);

  std::printf("file: %s (%llu bytes)\n", path.c_str(), static_cast<unsigned long long>(trace.report.bytes));
  if (!trace.record.entries().empty()) {
    std::printf("record:\n");
    for (const auto& [key, value] : trace.record.entries()) {
      if (key.rfind("warning.", 0) == 0) continue;
      if (key == "wall_ns") {
        auto ns = trace.record.get_int(key);
        std::printf("  %-18s %s\n", "wall time", format_duration_ns(ns.value_or(0)).c_str());
        continue;
      }
      std::printf("  %-18s %s\n", key.c_str(), value.c_str());
    }
  }
  for (const model::Process& p : trace.processes) {
    std::printf("process %lld (parent %lld) on %s\n", static_cast<long long>(p.pid), static_cast<long long>(p.ppid),
                p.host.c_str());
    std::printf("  command: %s\n", p.command_line.c_str());
    std::printf("  trace id: %s%s%s\n", p.trace_id.c_str(), p.parent_span_id.empty() ? "" : ", parent span ",
                p.parent_span_id.c_str());
    if (p.level_gate) std::printf("  level: %s\n", level_name(*p.level_gate).c_str());
    std::printf("  spans: %llu, stream %016" PRIx64 ", %s\n", static_cast<unsigned long long>(p.span_count), p.stream_id,
                p.ended_cleanly ? "finished cleanly"
                                 : "no End chunk (killed, _exit or exec without exit handlers, or still running); "
                                   "every flushed chunk loaded");
    if (auto domains = p.properties.get("clock_domains")) {
      std::printf("  clock domains: %.*s (spans on monotonic)", static_cast<int>(domains->size()), domains->data());
      if (auto ratio = p.properties.get("tsc_ns_per_tick"))
        std::printf("; tsc ns/tick %.*s", static_cast<int>(ratio->size()), ratio->data());
      if (auto ppm = p.properties.get("tsc_correction_ppm"))
        std::printf("; start-up calibration corrected by %.*s ppm", static_cast<int>(ppm->size()), ppm->data());
      std::printf("\n");
    }
    for (const auto& snap : p.clock_snapshots) {
      std::printf("  clock snapshot:");
      for (const auto& [domain, value] : snap.readings) std::printf(" [%u]=%lld", domain, static_cast<long long>(value));
      std::printf("\n");
    }
    if (!p.drops.empty()) {
      std::printf("  dropped:");
      for (const auto& [cause, count] : p.drops) std::printf(" %s=%llu", cause.c_str(), static_cast<unsigned long long>(count));
      std::printf("\n");
    }
  }
  model::TraceSummary s = model::summarize(trace);
  std::printf("kinds:");
  for (const auto& [kind, count] : s.spans_per_kind)
    std::printf(" %s=%llu", kind_name(kind).c_str(), static_cast<unsigned long long>(count));
  std::printf("\nactivities:");
  for (const auto& [activity, count] : s.spans_per_activity)
    std::printf(" %s=%llu", activity_name(activity).c_str(), static_cast<unsigned long long>(count));
  std::printf("\n");
  const model::LoadReport& r = trace.report;
  if (r.activity_upgraded || r.legacy_keys_renamed)
    std::printf("format 1.0 spans upgraded at load: %llu typed from their level, kind and attributes, %llu "
                "attribute keys renamed to canonical keys\n",
                static_cast<unsigned long long>(r.activity_upgraded),
                static_cast<unsigned long long>(r.legacy_keys_renamed));
  if (r.unknown_activities)
    std::printf("spans with an activity type this version does not know (kept, shown as activity(N)): %llu\n",
                static_cast<unsigned long long>(r.unknown_activities));
  print_summary(trace, stdout, 64);
  for (const auto& [key, value] : trace.record.entries())
    if (key.rfind("warning.", 0) == 0) std::printf("recording warning: %s\n", value.c_str());
  return 0;
}

}  // namespace strata::cli
