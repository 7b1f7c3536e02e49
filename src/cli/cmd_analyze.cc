// strata analyze FILE... [--analysis NAME...] [--format table|csv|json] [--list] [--param k=v ...]
//                [--output DIR [--force]]
// Opens the traces (any format a reader reads) into one trace, sorted once with one span tree, and
// runs the chosen analyses over it (several files = repeated runs).
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/pipeline.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/safe_files.h"
#include "core/stats.h"
#include "export/table_render.h"

namespace strata::cli {
namespace {

constexpr const char* kUsage =
    "usage: strata analyze FILE... [--analysis NAME...] [--format table|csv|json] [--param KEY=VALUE ...]\n"
    "                      [--output DIR [--force]] [--list]\n"
    "  FILE: a Strata trace (file or directory)"
#ifdef STRATA_HAVE_IMPORT
    ", or a Kineto/ONNX Runtime/TensorFlow JSON trace (imported on the fly)"
#endif
    "; several files are analyzed as repeated runs\n"
    "  --analysis NAME  run NAME (repeatable, or comma-separated; 'all' runs every analysis)\n"
    "  --param KEY=VALUE  trim=0.1 stat=trimmed_mean|mean|median|min|max batch=N model=NAME_PART "
    "threshold=0.05\n"
    "                     latency_target_ms=MS top=N sort=latency device=h100|a100|... peak_gflops=G "
    "peak_gbps=B\n"
    "                     (each analysis reads its own keys, listed by --list; a key none of the chosen\n"
    "                     analyses reads is an error)\n"
    "  --output DIR     write one file per table (NAME.csv / NAME.json / NAME.txt) instead of stdout\n"
    "  --force          replace those files if they exist (only regular files of yours)\n"
    "  --list           name and describe every analysis\n";

const char* extension(exporter::TableFormat f) {
  return f == exporter::TableFormat::kCsv ? ".csv" : f == exporter::TableFormat::kJson ? ".json" : ".txt";
}

}  // namespace

int run_analyze(int argc, char** argv) {
  std::vector<std::string> inputs, names;
  std::string format_text = "table", output_dir;
  analysis::Params params;
  bool list = false, force = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    bool missing = false;
    std::string value;
    if (arg == "-h" || arg == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
    if (arg == "--list") {
      list = true;
      continue;
    }
    if (arg == "--force") {
      force = true;
      continue;
    }
    if (take_option(argc, argv, &i, "--analysis", &value, &missing) ||
        take_option(argc, argv, &i, "-a", &value, &missing)) {
      if (missing) return fail("analyze", std::string(arg) + " needs a name (see strata analyze --list)");
      for (size_t start = 0; start <= value.size();) {
        size_t comma = value.find(',', start);
        if (comma == std::string::npos) comma = value.size();
        if (comma > start) names.push_back(value.substr(start, comma - start));
        start = comma + 1;
      }
      continue;
    }
    if (take_option(argc, argv, &i, "--param", &value, &missing) ||
        take_option(argc, argv, &i, "-p", &value, &missing)) {
      size_t eq = value.find('=');
      if (missing || eq == std::string::npos || eq == 0)
        return fail("analyze", "--param needs KEY=VALUE, e.g. --param trim=0.2");
      params.set(value.substr(0, eq), value.substr(eq + 1));
      continue;
    }
    if (take_option(argc, argv, &i, "--format", &format_text, &missing) ||
        take_option(argc, argv, &i, "-f", &format_text, &missing) ||
        take_option(argc, argv, &i, "--output", &output_dir, &missing) ||
        take_option(argc, argv, &i, "-o", &output_dir, &missing)) {
      if (missing) return fail("analyze", std::string(arg) + " needs a value\n" + kUsage);
      continue;
    }
    if (!arg.empty() && arg[0] == '-' && arg != "-")
      return fail("analyze", "unknown option " + std::string(arg) + "\n" + kUsage);
    inputs.emplace_back(arg);
  }
  if (list) {
    for (const auto& a : analysis::all_analyses()) {
      std::string keys;
      for (std::string_view k : a->param_keys())
        keys += (keys.empty() ? "" : ", ") + std::string(k);
      std::printf("%-24s %s\n%-24s   --param keys: %s\n", std::string(a->name()).c_str(),
                  std::string(a->description()).c_str(), "", keys.empty() ? "none" : keys.c_str());
    }
    return 0;
  }
  exporter::TableFormat format;
  if (!exporter::parse_table_format(format_text, &format))
    return fail("analyze", "--format " + format_text + " is not one of table, csv, json");
  if (inputs.empty()) return fail("analyze", std::string("no input file\n") + kUsage);
  if (auto bad = analysis::validate_params(params)) return fail("analyze", *bad);

  std::vector<const analysis::Analysis*> chosen;
  if (names.empty()) {
    for (std::string_view n : analysis::default_analyses())
      if (const auto* a = analysis::find_analysis(n)) chosen.push_back(a);
  } else {
    for (const std::string& n : names) {
      if (n == "all") {
        for (const auto& a : analysis::all_analyses()) chosen.push_back(a.get());
        continue;
      }
      const auto* a = analysis::find_analysis(n);
      if (a == nullptr)
        return fail("analyze", "unknown analysis '" + n + "' (strata analyze --list names them)");
      chosen.push_back(a);
    }
  }
  // Every --param is read by a chosen analysis, or the command says which and stops.
  analysis::ParamKeyCheck keys = analysis::check_param_keys(params, chosen);
  if (keys.error) return fail("analyze", *keys.error);
  for (const std::string& note : keys.notes) std::fprintf(stderr, "note: %s\n", note.c_str());

  if (std::string error; !check_inputs(inputs, InputKind::kTrace, &error)) return fail("analyze", error, 1);
  model::Trace trace;
  std::string error;
  if (!open_inputs(inputs, &trace, &error)) return fail("analyze", error, 1);
  for (const auto& w : trace.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  if (uint64_t drops = trace.total_drops())
    std::fprintf(stderr, "note: the trace records %llu dropped events (strata info lists them by cause)\n",
                 static_cast<unsigned long long>(drops));

  analysis::PipelineResult pipeline = analysis::run_pipeline(trace, chosen, params);
  if (uint64_t ambiguous = trace.stat(stats::Stat::kTreeAmbiguous))
    std::fprintf(stderr,
                 "note: %llu spans had several overlapping candidate parents (parallel work); record with "
                 "--serialize to resolve them\n",
                 static_cast<unsigned long long>(ambiguous));

  if (!output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(output_dir, ec);
    if (ec) return fail("analyze", output_dir + ": cannot create directory: " + ec.message(), 1);
  }
  int missing_count = 0;
  std::vector<analysis::Table> tables;
  for (auto& [a, result] : pipeline.results) {
    if (result.missing_input) {
      ++missing_count;
      std::fprintf(stderr, "%s: %s\n", std::string(a->name()).c_str(), result.missing_input->c_str());
      continue;
    }
    for (auto& table : result.tables) tables.push_back(std::move(table));
  }
  if (output_dir.empty()) {
    // One document: CSV tables separated by "# name" lines, JSON as one object keyed by table name.
    exporter::render_tables(tables, format, std::cout);
  } else {
    for (const auto& table : tables) {
      // As every output: never through a planted link, an existing file replaced only with --force.
      std::string path = output_dir + "/" + table.name + extension(format);
      OutputFile target;
      std::string error;
      if (!target.begin(path, force, &error)) return fail("analyze", error, 1);
      std::ofstream file(target.temp_path(), std::ios::binary);
      exporter::render_table(table, format, file);
      file.flush();
      if (!file) return fail("analyze", path + ": write failed", 1);
      file.close();
      if (!target.commit(&error)) return fail("analyze", error, 1);
    }
  }
  std::cout.flush();
  // Every analysis lacking input is an error only when nothing at all could be shown.
  return missing_count == static_cast<int>(chosen.size()) ? 1 : 0;
}

}  // namespace strata::cli
