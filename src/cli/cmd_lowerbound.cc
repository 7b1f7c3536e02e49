// strata lowerbound MODEL.onnx: sequential and parallel lower-bound latency from the performance
// database, the critical path (DOT/SVG), fusion and precision what-ifs, and, with --trace, the
// framework's run compared with the bound (Benanza section IV).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>

#include "cli/cli_options.h"
#include "cli/cli_util.h"
#include "cli/commands.h"
#include "cli/lowerbound_compare.h"
#include "cli/lowerbound_options.h"
#include "cli/output_stream.h"
#include "cli/safe_files.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "lowerbound/analyses/lowerbound_analyses.h"
#include "lowerbound/bounds/estimate.h"

namespace strata::cli {

namespace lb = strata::lowerbound;

namespace {

// Graphviz `dot -Tsvg DOT -o SVG`, run without a shell (paths may hold quotes or spaces), its
// messages discarded. False when it is missing or fails.
bool run_dot_to_svg(const std::string& dot_path, const std::string& svg_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
  std::string tsvg = "-Tsvg", o = "-o", dot = "dot", in = dot_path, out = svg_path;
  char* argv[] = {dot.data(), tsvg.data(), in.data(), o.data(), out.data(), nullptr};
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, "dot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return false;
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// --trace: the framework's run compared with the bound by the registered lower-bound analyses, over
// one span tree and workload view.
bool compare_trace(const CommandOptions& opt, const LoadedBound& bound, std::vector<table::Table>* tables,
                   std::string* error) {
  trace::Trace trace;
  if (!load_native_or_import(opt.trace, &trace, error)) return false;  // checks the input, any format
  for (auto& [name, r] : run_bound_analyses(trace, bound, opt.top, lb::kBoundAnalyses)) {
    if (r.missing_input) {
      if (name == "tensor_cores") continue;  // a CPU run: nothing to say about tensor cores
      *error = opt.trace + ": " + *r.missing_input;
      return false;
    }
    for (table::Table& t : r.tables) {
      // Said on stderr too: a bound above the measurement, or for another thread count, is not one.
      if (t.name == "framework_vs_bound")
        for (const std::string& note : t.notes)
          if (note.rfind("warning: the sequential bound", 0) == 0 || note.rfind("warning: threads", 0) == 0)
            std::fprintf(stderr, "strata lowerbound: %s\n", exporter::escape_terminal(note).c_str());
      tables->push_back(std::move(t));
    }
  }
  return true;
}

// --dot / --svg: the critical path. Written as every output is (cli/safe_files.h): never through a
// planted link, an existing file replaced only with --force.
bool write_text_output(const std::string& path, const std::string& text, bool force, std::string* error) {
  Output target;  // a name ending in .gz is gzip'd
  OutputStream out;
  if (!target.begin(path, force, error) || !out.open(target.path(), path, error)) return false;
  out.stream() << text;
  return out.finish(error) && target.commit(error);
}

bool write_critical_path(const CommandOptions& opt, const lb::BoundInputs& in, const lb::ModelEstimate& main,
                         std::string* error) {
  std::string dot = lb::critical_path_dot(in.model, main.latency_ns, main.bounds);
  if (!opt.dot.empty()) {
    if (!write_text_output(opt.dot, dot, opt.force, error)) return false;
    inform("lowerbound", "critical path (DOT): %s", opt.dot.c_str());
  }
  if (opt.svg.empty()) return true;
  // Graphviz reads plain DOT: a gzip'd --dot gets a plain copy next to the SVG.
  const bool own_dot = opt.dot.empty() || is_gzip_name(opt.dot);
  const std::string svg_plain = is_gzip_name(opt.svg) ? opt.svg.substr(0, opt.svg.size() - 3) : opt.svg;
  std::string dot_path = own_dot ? svg_plain + ".dot" : opt.dot;
  if (own_dot && !write_text_output(dot_path, dot, opt.force, error)) return false;
  Output svg;
  if (!svg.begin(opt.svg, opt.force, error)) return false;
  if (!run_dot_to_svg(dot_path, svg.path())) {
    std::fprintf(
        stderr,
        "strata lowerbound: warning: graphviz `dot` failed or is missing (apt-get install graphviz); "
        "the DOT file is %s\n",
        dot_path.c_str());
    return true;
  }
  if (!svg.commit(error)) return false;
  inform("lowerbound", "critical path (SVG): %s", opt.svg.c_str());
  return true;
}

}  // namespace

int run_lowerbound(int argc, char** argv) {
  CommandOptions opt;
  std::string error;
  CommandLine cl(
      "lowerbound",
      "Lower bounds of an ONNX model's latency from the best benchmarked latency of each layer: "
      "sequential (sum) and parallel (critical path through the layer DAG). The first --dtype is the "
      "main one; the others are compared in the precision table. --fusion adds the bound with fusable "
      "chains (conv + activation, conv + residual add) fused. Use --threads with the framework run's "
      "count. A bound above the measured run (normalized > 1) is reported as such.");
  if (int code = parse_command_options(
          cl, argc, argv, kFormatOption | kLayersOption | kBenchOptions | kDbOptions | kTraceOptions, &opt);
      code >= 0)
    return code;
  if (opt.models.size() != 1) return cl.usage_error("give exactly one MODEL.onnx");
  if (!check_inputs(opt.models, InputKind::kFile, &error)) return fail("lowerbound", error, 1);
  LoadedBound bound;
  if (!load_bound("lowerbound", opt, &bound, &error)) return fail("lowerbound", error, 1);
  const lb::BoundInputs& in = bound.inputs;
  const std::string& dtype = opt.bench.dtypes[0];
  const std::string& layout = opt.bench.layouts[0];
  const std::vector<lb::ModelEstimate>& estimates = bound.estimates;
  const lb::ModelEstimate& main = estimates[0];

  std::vector<table::Table> tables;
  tables.push_back(lb::bounds_table(in.model, estimates));
  if (opt.layers) tables.push_back(lb::layer_table(in.model, main));
  if (opt.bench.fusion) tables.push_back(lb::fusion_table(in.model, in.index, dtype, layout));
  if (opt.bench.dtypes.size() > 1)
    tables.push_back(lb::precision_table(in.model, in.index, layout, opt.bench.dtypes));
  if (!opt.trace.empty() && !compare_trace(opt, bound, &tables, &error)) return fail("lowerbound", error, 1);
  if (!write_critical_path(opt, in, main, &error)) return fail("lowerbound", error, 1);
  exporter::TableFormat format;
  exporter::parse_table_format(opt.format, &format);
  exporter::render_tables(tables, format, std::cout);
  return 0;
}

}  // namespace strata::cli
