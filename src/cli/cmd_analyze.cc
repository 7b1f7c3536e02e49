// strata analyze FILE... [--analysis NAME...] [--format table|csv|json] [--list] [--param k=v ...]
//                [--output DIR [--force] [--gzip]] [--dask tcp://HOST:PORT [--dask-timeout S]]
// Opens the traces (any format a reader reads) into one trace, sorted once with one span tree, and
// runs the chosen analyses over it (several files = repeated runs). With --dask the Python driver
// (python/strata/dask.py, started isolated: cli/python_spawn.h) runs each file's analyses on a Dask
// worker and combines them.
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "analysis/analysis.h"
#include "analysis/pipeline.h"
#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/python_spawn.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "core/stats.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "trace/trace_reader.h"

namespace strata::cli {
namespace {

const char* extension(exporter::TableFormat f) {
  return f == exporter::TableFormat::kCsv ? ".csv" : f == exporter::TableFormat::kJson ? ".json" : ".txt";
}

struct AnalyzeArgs {
  std::vector<std::string> inputs, names, param_texts;
  std::string format_text = "table", output_dir, dask;
  bool list = false, force = false, gzip = false;
  unsigned jobs = 0;        // threads reading the inputs; 0: $STRATA_JOBS, else every hardware thread
  double dask_timeout = 0;  // --dask's deadline in seconds; 0: the driver's default
};

// Declares analyze's options (the text of `strata analyze --help`).
void describe_analyze(CommandLine& cl, AnalyzeArgs* a) {
  cl.app().add_option("FILE", a->inputs,
                      "a Strata trace (file or directory)"
#ifdef STRATA_HAVE_IMPORT
                      ", or a Kineto/ONNX Runtime/TensorFlow JSON trace (imported on the fly)"
#endif
  );
  cl.app()
      .add_option("-a,--analysis", a->names,
                  "run NAME (repeatable, or comma-separated; 'all' runs every analysis; --list names them)")
      ->allow_extra_args(false)
      ->delimiter(',')
      ->type_name("NAME");
  cl.app()
      .add_option("-p,--param", a->param_texts,
                  "KEY=VALUE: trim=0.1 stat=trimmed_mean|mean|median|min|max batch=N model=NAME_PART "
                  "threshold=0.05 latency_target_ms=MS top=N sort=latency device=h100|a100|... peak_gflops=G "
                  "peak_gbps=B (each analysis reads its own keys, listed by --list; a key none of the chosen "
                  "analyses reads is an error)")
      ->allow_extra_args(false)
      ->type_name("KEY=VALUE");
  cl.add_format(&a->format_text, {"table", "csv", "json"}, "how tables are printed (default table)");
  cl.add_output(
        &a->output_dir,
        "write one file per table (NAME.csv / NAME.json / NAME.txt) into DIR instead of standard output",
        "-o,--output")
      ->type_name("DIR");
  cl.add_force(&a->force);
  cl.app().add_flag("--gzip", a->gzip, "with --output: gzip-compress each table file (NAME.csv.gz, ...)");
  cl.app().add_flag("--list", a->list, "name and describe every analysis");
  cl.app()
      .add_option("-j,--jobs", a->jobs,
                  "threads that read the input files (default $STRATA_JOBS, else every hardware thread); the "
                  "trace is the same whatever the number")
      ->type_name("N");
  cl.app()
      .add_option(
          "--dask", a->dask,
          "run each file's load (and rank_breakdown/idle_time's per-rank rows) on the workers of this "
          "Dask scheduler and combine them (the strata.dask driver, run isolated, python3 -I, under "
          "/usr/bin/python3 or $STRATA_PYTHON; needs python3-distributed, --format csv, the rank "
          "analyses: rank_breakdown, idle_time, comm_overlap, collective_wait, step_time, "
          "kernel_distribution, launch_stats, queue_length; the files on a filesystem every worker sees; "
          "the workers must import strata: docs/ranks.md)")
      ->type_name("tcp://HOST:PORT");
  cl.app()
      .add_option(
          "--dask-timeout", a->dask_timeout,
          "with --dask: give up after S seconds, with one line saying what did not answer (default "
          "$STRATA_DASK_TIMEOUT, else 600; the scheduler and a first worker are waited for at most 30 "
          "s of it)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            char* end = nullptr;
            const double seconds = std::strtod(text.c_str(), &end);
            return end != text.c_str() && *end == '\0' && seconds > 0 && seconds < 1e9
                       ? ""
                       : "must be a positive number of seconds (got " + exporter::escape_terminal(text) + ")";
          },
          "", "seconds"))
      ->type_name("S");
}

// --dask: replaces this process by the Python driver, so that the CLI and strata.dask.analyze are one
// code path (the C++ side cannot speak Dask's protocol). The driver is Strata's own Python: it starts
// isolated (python_spawn.h), never from the working directory. Returns only on failure.
int run_on_dask(const AnalyzeArgs& a) {
  if (!a.output_dir.empty())
    return fail("analyze", "--dask prints the tables on standard output: drop --output");
  if (a.format_text != "csv") return fail("analyze", "--dask prints --format csv only: add --format csv");
  if (a.names.empty())
    return fail("analyze",
                "--dask needs the analyses named (-a rank_breakdown,idle_time,...: the rank analyses)");
  PythonModuleRun run;
  run.package_dir = find_python_package_dir();
  if (run.package_dir.empty())
    return fail("analyze",
                "--dask: the strata Python package is not next to this strata (lib/python): install "
                "Strata or run the build tree's bin/strata",
                1);
  std::string error;
  run.interpreter = strata_python_interpreter(&error);
  if (run.interpreter.empty()) return fail("analyze", "--dask: " + error, 1);
  run.module = "strata.dask";
  run.args = {"--scheduler", a.dask, "--format", "csv"};
  if (a.dask_timeout > 0) run.args.insert(run.args.end(), {"--timeout", std::to_string(a.dask_timeout)});
  for (const std::string& n : a.names) run.args.insert(run.args.end(), {"-a", n});
  for (const std::string& p : a.param_texts) run.args.insert(run.args.end(), {"-p", p});
  run.args.push_back("--");
  run.args.insert(run.args.end(), a.inputs.begin(), a.inputs.end());
  const int error_number = exec_isolated_python(run);
  return fail("analyze",
              "--dask: cannot run " + exporter::escape_terminal(run.interpreter) + ": " +
                  std::strerror(error_number) +
                  " (set STRATA_PYTHON to a python3 that has python3-distributed)",
              1);
}

// The tables of --output DIR, one file each. Every table is written to a temporary file first and
// they move into place together once all are written: a failed write (a full disk) leaves none of
// them, nor the directory unless it was there before. As every output: never through a planted
// link, an existing file replaced only with --force.
bool write_table_files(const std::vector<analysis::Table>& tables, exporter::TableFormat format,
                       const AnalyzeArgs& args, std::string* error) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool existed = fs::exists(fs::symlink_status(args.output_dir, ec));
  // The tables' directory follows the rules of outputs (safe_files.h): one of this user's, opened
  // once, written through its descriptor; as every output, no table is written through a planted
  // link, and an existing file is replaced only with --force.
  OutputDir dir;
  bool ok = dir.open(args.output_dir, error);
  {
    std::vector<std::unique_ptr<Output>> written;
    for (size_t i = 0; ok && i < tables.size(); ++i) {
      const std::string name = tables[i].name + extension(format) + (args.gzip ? ".gz" : "");
      const std::string path = args.output_dir + "/" + name;
      auto target = std::make_unique<Output>();
      OutputStream file;
      ok = target->begin_in(dir, name, args.force, error) && file.open(target->path(), path, error);
      if (ok) exporter::render_table(tables[i], format, file.stream());
      ok = ok && file.finish(error) && target->finish_content(error);
      written.push_back(std::move(target));
    }
    for (size_t i = 0; ok && i < written.size(); ++i) ok = written[i]->commit(error);
  }  // the temporary files of an unfinished set are removed here
  if (!ok && !existed) fs::remove(args.output_dir, ec);  // only if empty: nothing else is removed
  return ok;
}

void print_analysis_list() {
  for (const auto& a : analysis::all_analyses()) {
    std::string keys;
    for (std::string_view k : a->param_keys()) keys += (keys.empty() ? "" : ", ") + std::string(k);
    std::printf("%-24s %s\n%-24s   --param keys: %s\n", std::string(a->name()).c_str(),
                std::string(a->description()).c_str(), "", keys.empty() ? "none" : keys.c_str());
  }
}

}  // namespace

int run_analyze(int argc, char** argv) {
  AnalyzeArgs args;
  analysis::Params params;
  CommandLine cl(
      "analyze",
      "Run XSP analyses (model/layer/kernel tables, rooflines, per-op statistics) on traces. The "
      "traces are opened into one trace (sorted once, one span tree); several files are analyzed as "
      "repeated runs.");
  describe_analyze(cl, &args);
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  for (const std::string& value : args.param_texts) {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0)
      return cl.usage_error("--param needs KEY=VALUE, e.g. --param trim=0.2");
    params.set(value.substr(0, eq), value.substr(eq + 1));
  }
  if (args.list) {
    print_analysis_list();
    return 0;
  }
  exporter::TableFormat format;
  if (!exporter::parse_table_format(args.format_text, &format))
    return fail("analyze", "--format " + args.format_text + " is not one of table, csv, json");
  if (args.inputs.empty()) return cl.usage_error("no input file");
  if (!args.dask.empty()) return run_on_dask(args);
  if (args.dask_timeout > 0) return cl.usage_error("--dask-timeout is the deadline of --dask: give --dask");
  if (args.gzip && args.output_dir.empty())
    return cl.usage_error("--gzip compresses the files of --output DIR: give --output");
  if (auto bad = analysis::validate_params(params)) return fail("analyze", *bad);

  std::vector<const analysis::Analysis*> chosen;
  if (args.names.empty()) {
    for (std::string_view n : analysis::default_analyses())
      if (const auto* a = analysis::find_analysis(n)) chosen.push_back(a);
  } else {
    for (const std::string& n : args.names) {
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
  if (!is_quiet())
    for (const std::string& note : keys.notes)
      std::fprintf(stderr, "note: %s\n", exporter::escape_terminal(note).c_str());

  if (std::string error; !check_inputs(args.inputs, InputKind::kTrace, &error))
    return fail("analyze", error, 1);
  trace::Trace trace;
  std::string error;
  trace::OpenOptions open;
  open.jobs = args.jobs;
  if (!open_inputs(args.inputs, &trace, &error, open)) return fail("analyze", error, 1);
  print_warnings(trace.warnings);
  if (uint64_t drops = trace.total_drops(); drops && !is_quiet())
    std::fprintf(stderr, "note: the trace records %llu dropped events (strata info lists them by cause)\n",
                 static_cast<unsigned long long>(drops));

  const auto start = std::chrono::steady_clock::now();
  analysis::PipelineResult pipeline;
  {
    Progress progress("analyze");
    progress.phase("running " + std::to_string(chosen.size()) + " analyses over " +
                   std::to_string(trace.spans.size()) + " spans");
    pipeline = analysis::run_pipeline(trace, chosen, params);
  }
  detail("analyze", "ran %zu analyses in %.3f s", chosen.size(),
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (uint64_t ambiguous = trace.stat(stats::Stat::kTreeAmbiguous); ambiguous && !is_quiet())
    std::fprintf(stderr,
                 "note: %llu spans had several overlapping candidate parents (parallel work); record with "
                 "--serialize to resolve them\n",
                 static_cast<unsigned long long>(ambiguous));

  int missing_count = 0;
  std::vector<analysis::Table> tables;
  for (auto& [a, result] : pipeline.results) {
    if (result.missing_input) {
      ++missing_count;
      std::fprintf(stderr, "%s: %s\n", std::string(a->name()).c_str(),
                   exporter::escape_terminal(*result.missing_input).c_str());
      continue;
    }
    for (auto& table : result.tables) tables.push_back(std::move(table));
  }
  if (args.output_dir.empty()) {
    // One document: CSV tables separated by "# name" lines, JSON as one object keyed by table name.
    OutputStream out;
    out.open_stdout();
    exporter::render_tables(tables, format, out.stream());
    if (!out.finish(&error)) return fail("analyze", error, 1);
  } else if (!tables.empty() && !write_table_files(tables, format, args, &error)) {
    return fail("analyze", error, 1);
  }
  // Every analysis lacking input is an error only when nothing at all could be shown.
  return missing_count == static_cast<int>(chosen.size()) ? 1 : 0;
}

}  // namespace strata::cli
