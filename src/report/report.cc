#include "report/report.h"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "analysis/device_peaks.h"
#include "analysis/pipeline.h"
#include "analysis/run_summary.h"
#include "core/level.h"
#include "export/summary_render.h"
#include "export/table_render.h"
#include "export/text_escape.h"
#include "profile/profile.h"
#include "report/flame.h"
#include "report/report_assets.h"
#include "report/sha256.h"
#include "symbolize/symbolizer.h"
#include "trace/trace_summary.h"

namespace strata::report {
namespace {

constexpr std::string_view kAnalyses[] = {
    "model_table",     "layer_sequence",  "layer_type_aggregate", "layer_table", "layer_device_split",
    "kernels_by_name", "kernel_roofline", "layer_roofline",       "iterations",  "rank_breakdown",
};

void append_key(std::string* out, std::string_view key) {
  exporter::append_json_string(out, key);
  *out += ':';
}

void append_number(std::string* out, double v) {
  std::ostringstream s;
  s.precision(6);
  s << v;
  *out += s.str();
}

// The overview: what was run, for how long, at which levels, in which processes, what was lost.
std::string overview_json(const trace::Trace& trace, const ReportOptions& options) {
  const trace::TraceSummary summary = trace::summarize(trace);
  std::string out = "{";
  append_key(&out, "inputs");
  out += '[';
  for (size_t i = 0; i < options.inputs.size(); ++i) {
    if (i) out += ',';
    exporter::append_json_string(&out, options.inputs[i]);
  }
  out += "],";
  std::string command;
  if (auto c = summary.record.get("command"))
    command = std::string(*c);
  else if (!summary.processes.empty())
    command = summary.processes.front().command_line;
  append_key(&out, "command");
  exporter::append_json_string(&out, command);
  out += ',';
  // Wall time: what `strata record` measured, else the span extent.
  auto wall_ns = summary.record.get_int("wall_ns");
  append_key(&out, "wall_ms");
  append_number(&out, static_cast<double>(wall_ns.value_or(summary.last_ns - summary.first_ns)) / 1e6);
  out += ',';
  append_key(&out, "wall_source");
  exporter::append_json_string(&out, wall_ns ? "strata record" : "first span start to last span end");
  out +=
      ",\"spans\":" + std::to_string(summary.spans) + ",\"samples\":" + std::to_string(summary.samples) + ",";
  append_key(&out, "levels");
  out += '[';
  bool first = true;
  for (const auto& [level, count] : summary.spans_per_level) {
    out += first ? "[" : ",[";
    first = false;
    exporter::append_json_string(&out, level_name(level));
    out += ',' + std::to_string(count) + ']';
  }
  out += "],";
  append_key(&out, "processes");
  out += '[';
  for (size_t i = 0; i < summary.processes.size(); ++i) {
    const trace::Process& p = summary.processes[i];
    if (i) out += ',';
    out += "{\"pid\":" + std::to_string(p.pid) + ",\"spans\":" + std::to_string(p.span_count) + ",";
    append_key(&out, "host");
    exporter::append_json_string(&out, p.host);
    out += ',';
    append_key(&out, "rank");
    auto rank = p.properties.get("rank");
    exporter::append_json_string(&out, rank ? *rank : "");
    out += ',';
    append_key(&out, "command");
    exporter::append_json_string(&out, p.command_line);
    out += ',';
    append_key(&out, "level");
    exporter::append_json_string(&out, p.level_gate ? level_name(*p.level_gate) : "");
    out += '}';
  }
  out += "],";
  append_key(&out, "drops");
  out += '[';
  first = true;
  for (const auto& [cause, count] : summary.drops) {
    out += first ? "[" : ",[";
    first = false;
    exporter::append_json_string(&out, cause);
    out += ',' + std::to_string(count) + ']';
  }
  out += "],";
  append_key(&out, "warnings");
  out += '[';
  for (size_t i = 0; i < trace.warnings.size() && i < 50; ++i) {
    if (i) out += ',';
    exporter::append_json_string(&out, trace.warnings[i]);
  }
  out += "]}";
  return out;
}

// One analysis's result as {"missing": text|null, "tables": {name: table}}: the JSON rendering of
// `strata analyze --format json`, each table cut to max_rows.
std::string analysis_json(table::Result result, size_t max_rows) {
  std::string out = "{";
  append_key(&out, "missing");
  if (result.missing_input)
    exporter::append_json_string(&out, *result.missing_input);
  else
    out += "null";
  out += ',';
  for (table::Table& t : result.tables) {
    if (t.rows.size() <= max_rows) continue;
    t.notes.push_back("the report holds the first " + std::to_string(max_rows) + " of " +
                      std::to_string(t.rows.size()) +
                      " rows: `strata analyze --analysis ... --format csv` gives them all");
    t.rows.resize(max_rows);
  }
  std::ostringstream tables;
  exporter::render_tables(result.tables, exporter::TableFormat::kJson, tables);
  append_key(&out, "tables");
  std::string text = tables.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  out += text.empty() ? "{}" : text;
  out += '}';
  return out;
}

bool has_device_spans(const trace::Trace& trace) {
  return std::any_of(trace.spans.begin(), trace.spans.end(),
                     [](const SpanRecord& s) { return s.level == static_cast<uint8_t>(Level::kDevice); });
}

// The ceilings the roofline tables were computed against (the same resolution: --param
// peak_gflops/peak_gbps, device=KEY, or the device named in the trace).
std::string peaks_json(const trace::Trace& trace, const analysis::Params& params) {
  std::string why;
  auto peaks = analysis::resolve_peaks(trace, params, !has_device_spans(trace), &why);
  std::string out = "{";
  if (peaks) {
    out += "\"gflops\":";
    append_number(&out, peaks->gflops);
    out += ",\"gbps\":";
    append_number(&out, peaks->gbps);
    out += ',';
    append_key(&out, "description");
    exporter::append_json_string(&out, peaks->description);
  } else {
    append_key(&out, "missing");
    exporter::append_json_string(&out, why);
  }
  out += '}';
  return out;
}

std::string flame_json(const trace::Trace& trace, const ReportOptions& options) {
  if (trace.samples.counts.empty())
    return "{\"missing\":\"no CPU samples in the trace: record with `strata record --sample` (or sample a "
           "running "
           "process with `strata attach`)\"}";
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  profile::ProfileOptions profile_options;
  const std::string collapsed = profile::format_collapsed(trace, profile_options, namer);
  FlameGraph graph = build_flame_graph(collapsed, options.max_flame_nodes, options.min_flame_share);
  if (graph.samples == 0) return "{\"missing\":\"the trace's samples have no CPU-time event (event 0)\"}";
  return flame_graph_json(graph);
}

// `strata summary --format json` of the trace, as that command writes it (the same two calls).
std::string summary_json(const trace::Trace& trace, const analysis::RunSummary& summary) {
  std::ostringstream out;
  exporter::render_summary(trace, summary, exporter::SummaryFormat::kJson, out);
  std::string text = out.str();
  while (!text.empty() && text.back() == '\n') text.pop_back();
  return text;
}

// The step whose duration is the median's (the earliest of equals), -1 without steps.
int representative_step(const analysis::RunSummary& summary) {
  const auto& steps = summary.run.steps;
  if (steps.empty()) return -1;
  std::vector<size_t> order(steps.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return steps[a].duration_ns() < steps[b].duration_ns(); });
  return static_cast<int>(order[(order.size() - 1) / 2]);
}

// One representative step of the main process as a timeline: its spans (host work by thread and
// depth, device work by stream), each [start_ms, end_ms, lane, name] from the step's start, clipped to
// it. The shallowest spans are kept first, up to max_spans; the rest are counted.
std::string step_timeline_json(const trace::Trace& trace, const analysis::RunSummary& summary,
                               size_t max_spans) {
  const int k = representative_step(summary);
  if (k < 0 || summary.run.main_process < 0)
    return "{\"missing\":\"no steps found: the timeline shows one step of the main process\"}";
  const analysis::Step& step = summary.run.steps[static_cast<size_t>(k)];
  const uint16_t main = static_cast<uint16_t>(summary.run.main_process);
  const trace::SpanTree& tree = trace.tree();
  std::vector<uint32_t> inside;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const bool interval = s.kind == static_cast<uint8_t>(SpanKind::kSpan) ||
                          s.kind == static_cast<uint8_t>(SpanKind::kLaunch) ||
                          s.kind == static_cast<uint8_t>(SpanKind::kExecution);
    if (s.process == main && interval && s.end_ns > step.start_ns && s.start_ns < step.end_ns)
      inside.push_back(static_cast<uint32_t>(i));
  }
  std::stable_sort(inside.begin(), inside.end(),
                   [&](uint32_t a, uint32_t b) { return tree.depth(a) < tree.depth(b); });
  const size_t left_out = inside.size() > max_spans ? inside.size() - max_spans : 0;
  inside.resize(inside.size() - left_out);
  std::sort(inside.begin(), inside.end());
  std::map<std::pair<uint64_t, uint32_t>, size_t> lanes;  // (device flag | tid, depth) -> lane
  std::map<uint32_t, size_t> names;
  for (uint32_t i : inside) {
    const SpanRecord& s = trace.spans[i];
    const bool device = s.level == static_cast<uint8_t>(Level::kDevice);
    lanes.emplace(std::make_pair((device ? 1ull << 63 : 0) | s.tid, device ? 0 : tree.depth(i)), 0);
    names.emplace(s.name, 0);
  }
  std::string out = "{\"step\":" + std::to_string(step.index) + ",\"start_ms\":";
  append_number(&out, static_cast<double>(step.start_ns - summary.run.run_start_ns) / 1e6);
  out += ",\"ms\":";
  append_number(&out, static_cast<double>(step.duration_ns()) / 1e6);
  out += ",\"left_out\":" + std::to_string(left_out) + ",\"lanes\":[";
  size_t lane = 0;
  for (auto& [key, index] : lanes) {
    index = lane;
    const bool device = key.first >> 63;
    out += lane++ ? ",\"" : "\"";
    out += (device ? "device stream " : "thread ") + std::to_string(key.first & ~(1ull << 63)) +
           (device ? "" : " depth " + std::to_string(key.second)) + "\"";
  }
  out += "],\"names\":[";
  size_t name = 0;
  for (auto& [id, index] : names) {
    index = name;
    if (name++) out += ',';
    exporter::append_json_string(&out, trace.strings.get(id));
  }
  out += "],\"spans\":[";
  for (size_t n = 0; n < inside.size(); ++n) {
    const SpanRecord& s = trace.spans[inside[n]];
    const bool device = s.level == static_cast<uint8_t>(Level::kDevice);
    out += n ? ",[" : "[";
    append_number(&out, static_cast<double>(std::max(s.start_ns, step.start_ns) - step.start_ns) / 1e6);
    out += ',';
    append_number(&out, static_cast<double>(std::min(s.end_ns, step.end_ns) - step.start_ns) / 1e6);
    out += ',' +
           std::to_string(lanes[{(device ? 1ull << 63 : 0) | s.tid, device ? 0 : tree.depth(inside[n])}]) +
           ',' + std::to_string(names[s.name]) + ']';
  }
  out += "]}";
  return out;
}

table::Result lower_bound_result(const ReportOptions& options) {
  if (options.lower_bound) return *options.lower_bound;
  table::Result none;
  none.missing_input =
      "no model given: `strata report TRACE --model MODEL.onnx --db PERF.sqlite --threads N -o REPORT.html` "
      "compares the run with the model's sequential and parallel lower bounds (the database that `strata "
      "bench run MODEL.onnx` fills; N: the run's thread count)";
  return none;
}

// JSON inside <script type="application/json">: '<' only occurs inside strings, where \u003c
// means the same, so no "</script>" or "<!--" of a span name can end the element.
void append_script_safe(std::string* out, std::string_view json) {
  for (char c : json) {
    if (c == '<')
      *out += "\\u003c";
    else
      *out += c;
  }
}

std::string html_escape(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string content_security_policy(std::string_view echarts_script, std::string_view app_script) {
  // Nothing leaves the page and nothing but its own two scripts runs in it: no fetch, image, font,
  // frame, form or base URL from anywhere (the file works offline), and no inline handler or script
  // that a name from a trace could carry, even were it ever written into the page as markup. The
  // JSON data element is not a script (type application/json) and needs no hash. Styles stay
  // inline-allowed: ECharts writes style attributes into its tooltips' markup, and a style can
  // neither run code nor, with every fetch refused, send anything anywhere.
  const std::string scripts = csp_script_hash(echarts_script) + " " + csp_script_hash(app_script);
  return "default-src 'none'; script-src " + scripts +
         "; style-src 'unsafe-inline'; img-src data:; connect-src 'none'; form-action 'none'; "
         "base-uri 'none'";
}

std::span<const std::string_view> report_analyses() { return kAnalyses; }

bool have_echarts() { return !assets::echarts_js().empty(); }

bool write_report(const trace::Trace& trace, const ReportOptions& options, std::ostream& out,
                  std::string* error) {
  if (!have_echarts()) {
    *error =
        "this strata was built without ECharts (report/node_modules was not installed when it was built): "
        "run "
        "scripts/setup.sh (or `npm ci` in report/) and rebuild";
    return false;
  }
  std::vector<const analysis::Analysis*> chosen;
  for (std::string_view name : kAnalyses)
    if (const analysis::Analysis* a = analysis::find_analysis(name)) chosen.push_back(a);
  // The answer first: `strata summary`'s JSON, made by the same library calls as that command; its
  // recognition of the run is the analyses' workload's too (recognized once).
  const analysis::RunSummary summary = analysis::summarize_run(trace, trace.tree());
  analysis::PipelineResult pipeline = analysis::run_pipeline(trace, chosen, options.params, &summary.run);

  std::string data = "{";
  const std::string title =
      !options.title.empty()
          ? options.title
          : "Strata report: " + (options.inputs.empty() ? std::string("trace") : options.inputs.front());
  append_key(&data, "title");
  exporter::append_json_string(&data, title);
  data += ',';
  append_key(&data, "generator");
  exporter::append_json_string(&data, options.generator);
  data += ",\"max_rows\":" + std::to_string(options.max_rows) + ",";
  append_key(&data, "overview");
  data += overview_json(trace, options);
  data += ',';
  append_key(&data, "summary");
  data += summary_json(trace, summary);
  data += ",\n";
  append_key(&data, "step_timeline");
  data += step_timeline_json(trace, summary, options.max_timeline_spans);
  data += ",\n";
  append_key(&data, "analyses");
  data += '{';
  for (size_t i = 0; i < pipeline.results.size(); ++i) {
    if (i) data += ",\n";
    append_key(&data, pipeline.results[i].first->name());
    data += analysis_json(std::move(pipeline.results[i].second), options.max_rows);
  }
  if (!pipeline.results.empty()) data += ",\n";
  append_key(&data, kLowerBoundAnalysis);
  data += analysis_json(lower_bound_result(options), options.max_rows);
  data += "},";
  append_key(&data, "peaks");
  data += peaks_json(trace, options.params);
  data += ',';
  append_key(&data, "flame");
  data += flame_json(trace, options);
  data += '}';

  // The scripts exactly as they stand in the page: the policy allows these texts and no other script.
  const std::string echarts_script = "\n" + std::string(assets::echarts_js()) + "\n";
  const std::string app_script = "\n" + std::string(assets::report_app_js()) + "\n";
  std::string html;
  html.reserve(assets::echarts_js().size() + data.size() + 65536);
  html += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += "<meta http-equiv=\"Content-Security-Policy\" content=\"" +
          content_security_policy(echarts_script, app_script) + "\">\n";
  html += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>";
  html += html_escape(title);
  html += "</title>\n<style>\n";
  html += assets::report_css();
  html += "</style>\n</head>\n<body>\n<main id=\"report\"></main>\n<script>";
  html += echarts_script;
  html += "</script>\n<script id=\"strata-data\" type=\"application/json\">";
  append_script_safe(&html, data);
  html += "</script>\n<script>";
  html += app_script;
  html += "</script>\n</body>\n</html>\n";
  out.write(html.data(), static_cast<std::streamsize>(html.size()));
  if (!out) {
    *error = "write failed";
    return false;
  }
  return true;
}

}  // namespace strata::report
