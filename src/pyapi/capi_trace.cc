// The trace side of the C API: open any format through the reader registry, then hand spans and
// attributes over as columns and the small per-process facts as one JSON document.
#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/run_summary.h"
#include "core/level.h"
#include "core/stats.h"
#include "export/summary_render.h"
#include "export/text_escape.h"
#include "format/input_file.h"
#include "pyapi/capi.h"
#include "pyapi/capi_internal.h"
#include "trace/span_tree.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"
#include "trace/tracks.h"
#ifdef STRATA_HAVE_IMPORT
#include "import/importer.h"
#endif

namespace strata::pyapi {
namespace {

thread_local std::string last_error;

// Distinct span names in order of first use: the categories of the Python side's name column.
void build_name_codes(strata_capi_trace* t) {
  const trace::Trace& trace = t->trace;
  t->name_code_of_string.assign(trace.strings.size(), -1);
  for (const SpanRecord& s : trace.spans) {
    if (s.name >= t->name_code_of_string.size()) t->name_code_of_string.resize(s.name + 1, -1);
    int32_t& code = t->name_code_of_string[s.name];
    if (code < 0) {
      code = static_cast<int32_t>(t->span_names.offsets.size() - 1);
      t->span_names.add(trace.strings.get(s.name));
    }
  }
}

// Each process's rank in a multi-rank job (the tracks table reads the process property), -1: none.
std::vector<int64_t> rank_of_process(const trace::Trace& trace) {
  std::vector<int64_t> rank(trace.processes.size(), -1);
  for (const trace::Track& track : trace.tracks().tracks())
    if (track.key.process < rank.size()) rank[track.key.process] = track.rank;
  return rank;
}

void json_key(std::string* out, std::string_view key) {
  exporter::append_json_string(out, key);
  *out += ':';
}

void json_field(std::string* out, std::string_view key, std::string_view value) {
  json_key(out, key);
  exporter::append_json_string(out, value);
  *out += ',';
}

void json_field(std::string* out, std::string_view key, int64_t value) {
  json_key(out, key);
  *out += std::to_string(value);
  *out += ',';
}

void close_object(std::string* out, char close) {
  if (!out->empty() && out->back() == ',') out->pop_back();
  *out += close;
}

void append_stats(std::string* out, std::string_view scope, int64_t process, int64_t pid,
                  const stats::StatSet& set) {
  for (const auto& [stat, value] : set.nonzero()) {
    const stats::StatInfo& info = stats::info(stat);
    *out += '{';
    json_field(out, "scope", scope);
    json_field(out, "process", process);
    json_field(out, "pid", pid);
    json_field(out, "name", info.name);
    json_field(out, "value", static_cast<int64_t>(value));
    json_field(out, "severity", stats::severity_name(info.severity));
    json_field(out, "source", stats::source_name(info.source));
    json_field(out, "description", info.description);
    close_object(out, '}');
    *out += ',';
  }
  for (const auto& [key, value] : set.unregistered()) {
    if (value == 0) continue;
    *out += '{';
    json_field(out, "scope", scope);
    json_field(out, "process", process);
    json_field(out, "pid", pid);
    json_field(out, "name", key);
    json_field(out, "value", static_cast<int64_t>(value));
    json_field(out, "severity", "unregistered");
    json_field(out, "source", "");
    json_field(out, "description", "a counter this version of Strata does not know");
    close_object(out, '}');
    *out += ',';
  }
}

void append_properties(std::string* out, const format::Properties& properties) {
  *out += '{';
  for (const auto& [key, value] : properties.entries()) json_field(out, key, value);
  close_object(out, '}');
}

std::string info_json(const trace::Trace& trace) {
  const std::vector<int64_t> rank = rank_of_process(trace);
  std::string out = "{\"processes\":[";
  for (size_t i = 0; i < trace.processes.size(); ++i) {
    const trace::Process& p = trace.processes[i];
    out += '{';
    json_field(&out, "process", static_cast<int64_t>(i));
    json_field(&out, "pid", p.pid);
    json_field(&out, "ppid", p.ppid);
    json_field(&out, "rank", rank[i]);
    json_field(&out, "host", p.host);
    json_field(&out, "command_line", p.command_line);
    json_field(&out, "span_count", static_cast<int64_t>(p.span_count));
    json_field(&out, "threads", static_cast<int64_t>(p.thread_names.size()));
    json_field(&out, "trace_id", p.trace_id);
    json_field(&out, "parent_span_id", p.parent_span_id);
    json_field(&out, "start_realtime_ns", p.start_realtime_ns);
    json_field(&out, "start_monotonic_ns", p.start_monotonic_ns);
    json_field(&out, "level_gate", p.level_gate ? std::string_view(level_name(*p.level_gate)) : "");
    json_field(&out, "ended_cleanly", p.ended_cleanly ? 1 : 0);
    json_key(&out, "properties");
    append_properties(&out, p.properties);
    out += "},";
  }
  close_object(&out, ']');
  out += ",\"threads\":[";
  for (size_t i = 0; i < trace.processes.size(); ++i)
    for (const auto& [tid, name] : trace.processes[i].thread_names) {
      out += '{';
      json_field(&out, "process", static_cast<int64_t>(i));
      json_field(&out, "pid", trace.processes[i].pid);
      json_field(&out, "tid", tid);
      json_field(&out, "name", name);
      close_object(&out, '}');
      out += ',';
    }
  close_object(&out, ']');
  out += ",\"stats\":[";
  append_stats(&out, "trace", -1, -1, trace.stats);
  for (size_t i = 0; i < trace.processes.size(); ++i)
    append_stats(&out, "process", static_cast<int64_t>(i), trace.processes[i].pid, trace.processes[i].stats);
  close_object(&out, ']');
  out += ",\"record\":";
  append_properties(&out, trace.record);
  out += ",\"warnings\":[";
  for (const std::string& w : trace.warnings) {
    exporter::append_json_string(&out, w);
    out += ',';
  }
  close_object(&out, ']');
  out += '}';
  return out;
}

// Names of the enum values of the span columns, made once (the C API hands out pointers to them).
const std::array<std::array<std::string, 256>, 4>& enum_names() {
  static const auto names = [] {
    std::array<std::array<std::string, 256>, 4> n;
    for (int v = 0; v < 256; ++v) {
      const auto u = static_cast<uint8_t>(v);
      n[0][v] = level_name(u);
      n[1][v] = kind_name(u);
      n[2][v] = activity_name(u);
      if (v <= static_cast<int>(trace::LinkKind::kAmbiguous))
        n[3][v] = std::string(trace::link_kind_name(static_cast<trace::LinkKind>(v)));
    }
    return n;
  }();
  return names;
}

}  // namespace

void set_error(std::string message) { last_error = std::move(message); }
void clear_error() { last_error.clear(); }

}  // namespace strata::pyapi

using strata::pyapi::set_error;

extern "C" {

int strata_capi_version(void) { return STRATA_CAPI_VERSION; }
const char* strata_capi_last_error(void) { return strata::pyapi::last_error.c_str(); }

strata_capi_trace* strata_capi_open(const char* const* paths, size_t n, const char* format) {
  strata::pyapi::clear_error();
  if (n == 0) {
    set_error("no input file");
    return nullptr;
  }
  try {
    std::vector<std::string> inputs(paths, paths + n);
    std::string error;
    for (const std::string& path : inputs)
      if (!strata::format::check_input_path(path, true, &error)) {
        set_error(error);
        return nullptr;
      }
#ifdef STRATA_HAVE_IMPORT
    strata::import::register_readers();
#endif
    strata::trace::OpenOptions options;
    if (format != nullptr && *format != '\0') options.format = format;
    auto t = std::make_unique<strata_capi_trace>();
    if (!strata::trace::open_traces(inputs, &t->trace, &error, options)) {
      set_error(error);
      return nullptr;
    }
    strata::pyapi::build_name_codes(t.get());
    return t.release();
  } catch (const std::exception& e) {  // bad_alloc on a trace larger than memory, above all
    set_error(std::string("cannot open the trace: ") + e.what());
    return nullptr;
  }
}

void strata_capi_free(strata_capi_trace* trace) { delete trace; }

int strata_capi_save(const strata_capi_trace* t, const char* path, int zstd_level) {
  strata::pyapi::clear_error();
  if (path == nullptr || *path == '\0') {
    set_error("strata_capi_save: no output path");
    return 0;
  }
  try {
    std::string error;
    if (!strata::trace::save_trace(t->trace, path, &error, zstd_level)) {
      set_error(error);
      return 0;
    }
    return 1;
  } catch (const std::exception& e) {
    set_error(std::string(path) + ": cannot save the trace: " + e.what());
    return 0;
  }
}

uint64_t strata_capi_span_count(const strata_capi_trace* t) { return t->trace.spans.size(); }
uint64_t strata_capi_attr_count(const strata_capi_trace* t) { return t->trace.attrs.size(); }

int strata_capi_fill_spans(const strata_capi_trace* t, const strata_capi_span_columns* c) {
  const strata::trace::Trace& trace = t->trace;
  const strata::trace::SpanTree& tree = trace.tree();
  const std::vector<int64_t> rank = strata::pyapi::rank_of_process(trace);
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const strata::SpanRecord& s = trace.spans[i];
    const int32_t parent = tree.parent(i);
    if (c->id) c->id[i] = s.span_id;
    if (c->parent) c->parent[i] = parent;
    if (c->parent_id) c->parent_id[i] = parent < 0 ? 0 : trace.spans[static_cast<size_t>(parent)].span_id;
    if (c->depth) c->depth[i] = tree.depth(i);
    if (c->link) c->link[i] = static_cast<uint8_t>(tree.link(i));
    if (c->level) c->level[i] = s.level;
    if (c->kind) c->kind[i] = s.kind;
    if (c->activity) c->activity[i] = s.activity;
    if (c->name) c->name[i] = t->name_code_of_string[s.name];
    if (c->process) c->process[i] = s.process;
    if (c->pid) c->pid[i] = trace.processes[s.process].pid;
    if (c->tid) c->tid[i] = s.tid;
    if (c->stream) c->stream[i] = s.stream == strata::kNoStream ? -1 : int64_t{s.stream};
    if (c->device) c->device[i] = s.device == strata::kNoDevice ? -1 : int32_t{s.device};
    if (c->rank) c->rank[i] = rank[s.process];
    if (c->start_ns) c->start_ns[i] = s.start_ns;
    if (c->end_ns) c->end_ns[i] = s.end_ns;
    if (c->duration_ns) c->duration_ns[i] = s.duration_ns();
    if (c->correlation_id) c->correlation_id[i] = s.correlation_id;
    if (c->flags) c->flags[i] = s.flags;
  }
  return 1;
}

strata_capi_strings strata_capi_span_names(const strata_capi_trace* t) { return t->span_names.view(); }

int strata_capi_fill_attrs(strata_capi_trace* t, const strata_capi_attr_columns* c) {
  const strata::trace::Trace& trace = t->trace;
  std::lock_guard<std::mutex> lock(t->lazy_mu);
  // Keys and string values share one dense table (a string id's code, -1 until used), filled by the
  // first call and unchanged after it: a later call (another thread's) never moves its buffers.
  std::vector<int32_t>& code = t->attr_code_of_string;
  auto code_of = [&](uint32_t id) {
    if (id >= code.size()) code.resize(id + 1, -1);
    if (code[id] < 0) {
      code[id] = static_cast<int32_t>(t->attr_strings.offsets.size() - 1);
      t->attr_strings.add(trace.strings.get(id));
    }
    return code[id];
  };
  size_t row = 0;
  for (size_t i = 0; i < trace.spans.size(); ++i)
    for (const strata::AttrRecord& a : trace.attributes(i)) {
      const auto type = static_cast<strata::AttrType>(a.type);
      if (c->span) c->span[row] = static_cast<uint32_t>(i);
      if (c->key) c->key[row] = code_of(a.key);
      if (c->type) c->type[row] = a.type;
      if (c->int_value) c->int_value[row] = type == strata::AttrType::kInt ? a.value.i : 0;
      if (c->double_value)
        c->double_value[row] = type == strata::AttrType::kDouble || type == strata::AttrType::kMetric
                                   ? a.value.d
                                   : std::numeric_limits<double>::quiet_NaN();
      if (c->text)
        c->text[row] = type == strata::AttrType::kString ? code_of(static_cast<uint32_t>(a.value.u)) : -1;
      ++row;
    }
  return 1;
}

strata_capi_strings strata_capi_attr_strings(const strata_capi_trace* t) { return t->attr_strings.view(); }

const char* strata_capi_enum_name(int which, int value) {
  if (which < 0 || which > 3 || value < 0 || value > 255) return "";
  return strata::pyapi::enum_names()[which][value].c_str();
}

const char* strata_capi_info_json(strata_capi_trace* t) {
  std::lock_guard<std::mutex> lock(t->lazy_mu);
  if (t->info_json.empty()) t->info_json = strata::pyapi::info_json(t->trace);
  return t->info_json.c_str();
}

const char* strata_capi_summary_json(strata_capi_trace* t) {
  std::lock_guard<std::mutex> lock(t->lazy_mu);
  if (t->summary_json.empty()) {
    std::ostringstream out;
    const strata::analysis::RunSummary summary = strata::analysis::summarize_run(t->trace, t->trace.tree());
    strata::exporter::render_summary(t->trace, summary, strata::exporter::SummaryFormat::kJson, out);
    t->summary_json = out.str();
  }
  return t->summary_json.c_str();
}

}  // extern "C"
