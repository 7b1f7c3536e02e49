// strata import FILE [-o OUT.strata] [--format auto|kineto|onnxruntime|tensorflow]
// Converts a framework profiler's trace (PyTorch/Kineto, ONNX Runtime, TensorFlow; .json or .json.gz)
// into a Strata trace, and says what was read, written and dropped.
#include <cstdio>
#include <string>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "core/level.h"
#include "core/stats.h"
#include "export/text_escape.h"
#include "format/input_file.h"
#include "import/importer.h"
#include "import/ncu_csv.h"
#include "model/trace_reader.h"
#include "model/span_tree.h"
#include "model/trace_reader.h"
#include "model/trace_saver.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata import FILE [-o OUT.strata] [--force] [--format auto|kineto|onnxruntime|tensorflow]\n"
    "                     [--zstd LEVEL]\n"
    "       strata import --metrics NCU.csv --into TRACE [-o OUT.strata] [--force]\n"
    "  FILE: PyTorch profiler (Kineto) Chrome trace, ONNX Runtime profile, or TensorFlow trace JSON\n"
    "        (plain or .gz)\n"
    "  -o OUT.strata: output (default: FILE without .json/.json.gz, plus .strata); never written through a\n"
    "        symbolic link\n"
    "  --force: replace OUT.strata if it exists (only a regular file of yours)\n"
    "  --format: the producer, when auto-detection cannot tell (default auto)\n"
    "  --zstd LEVEL: compress the output chunks (default 3; 0 stores them uncompressed)\n"
    "  FILE may also be Nsight Compute CSV (ncu --csv, details page or --page raw)\n"
    "  --metrics NCU.csv --into TRACE: join ncu's measured metrics to the kernels of TRACE (any format\n"
    "        strata reads) by kernel name and launch order; OUT defaults to TRACE's name plus .ncu.strata\n";

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
  if (!check_output_target(output, force, &error)) return fail("import", error, 1);
  if (!format::read_regular_file(metrics, size_t{1} << 30, "split the ncu output", &bytes, &error))
    return fail("import", error, 1);
  import::NcuProfile profile;
  if (!import::parse_ncu_csv(bytes, metrics, &profile, &error)) return fail("import", error, 1);
  model::Trace trace;
  if (!open_inputs(std::span<const std::string>(&into, 1), &trace, &error, model::OpenOptions{}))
    return fail("import", error, 1);
  const import::NcuJoinCounts c = import::join_ncu_metrics(profile, &trace);
  OutputFile out;
  if (!out.begin(output, force, &error) || !model::save_trace(trace, out.temp_path(), &error, zstd_level) ||
      !out.commit(&error))
    return fail("import", error, 1);
  std::printf("joined %s into %s: %llu of %zu ncu kernels matched a trace kernel (%llu unmatched), %llu trace "
              "kernels without metrics -> %s\n",
              exporter::escape_terminal(metrics).c_str(), exporter::escape_terminal(into).c_str(),
              static_cast<unsigned long long>(c.matched), profile.kernels.size(),
              static_cast<unsigned long long>(c.ncu_unmatched),
              static_cast<unsigned long long>(c.trace_without_metrics), exporter::escape_terminal(output).c_str());
  return c.matched == 0 ? 1 : 0;
}

}  // namespace

int run_import(int argc, char** argv) {
  std::string input, output, format = "auto", zstd = "3", metrics, into;
  bool force = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--force") {
      force = true;
      continue;
    }
    if (take_option(argc, argv, &i, "-o", &output, &missing) ||
        take_option(argc, argv, &i, "--output", &output, &missing) ||
        take_option(argc, argv, &i, "--format", &format, &missing) ||
        take_option(argc, argv, &i, "--zstd", &zstd, &missing) ||
        take_option(argc, argv, &i, "--metrics", &metrics, &missing) ||
        take_option(argc, argv, &i, "--into", &into, &missing)) {
      if (missing) return fail("import", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (!arg.empty() && arg[0] == '-' && arg != "-")
      return fail("import", "unknown option " + std::string(arg) + "\n" + kUsage);
    if (!input.empty())
      return fail("import", "one input file at a time (got " + input + " and " + std::string(arg) + ")");
    input = arg;
  }
  int zstd_level = 0;
  try {
    zstd_level = std::stoi(zstd);
  } catch (...) {
    return fail("import", "--zstd needs a number (0-19), got '" + zstd + "'");
  }
  if (!metrics.empty() || !into.empty()) {
    if (metrics.empty() || into.empty() || !input.empty())
      return fail("import", std::string("--metrics NCU.csv and --into TRACE go together, without FILE\n") + kUsage);
    return join_metrics(metrics, into, output, force, zstd_level);
  }
  if (input.empty()) return fail("import", std::string("no input file\n") + kUsage);
  if (output.empty()) output = default_output(input);

  std::string error;
  if (!check_inputs({input}, InputKind::kFile, &error)) return fail("import", error, 1);
  if (!check_output_target(output, force, &error)) return fail("import", error, 1);

  model::OpenOptions options;
  options.format = format == "auto" ? "json" : format;  // foreign formats only: a native trace is refused
  if (format == "auto") {  // a foreign reader recognized by content (nsys SQLite) is used as such
    import::register_readers();
    std::string probe_error;
    const model::TraceReader* reader = model::reader_for(input, "auto", &probe_error);
    if (reader != nullptr && reader->name() != "native") options.format = std::string(reader->name());
  }
  model::Trace trace;
  if (!open_inputs(std::span<const std::string>(&input, 1), &trace, &error, options))
    return fail("import", error, 1);
  OutputFile out;
  if (!out.begin(output, force, &error) || !model::save_trace(trace, out.temp_path(), &error, zstd_level) ||
      !out.commit(&error))
    return fail("import", error, 1);

  // The import's counts are its main process's stats; the tree's, the trace's.
  using stats::Stat;
  stats::StatSet counts;
  std::string format_name = "?";
  for (const model::Process& p : trace.processes) {
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
    std::printf("ncu: %llu kernels, %llu metric values, %llu rule rows, %llu other lines skipped (==PROF==, the "
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
  const model::SpanTree& tree = trace.tree();
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
    if (parent != model::kNoParent && s.correlation_id != 0 &&
        trace.spans[static_cast<size_t>(parent)].correlation_id == s.correlation_id)
      ++with_call;
    if (tree.external_owner(i) != model::kNoParent) ++with_op;
    if (tree.external_owner(i) != model::kNoParent ||
        tree.ancestor_at_level(trace, i, static_cast<uint8_t>(Level::kLayer)) != model::kNoParent)
      ++under_op;
  }
  if (device_work)
    std::printf(
        "device work: %llu spans, %llu linked to their runtime call by correlation id, %llu to their "
        "framework op by External id, %llu under a framework op\n",
        static_cast<unsigned long long>(device_work), static_cast<unsigned long long>(with_call),
        static_cast<unsigned long long>(with_op), static_cast<unsigned long long>(under_op));
  for (const model::Process& p : trace.processes) {
    for (const auto& [key, value] : p.properties.entries())
      if (key.rfind("import.unmapped_category.", 0) == 0)
        std::printf("category %s: imported at application level (%s events)\n",
                    exporter::escape_terminal(key.substr(25)).c_str(),
                    exporter::escape_terminal(value).c_str());
  }
  for (const model::Process& p : trace.processes) {
    if (auto devices = p.properties.get("import.devices")) {
      auto name = p.properties.get("device.0.name");
      std::printf("device properties: %s devices%s%s\n", exporter::escape_terminal(*devices).c_str(),
                  name ? ", device.0.name = " : "", name ? exporter::escape_terminal(*name).c_str() : "");
    }
    if (auto problem = p.properties.get("import.devices_problem"))
      std::printf("device properties: %s\n", exporter::escape_terminal(*problem).c_str());
  }
  for (const model::Process& p : trace.processes)
    if (auto problem = p.properties.get("import.first_problem"))
      std::printf("first problem: %s\n", exporter::escape_terminal(*problem).c_str());
  print_summary(model::summarize(trace), stdout);
  return 0;
}

}  // namespace strata::cli
