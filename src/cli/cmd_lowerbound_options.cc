#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string_view>

#include "cli/cli_options.h"
#include "cli/lowerbound_options.h"
#include "lowerbound/ir/onnx_loader.h"
#include "lowerbound/perfdb/db_url.h"

namespace strata::cli {

using lowerbound::LayerModel;
using lowerbound::load_onnx_file;
using lowerbound::normalize_dtype;
namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    if (comma > start) out.push_back(text.substr(start, comma - start));
    start = comma + 1;
  }
  return out;
}

// A password in --db is readable by every user of the machine while the command runs (`ps`,
// /proc/PID/cmdline): refuse it, after overwriting it in our own argv to shorten that window.
bool check_db_argument(int argc, char** argv, int first, const std::string& url, std::string* error) {
  std::string secret = lowerbound::db_url_password(url);
  lowerbound::DbTarget target;
  std::string conninfo_error;
  const bool conninfo = !lowerbound::parse_db_url(url, &target, &conninfo_error);
  if (secret.empty() && !conninfo) return true;
  for (int i = first; i < argc; ++i) {
    std::string scrubbed = lowerbound::redact_db_url(argv[i]);
    if (scrubbed != argv[i]) {
      size_t n = std::strlen(argv[i]);
      std::memset(argv[i], '*', n);
      std::memcpy(argv[i], scrubbed.data(), std::min(n, scrubbed.size()));
    }
  }
  if (conninfo) {
    *error = "--db " + conninfo_error;
    return false;
  }
  *error = "--db " + lowerbound::redact_db_url(url) +
           ": a password on the command line is visible to every user of this machine (ps, /proc); remove it "
           "and keep it in ~/.pgpass (HOST:PORT:DB:USER:PASSWORD, mode 0600), $PGPASSWORD, or a service file "
           "(postgresql://?service=NAME with ~/.pg_service.conf); $STRATA_PERF_DB may hold a full URI";
  return false;
}

}  // namespace

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

namespace {

// Options with a value: name -> a setter that checks the value (false with `error`).
using Setter = bool (*)(const std::string& v, CommandOptions* out, std::string* error);

bool set_format(const std::string& v, CommandOptions* out, std::string* error) {
  out->format = v;
  if (v == "text" || v == "csv" || v == "json") return true;
  *error = "--format must be text, csv or json, not '" + v + "'";
  return false;
}

bool set_backend(const std::string& v, CommandOptions* out, std::string* error) {
  out->bench.backend = v;
  if (v == "cpu" || v == "cuda") return true;
  *error = "--backend must be cpu or cuda, not '" + v + "'";
  return false;
}

bool set_dtypes(const std::string& v, CommandOptions* out, std::string* error) {
  out->bench.dtypes.clear();
  for (const std::string& d : split_list(v)) {
    std::string n = normalize_dtype(d);
    if (n.empty()) {
      *error = "--dtype: unknown data type '" + d + "' (use fp32, fp16, bf16)";
      return false;
    }
    out->bench.dtypes.push_back(n);
  }
  return true;
}

bool set_layouts(const std::string& v, CommandOptions* out, std::string* error) {
  out->bench.layouts = split_list(v);
  for (const std::string& l : out->bench.layouts)
    if (l != "nchw" && l != "nhwc" && l != "blocked") {
      *error = "--layout: unknown layout '" + l + "' (use nchw, nhwc, blocked)";
      return false;
    }
  return true;
}

bool set_repetitions(const std::string& v, CommandOptions* out, std::string* error) {
  out->measure.repetitions = std::atoi(v.c_str());
  if (out->measure.repetitions >= 1 && out->measure.repetitions <= 1000) return true;
  *error = "--repetitions must be between 1 and 1000";
  return false;
}

bool set_min_time(const std::string& v, CommandOptions* out, std::string* error) {
  double ms = std::atof(v.c_str());
  out->measure.min_repetition_ns = static_cast<int64_t>(ms * 1e6);
  if (ms > 0) return true;
  *error = "--min-time-ms must be a positive number";
  return false;
}

bool set_threads(const std::string& v, CommandOptions* out, std::string* error) {
  out->measure.threads = std::atoi(v.c_str());
  out->threads_given = true;
  if (out->measure.threads >= 1 && out->measure.threads <= 4096 &&
      v.find_first_not_of("0123456789") == std::string::npos)
    return true;
  *error = "--threads must be a positive integer (the framework run's thread count), not '" + v + "'";
  return false;
}

bool set_max_spread(const std::string& v, CommandOptions* out, std::string* error) {
  char* end = nullptr;
  out->measure.max_spread = std::strtod(v.c_str(), &end);
  if (end != v.c_str() && *end == '\0' && out->measure.max_spread > 0 && out->measure.max_spread <= 10)
    return true;
  *error = "--max-spread must be a fraction of the median above 0 (0.1 = 10%), not '" + v + "'";
  return false;
}

bool set_attempts(const std::string& v, CommandOptions* out, std::string* error) {
  out->measure.attempts = std::atoi(v.c_str());
  if (out->measure.attempts >= 1 && out->measure.attempts <= 100) return true;
  *error = "--attempts must be between 1 and 100";
  return false;
}

// CLI11 callback from a setter: a bad value is a parse error carrying the setter's line.
std::function<void(const std::string&)> checked(Setter set, CommandOptions* out) {
  return [set, out](const std::string& v) {
    std::string error;
    if (!set(v, out, &error)) throw CLI::ValidationError(error);
  };
}

CLI::Option* value(CommandLine& cl, const std::string& name, Setter set, CommandOptions* out,
                   const char* type, const std::string& help) {
  return cl.app().add_option_function<std::string>(name, checked(set, out), help)->type_name(type);
}

}  // namespace

int parse_command_options(CommandLine& cl, int argc, char** argv, unsigned groups, CommandOptions* out) {
  CLI::App& app = cl.app();
  if (groups & kModelOption)
    app.add_option("--model", out->models,
                   "the run's ONNX model: compare the run with its lower bound (`strata lowerbound`)")
        ->type_name("MODEL.onnx")
        ->expected(1);
  else
    app.add_option("MODEL", out->models, "ONNX model files (shape inference included)")
        ->type_name("MODEL.onnx");
  if (groups & kFormatOption) value(cl, "-f,--format", set_format, out, "NAME", "text (default), csv, json");
  if (groups & kLayersOption)
    app.add_flag("--layers", out->layers, "also list every layer: type, shapes, attributes, predecessors");
  if (groups & kBenchOptions) {
    value(cl, "--backend", set_backend, out, "NAME",
          "cpu (oneDNN, default) or cuda (cuDNN + cuBLAS: needs a GPU and the CUDA plugin)");
    value(cl, "--dtype", set_dtypes, out, "LIST", "data types, comma-separated: fp32 (default), bf16, fp16");
    value(cl, "--layout", set_layouts, out, "LIST",
          "layouts, comma-separated: nchw (default), nhwc, blocked");
    app.add_flag("--fusion", out->bench.fusion,
                 "also each convolution fused with what follows it as oneDNN post-ops: an activation (Relu, "
                 "Clip/ReLU6, Sigmoid, Tanh, Elu, LeakyRelu) or a residual Add (+ activation)");
  }
  if (groups & kDbOptions) {
    app.add_option("--db", out->db_url,
                   "performance database: FILE.sqlite or postgresql://... (no password: ~/.pgpass); default "
                   "$STRATA_PERF_DB or ~/.cache/strata/perf.sqlite")
        ->type_name("URL");
    app.add_option("--system-tag", out->bench.system_tag, "rows of this system tag (default: this machine's)")
        ->type_name("TAG");
    value(cl, "--threads", set_threads, out, "N",
          "library (OpenMP) threads: the framework run's count (default $OMP_NUM_THREADS, else 1; PyTorch: "
          "torch.get_num_threads())");
  }
  if (groups & kMeasureOptions) {
    value(cl, "--repetitions", set_repetitions, out, "N", "timed repetitions per measurement (1-1000)");
    value(cl, "--min-time-ms", set_min_time, out, "MS", "least time of one repetition");
    value(
        cl, "--max-spread", set_max_spread, out, "F",
        "a measurement whose interquartile range exceeds F x its median (default 0.1) is re-measured, up to "
        "--attempts times; still noisy, the layer is not stored");
    value(cl, "--attempts", set_attempts, out, "N", "measurements of a noisy layer (default 3, 1-100)");
    app.add_flag("--recheck", out->bench.recheck,
                 "also re-measure stored layers whose rows are suspicious (no quality recorded, or noisy)");
  }
  if (groups & kOutputOption)
    cl.add_output(&out->output, "directory for the generated benchmarks")->type_name("DIR");
  if (groups & kTraceOptions) {
    app.add_option("--trace", out->trace,
                   "compare a framework run (strata record --level layer; --level library for algorithm "
                   "selection; --level device or an imported Kineto trace: tensor-core use) with the bound")
        ->type_name("RUN");
    cl.add_output(&out->dot, "write the critical path as Graphviz DOT (.gz: gzip'd)", "--dot");
    cl.add_output(&out->svg, "write the critical path as SVG (needs Graphviz's dot; .gz: gzip'd)", "--svg");
  }
  if (groups & (kTraceOptions | kTopOption))
    app.add_option("--top", out->top, "rows of the largest gaps shown (default 10)")
        ->check(positive_count(1000000))
        ->type_name("N");
  if (groups & (kOutputOption | kTraceOptions)) cl.add_force(&out->force);
  if (int code = cl.parse(argc, argv); code >= 0) return code;
  std::string error;
  if (!out->db_url.empty() && !check_db_argument(argc, argv, 1, out->db_url, &error))
    return cl.usage_error(error);
  if (!out->threads_given) out->measure.threads = lowerbound::default_threads();
  if (out->bench.dtypes.empty()) out->bench.dtypes = {"f32"};
  if (out->bench.layouts.empty()) out->bench.layouts = {"nchw"};
  return -1;
}

bool load_models(const std::vector<std::string>& paths, std::vector<LayerModel>* models, std::string* error) {
  models->reserve(paths.size());
  for (const std::string& p : paths) {
    LayerModel m;
    if (!load_onnx_file(p, &m, error)) return false;
    models->push_back(std::move(m));
  }
  return true;
}

}  // namespace strata::cli
