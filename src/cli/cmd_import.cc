// strata import FILE [-o OUT.strata] [--format auto|kineto|onnxruntime|tensorflow]
// Converts a framework profiler's trace (PyTorch/Kineto, ONNX Runtime, TensorFlow; .json or .json.gz)
// into a Strata trace, and says what was read, written and dropped.
#include <cstdio>
#include <string>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "core/level.h"
#include "core/stats.h"
#include "export/text_escape.h"
#include "format/input_file.h"
#include "import/importer.h"
#include "import/ncu_csv.h"
#include "trace/span_tree.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

namespace strata::cli {
namespace {

std::string default_output(std::string path) {
  for (const char* suffix : {".gz", ".json"})
    if (path.size() > std::string(suffix).size() && path.ends_with(suffix))
      path.resize(path.size() - std::string(suffix).size());
  return path + ".strata";
}

// strata import --metrics NCU.csv --into TRACE: measured metrics joined to the trace's kernels.
int join_metrics(const std::string& metrics, const std::string& into, std::string output, bool force,
                 int zstd_level) {
  std::string error, bytes;
  if (!check_inputs({metrics, into}, InputKind::kFile, &error)) return fail("import", error, 1);
  if (output.empty()) {
    output = default_output(into);  // TRACE.json.gz -> TRACE.strata; TRACE.strata -> TRACE.strata.strata
    for (const char* suffix : {".strata.strata", ".strata"})
      if (output.ends_with(suffix)) {
        output.resize(output.size() - std::string(suffix).size());
        break;
      }
    output += ".ncu.strata";
  }
  if (refuse_gzip_native(output, &error) || !check_output_target(output, force, &error))
    return fail("import", error, is_gzip_name(output) ? 2 : 1);
  if (!format::read_regular_file(metrics, size_t{1} << 30, "split the ncu output", &bytes, &error))
    return fail("import", error, 1);
  import::NcuProfile profile;
  if (!import::parse_ncu_csv(bytes, metrics, &profile, &error)) return fail("import", error, 1);
  trace::Trace trace;
  if (!open_inputs(std::span<const std::string>(&into, 1), &trace, &error, trace::OpenOptions{}))
    return fail("import", error, 1);
  const import::NcuJoinCounts c = import::join_ncu_metrics(profile, &trace);
  OutputFile out;
  if (!out.begin(output, force, &error) || !trace::save_trace(trace, out.temp_path(), &error, zstd_level) ||
      !out.commit(&error))
    return fail("import", out.about_target(error), 1);
  if (!is_quiet())
    std::printf(
        "joined %s into %s: %llu of %zu ncu kernels matched a trace kernel (%llu unmatched), %llu trace "
        "kernels without metrics -> %s\n",
        exporter::escape_terminal(metrics).c_str(), exporter::escape_terminal(into).c_str(),
        static_cast<unsigned long long>(c.matched), profile.kernels.size(),
        static_cast<unsigned long long>(c.ncu_unmatched),
        static_cast<unsigned long long>(c.trace_without_metrics), exporter::escape_terminal(output).c_str());
  return c.matched == 0 ? 1 : 0;
}

// What the import read, linked and dropped (stdout; --quiet leaves it out).
void print_import_report(const trace::Trace& trace, const std::string& input, const std::string& output) {
  // The import's counts are its main process's stats; the tree's, the trace's.
  using stats::Stat;
  stats::StatSet counts;
  std::string format_name = "?";
  for (const trace::Process& p : trace.processes) {
    counts.merge(p.stats);
    if (auto f = p.properties.get("import.format")) format_name = std::string(*f);
  }
  auto n = [&](Stat s) { return static_cast<unsigned long long>(counts.get(s)); };
  auto t = [&](Stat s) { return static_cast<unsigned long long>(trace.stats.get(s)); };
  std::printf("imported %s (%s): %llu events read, %llu spans written -> %s\n",
              exporter::escape_terminal(input).c_str(), format_name.c_str(), n(Stat::kImportEventsRead),
              n(Stat::kImportSpansWritten), output.c_str());
  std::printf("events: %llu spans, %llu metadata, %llu flow links, %llu dropped\n",
              n(Stat::kImportSpansWritten), n(Stat::kImportMetadataEvents), n(Stat::kImportFlowEvents),
              static_cast<unsigned long long>(import::dropped_events(counts)));
  if (counts.get(Stat::kImportNcuKernels))
    std::printf(
        "ncu: %llu kernels, %llu metric values, %llu rule rows, %llu other lines skipped (==PROF==, the "
        "program's output)\n",
        n(Stat::kImportNcuKernels), n(Stat::kImportNcuMetricRows), n(Stat::kImportNcuRuleRows),
        n(Stat::kImportNcuOtherLines));
  // Duration pairs and counters make records and events differ; say how, so the counts add up.
  if (counts.get(Stat::kImportEndEvents) || counts.get(Stat::kImportCounterEvents) ||
      counts.get(Stat::kImportUnfinishedSpans))
    std::printf(
        "also: %llu E events closing a B span, %llu counter events as %llu counter samples (in spans), %llu "
        "B spans without an end (kept, unfinished)\n",
        n(Stat::kImportEndEvents), n(Stat::kImportCounterEvents), n(Stat::kImportCounterSamples),
        n(Stat::kImportUnfinishedSpans));
  const trace::SpanTree& tree = trace.tree();
  std::printf(
      "links: %llu by correlation id, %llu by external id, %llu reconstructed by containment, %llu "
      "ambiguous, "
      "%llu roots\n",
      t(Stat::kTreeCorrelationLinks), t(Stat::kTreeExternalLinks), t(Stat::kTreeReconstructed),
      t(Stat::kTreeAmbiguous), t(Stat::kTreeRoots));
  if (trace.stats.get(Stat::kTreeExternalRejected))
    std::printf("external ids ignored: %llu (the op with that id was not running at the time)\n",
                t(Stat::kTreeExternalRejected));
  // Device work: how much of it is tied to the call that launched it and to the framework op.
  uint64_t device_work = 0, with_call = 0, with_op = 0, under_op = 0;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.kind != static_cast<uint8_t>(SpanKind::kExecution)) continue;
    ++device_work;
    int32_t parent = tree.parent(i);
    if (parent != trace::kNoParent && s.correlation_id != 0 &&
        trace.spans[static_cast<size_t>(parent)].correlation_id == s.correlation_id)
      ++with_call;
    if (tree.external_owner(i) != trace::kNoParent) ++with_op;
    if (tree.external_owner(i) != trace::kNoParent ||
        tree.ancestor_at_level(trace, i, static_cast<uint8_t>(Level::kLayer)) != trace::kNoParent)
      ++under_op;
  }
  if (device_work)
    std::printf(
        "device work: %llu spans, %llu linked to their runtime call by correlation id, %llu to their "
        "framework op by External id, %llu under a framework op\n",
        static_cast<unsigned long long>(device_work), static_cast<unsigned long long>(with_call),
        static_cast<unsigned long long>(with_op), static_cast<unsigned long long>(under_op));
  for (const trace::Process& p : trace.processes) {
    for (const auto& [key, value] : p.properties.entries())
      if (key.rfind("import.unmapped_category.", 0) == 0)
        std::printf("category %s: imported at application level (%s events)\n",
                    exporter::escape_terminal(key.substr(25)).c_str(),
                    exporter::escape_terminal(value).c_str());
  }
  for (const trace::Process& p : trace.processes) {
    if (auto devices = p.properties.get("import.devices")) {
      auto name = p.properties.get("device.0.name");
      std::printf("device properties: %s devices%s%s\n", exporter::escape_terminal(*devices).c_str(),
                  name ? ", device.0.name = " : "", name ? exporter::escape_terminal(*name).c_str() : "");
    }
    if (auto problem = p.properties.get("import.devices_problem"))
      std::printf("device properties: %s\n", exporter::escape_terminal(*problem).c_str());
  }
  for (const trace::Process& p : trace.processes)
    if (auto problem = p.properties.get("import.first_problem"))
      std::printf("first problem: %s\n", exporter::escape_terminal(*problem).c_str());
  print_summary(trace::summarize(trace), stdout);
}

}  // namespace

int run_import(int argc, char** argv) {
  std::string input, output, format = "auto", metrics, into;
  bool force = false;
  int zstd_level = 3;
  CommandLine cl(
      "import",
      "Convert a framework profiler's trace into a Strata trace, and say what was read, written and "
      "dropped; or join Nsight Compute's measured metrics to a trace's kernels (--metrics --into).");
  cl.app().add_option(
      "FILE", input,
      "PyTorch profiler (Kineto) Chrome trace, ONNX Runtime profile or TensorFlow trace JSON (plain "
      "or .gz), an Nsight Systems SQLite export, or Nsight Compute CSV (ncu --csv, details page "
      "or --page raw)");
  cl.add_output(
      &output,
      "the Strata trace to write (default: FILE without .json/.json.gz, plus .strata); never written "
      "through a symbolic link; not gzip'd (a .gz name is refused: --zstd compresses its chunks)");
  cl.add_force(&force);
  cl.app()
      .add_option("--format", format, "the producer, when auto-detection cannot tell (default auto)")
      ->type_name("NAME");
  cl.app()
      .add_option("--zstd", zstd_level,
                  "compress the output chunks with zstd at LEVEL (default 3; 0: uncompressed)")
      ->check(CLI::Range(0, 19))
      ->type_name("LEVEL");
  cl.app()
      .add_option("--metrics", metrics, "ncu --csv output to join to the kernels of --into TRACE")
      ->type_name("NCU.csv");
  cl.app()
      .add_option("--into", into,
                  "with --metrics: the trace (any format strata reads) whose kernels get ncu's metrics, by "
                  "kernel name and launch order; the output defaults to TRACE's name plus .ncu.strata")
      ->type_name("TRACE");
  cl.set_extra_argument_note("one input file at a time");
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  if (!metrics.empty() || !into.empty()) {
    if (metrics.empty() || into.empty() || !input.empty())
      return cl.usage_error("--metrics NCU.csv and --into TRACE go together, without FILE");
    return join_metrics(metrics, into, output, force, zstd_level);
  }
  if (input.empty()) return cl.usage_error("no input file");
  if (output.empty()) output = default_output(input);

  std::string error;
  if (refuse_gzip_native(output, &error)) return cl.usage_error(error);
  if (!check_inputs({input}, InputKind::kFile, &error)) return fail("import", error, 1);
  if (!check_output_target(output, force, &error)) return fail("import", error, 1);

  trace::OpenOptions options;
  options.format = format == "auto" ? "json" : format;  // foreign formats only: a native trace is refused
  if (format == "auto") {  // a foreign reader recognized by content (nsys SQLite) is used as such
    import::register_readers();
    std::string probe_error;
    const trace::TraceReader* reader = trace::reader_for(input, "auto", &probe_error);
    if (reader != nullptr && reader->name() != "native") options.format = std::string(reader->name());
  }
  trace::Trace trace;
  if (!open_inputs(std::span<const std::string>(&input, 1), &trace, &error, options))
    return fail("import", error, 1);
  OutputFile out;
  {
    Progress progress("import");
    progress.phase("writing " + output);
    if (!out.begin(output, force, &error) || !trace::save_trace(trace, out.temp_path(), &error, zstd_level) ||
        !out.commit(&error))
      return fail("import", out.about_target(error), 1);
  }
  if (!is_quiet()) print_import_report(trace, input, output);
  return 0;
}

}  // namespace strata::cli
