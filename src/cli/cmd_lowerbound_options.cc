#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

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

struct ValueOption {
  std::string_view name;
  Setter set;
};
constexpr ValueOption kValueOptions[] = {
    {"--db", [](const std::string& v, CommandOptions* o, std::string*) { return o->db_url = v, true; }},
    {"--system-tag",
     [](const std::string& v, CommandOptions* o, std::string*) { return o->bench.system_tag = v, true; }},
    {"--trace", [](const std::string& v, CommandOptions* o, std::string*) { return o->trace = v, true; }},
    {"--dot", [](const std::string& v, CommandOptions* o, std::string*) { return o->dot = v, true; }},
    {"--svg", [](const std::string& v, CommandOptions* o, std::string*) { return o->svg = v, true; }},
    {"-o", [](const std::string& v, CommandOptions* o, std::string*) { return o->output = v, true; }},
    {"--output", [](const std::string& v, CommandOptions* o, std::string*) { return o->output = v, true; }},
    {"--top",
     [](const std::string& v, CommandOptions* o, std::string*) {
       return o->top = static_cast<size_t>(std::max(1, std::atoi(v.c_str()))), true;
     }},
    {"--format", set_format},
    {"--backend", set_backend},
    {"--dtype", set_dtypes},
    {"--layout", set_layouts},
    {"--repetitions", set_repetitions},
    {"--min-time-ms", set_min_time},
    {"--threads", set_threads},
    {"--max-spread", set_max_spread},
    {"--attempts", set_attempts},
};

}  // namespace

bool parse_command_options(int argc, char** argv, int first, CommandOptions* out, std::string* error) {
  for (int i = first; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "-h" || arg == "--help") {
      out->help = true;
      continue;
    }
    if (arg == "--force") {
      out->force = true;
      continue;
    }
    if (arg == "--fusion" || arg == "--layers" || arg == "--recheck") {
      (arg == "--fusion" ? out->bench.fusion : arg == "--layers" ? out->layers : out->bench.recheck) = true;
      continue;
    }
    const ValueOption* option = nullptr;
    std::string value;
    for (const ValueOption& o : kValueOptions) {
      if (arg == o.name) {
        if (i + 1 >= argc) {
          *error = "option " + std::string(o.name) + " needs a value";
          return false;
        }
        value = argv[++i];
      } else if (arg.size() > o.name.size() && arg.substr(0, o.name.size()) == o.name &&
                 arg[o.name.size()] == '=') {
        value = std::string(arg.substr(o.name.size() + 1));
      } else {
        continue;
      }
      option = &o;
      break;
    }
    if (option) {
      if (!option->set(value, out, error)) return false;
    } else if (!arg.empty() && arg[0] == '-') {
      *error = "unknown option '" + std::string(arg) + "' (see --help)";
      return false;
    } else {
      out->models.emplace_back(arg);
    }
  }
  if (!out->db_url.empty() && !check_db_argument(argc, argv, first, out->db_url, error)) return false;
  if (!out->threads_given) out->measure.threads = lowerbound::default_threads();
  if (out->bench.dtypes.empty()) out->bench.dtypes = {"f32"};
  if (out->bench.layouts.empty()) out->bench.layouts = {"nchw"};
  return true;
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
