// strata lowerbound MODEL.onnx: sequential and parallel lower-bound latency from the performance
// database, the critical path (DOT/SVG), fusion and precision what-ifs, and, with --trace, the
// framework's run compared with the bound (Benanza section IV).
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "cli/cli_util.h"
#include "cli/commands.h"
#include "export/table_render.h"
#include "lowerbound/analyzer.h"
#include "lowerbound/command_options.h"
#include "lowerbound/perf_db.h"
#include "lowerbound/trace_compare.h"
#include "model/trace_loader.h"

namespace strata::cli {

namespace lb = strata::lowerbound;

namespace {

constexpr const char* kUsage =
    "usage: strata lowerbound MODEL.onnx [--db URL] [--backend cpu|cuda] [--dtype fp32,bf16,fp16]\n"
    "                         [--layout nchw|nhwc|blocked] [--fusion] [--trace RUN.strata] [--dot FILE.dot]\n"
    "                         [--svg FILE.svg] [--layers] [--top N] [--format text|csv|json]\n"
    "                         [--system-tag TAG]\n"
    "  Lower bounds from the best benchmarked latency of each layer: sequential (sum) and parallel\n"
    "  (critical path through the layer DAG). The first --dtype is the main one; the others are\n"
    "  compared in the precision table. --trace compares a framework run (strata record --level layer,\n"
    "  --level library for algorithm selection) with the bound; on a GPU run (--level device, or a\n"
    "  Kineto trace from strata import) it also shows which layers' kernels ran on tensor cores.\n"
    "  --fusion adds the bound with fusable chains (conv + activation, conv + residual add) fused.\n";

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

}  // namespace

int run_lowerbound(int argc, char** argv) {
  lb::CommandOptions opt;
  std::string error;
  if (!lb::parse_command_options(argc, argv, 1, &opt, &error)) return fail("lowerbound", error);
  if (opt.help || opt.models.size() != 1) {
    std::fputs(kUsage, opt.help ? stdout : stderr);
    return opt.help ? 0 : 2;
  }
  std::vector<lb::LayerModel> models;
  if (!check_inputs(opt.models, InputKind::kFile, &error) || !lb::load_models(opt.models, &models, &error))
    return fail("lowerbound", error, 1);
  const lb::LayerModel& model = models[0];
  std::string url = opt.db_url.empty() ? lb::default_perf_db_url() : opt.db_url;
  auto db = lb::open_perf_db(url, &error);
  if (!db) return fail("lowerbound", error, 1);
  std::string why;
  std::string system = lb::system_key(opt.bench.backend, &why);
  if (system.empty()) return fail("lowerbound", why, 1);
  if (!opt.bench.system_tag.empty()) system += "|tag=" + opt.bench.system_tag;
  std::vector<lb::BenchRecord> records;
  if (!db->load(system, opt.bench.backend, &records, &error)) return fail("lowerbound", error, 1);
  lb::LatencyIndex index;
  for (const lb::BenchRecord& r : records) index.add(r);

  const std::string& dtype = opt.bench.dtypes[0];
  const std::string& layout = opt.bench.layouts[0];
  std::vector<lb::ModelEstimate> estimates;
  estimates.push_back(lb::estimate_model(model, index, dtype, layout, false));
  if (opt.bench.fusion) estimates.push_back(lb::estimate_model(model, index, dtype, layout, true));
  const lb::ModelEstimate& main = estimates[0];
  if (main.missing > 0)
    std::fprintf(
        stderr,
        "strata lowerbound: warning: %llu of %zu layers have no measurement for this system (%s, %s) in "
        "%s; the bound leaves them out. Fill them with: strata bench run %s --db %s --dtype %s --layout "
        "%s%s%s\n",
        static_cast<unsigned long long>(main.missing), model.layers.size(), dtype.c_str(), layout.c_str(),
        db->describe().c_str(), model.path.c_str(), url.c_str(), lb::join(opt.bench.dtypes, ",").c_str(),
        layout.c_str(), opt.bench.fusion ? " --fusion" : "",
        opt.bench.system_tag.empty() ? "" : (" --system-tag " + opt.bench.system_tag).c_str());

  if (main.unsupported > 0)
    std::fprintf(
        stderr,
        "strata lowerbound: warning: %llu layers have no benchmark (operator without a library-call mapping, "
        "or no implementation in the library): they count 0 in the bound; `--layers` lists them\n",
        static_cast<unsigned long long>(main.unsupported));

  std::vector<analysis::Table> tables;
  tables.push_back(lb::bounds_table(model, estimates));
  if (opt.layers) tables.push_back(lb::layer_table(model, main));
  if (opt.bench.fusion) tables.push_back(lb::fusion_table(model, index, dtype, layout));
  if (opt.bench.dtypes.size() > 1)
    tables.push_back(lb::precision_table(model, index, layout, opt.bench.dtypes));

  if (!opt.trace.empty()) {
    model::Trace trace;
    if (!check_inputs({opt.trace}, InputKind::kTrace, &error) ||
        !model::load_trace(opt.trace, &trace, &error))
      return fail("lowerbound", error, 1);
    lb::TraceComparison cmp;
    if (!lb::compare_with_trace(model, trace, &cmp, &error))
      return fail("lowerbound", opt.trace + ": " + error, 1);
    for (analysis::Table& t : lb::comparison_tables(model, main, index, cmp, opt.top))
      tables.push_back(std::move(t));
  }

  std::string dot = lb::critical_path_dot(model, main.latency_ns, main.bounds);
  if (!opt.dot.empty()) {
    std::ofstream out(opt.dot);
    out << dot;
    if (!out) return fail("lowerbound", opt.dot + ": cannot write the DOT file", 1);
    std::fprintf(stderr, "critical path (DOT): %s\n", opt.dot.c_str());
  }
  if (!opt.svg.empty()) {
    std::string dot_path = opt.dot.empty() ? opt.svg + ".dot" : opt.dot;
    if (opt.dot.empty()) {
      std::ofstream out(dot_path);
      out << dot;
    }
    if (!run_dot_to_svg(dot_path, opt.svg))
      std::fprintf(
          stderr,
          "strata lowerbound: warning: graphviz `dot` failed or is missing (apt-get install graphviz); "
          "the DOT file is %s\n",
          dot_path.c_str());
    else
      std::fprintf(stderr, "critical path (SVG): %s\n", opt.svg.c_str());
  }
  exporter::TableFormat format;
  exporter::parse_table_format(opt.format, &format);
  exporter::render_tables(tables, format, std::cout);
  return 0;
}

}  // namespace strata::cli
