#include "export/summary_render.h"

#include <cstdio>
#include <string>
#include <vector>

#include "export/shorten.h"
#include "export/text_escape.h"

namespace strata::exporter {
namespace {

using analysis::Phase;
using analysis::RunSummary;

std::string num(double v, int precision = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", precision, v);
  return buf;
}
double ms(int64_t ns) { return static_cast<double>(ns) / 1e6; }
double pct(int64_t part, int64_t whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0;
}

int64_t main_pid(const trace::Trace& trace, const RunSummary& s) {
  return s.run.main_process >= 0 ? trace.processes[static_cast<size_t>(s.run.main_process)].pid : 0;
}

std::string json_string(std::string_view text) {
  std::string out;
  append_json_string(&out, text);
  return out;
}

// Markdown table cell: terminal-safe, with the characters markdown reads as syntax escaped.
std::string md(std::string_view text) {
  std::string out;
  for (char c : escape_terminal(text)) {
    if (c == '|' || c == '*' || c == '_' || c == '`' || c == '<' || c == '>' || c == '[' || c == ']' ||
        c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

void json_summary(const trace::Trace& trace, const RunSummary& s, std::ostream& out) {
  const auto& bd = s.breakdown;
  const int64_t wall = bd.total.wall_ns;
  out << "{\n  \"workload\": {\"kind\": " << json_string(analysis::workload_kind_name(s.run.kind))
      << ", \"steps\": " << s.run.steps.size()
      << ", \"step_source\": " << json_string(analysis::step_source_name(s.run.step_source))
      << ", \"step_ms\": {\"median\": " << num(s.step_median_ms) << ", \"p90\": " << num(s.step_p90_ms)
      << "}, \"main_pid\": " << main_pid(trace, s) << ", \"init_ms\": " << num(ms(s.run.init_ns()))
      << ", \"teardown_ms\": " << num(ms(s.run.teardown_ns())) << "},\n  \"processes\": [";
  bool first = true;
  for (const analysis::ProcessInfo& p : s.run.processes) {
    if (p.spans == 0) continue;
    out << (first ? "" : ", ") << "{\"pid\": " << trace.processes[p.process].pid
        << ", \"role\": " << json_string(analysis::role_name(p.role)) << ", \"spans\": " << p.spans << "}";
    first = false;
  }
  out << "],\n  \"breakdown\": [";
  for (size_t k = 0; k < analysis::kPhaseCount; ++k) {
    const int64_t v = bd.total.phase_ns[k];
    out << (k ? ", " : "") << "{\"phase\": " << json_string(analysis::phase_name(static_cast<Phase>(k)))
        << ", \"ms\": " << num(ms(v)) << ", \"pct\": " << num(pct(v, wall), 2) << "}";
  }
  const int64_t run_ns = s.run.run_end_ns - s.run.run_start_ns;
  out << ", {\"phase\": \"init\", \"ms\": " << num(ms(s.run.init_ns()))
      << ", \"pct\": " << num(pct(s.run.init_ns(), run_ns), 2) << "}]";
  if (bd.has_device) {
    const auto& d = bd.total.device;
    out << ",\n  \"gpu\": {\"busy_pct\": " << num(pct(d.busy_ns, wall), 2)
        << ", \"kernel_pct\": " << num(pct(d.kernel_ns, wall), 2)
        << ", \"memcpy_pct\": " << num(pct(d.memcpy_ns, wall), 2)
        << ", \"memset_pct\": " << num(pct(d.memset_ns, wall), 2)
        << ", \"idle_pct\": " << num(100.0 - pct(d.busy_ns, wall), 2) << "}";
  }
  out << ",\n  \"bottleneck\": {\"kind\": " << json_string(s.bottleneck.kind)
      << ", \"confidence\": " << json_string(s.bottleneck.confidence)
      << ", \"evidence\": " << json_string(s.bottleneck.evidence) << "},\n  \"findings\": [";
  for (size_t k = 0; k < s.findings.size(); ++k) {
    const analysis::Finding& f = s.findings[k];
    out << (k ? ",\n    " : "\n    ") << "{\"rule\": " << json_string(f.rule)
        << ", \"severity\": " << json_string(f.severity) << ", \"message\": " << json_string(f.message)
        << ", \"evidence\": " << json_string(f.evidence) << "}";
  }
  out << (s.findings.empty() ? "" : "\n  ") << "],\n  \"top_ops\": [";
  for (size_t k = 0; k < s.top_ops.size(); ++k) {
    const analysis::TopOp& op = s.top_ops[k];
    out << (k ? ",\n    " : "\n    ") << "{\"name\": " << json_string(op.name)
        << ", \"self_ms\": " << num(op.self_ms) << ", \"self_pct\": " << num(op.self_pct, 2)
        << ", \"count\": " << op.count;
    if (op.alloc_mb) out << ", \"alloc_mb\": " << num(*op.alloc_mb);
    out << "}";
  }
  out << (s.top_ops.empty() ? "" : "\n  ") << "],\n  \"steps\": [";
  for (size_t k = 0; k < s.run.steps.size() && k < bd.steps.size(); ++k) {
    const analysis::Step& st = s.run.steps[k];
    const analysis::StepTime& t = bd.steps[k];
    out << (k ? ",\n    " : "\n    ") << "{\"index\": " << st.index
        << ", \"start_ms\": " << num(ms(st.start_ns - s.run.run_start_ns))
        << ", \"ms\": " << num(ms(t.wall_ns)) << ", \"eval\": " << (st.eval ? "true" : "false");
    for (size_t p = 0; p < analysis::kPhaseCount; ++p)
      out << ", " << json_string(analysis::phase_name(static_cast<Phase>(p))) << ": "
          << num(ms(t.phase_ns[p]));
    if (bd.has_device) out << ", \"gpu_busy_ms\": " << num(ms(t.device.busy_ns));
    out << "}";
  }
  out << (s.run.steps.empty() ? "" : "\n  ") << "]\n}\n";
}

std::string what_ran(const trace::Trace& trace, const RunSummary& s) {
  std::string line = std::string(analysis::workload_kind_name(s.run.kind)) + ", ";
  if (s.run.has_steps())
    line += std::to_string(s.run.steps.size()) + " steps (" +
            std::string(analysis::step_source_name(s.run.step_source)) + "), step " +
            num(s.step_median_ms, 2) + " ms median, " + num(s.step_p90_ms, 2) + " ms p90";
  else
    line += "no steps found (whole run analysed)";
  return line + "; main pid " + std::to_string(main_pid(trace, s));
}

std::string processes_line(const trace::Trace& trace, const RunSummary& s) {
  std::string line;
  for (analysis::ProcessRole role :
       {analysis::ProcessRole::kMain, analysis::ProcessRole::kRank, analysis::ProcessRole::kDataloaderWorker,
        analysis::ProcessRole::kSubprocess}) {
    std::string pids;
    size_t count = 0;
    for (const analysis::ProcessInfo& p : s.run.processes) {
      if (p.role != role || p.spans == 0) continue;
      if (count < 6) pids += (count ? ", " : "") + std::to_string(trace.processes[p.process].pid);
      ++count;
    }
    if (count == 0) continue;
    if (!line.empty()) line += "; ";
    line += std::to_string(count) + " " + std::string(analysis::role_name(role)) + " (pid " + pids +
            (count > 6 ? ", ..." : "") + ")";
  }
  return line;
}

std::string breakdown_line(const RunSummary& s) {
  std::string line;
  const int64_t wall = s.breakdown.total.wall_ns;
  for (size_t k = 0; k < analysis::kPhaseCount; ++k) {
    const int64_t v = s.breakdown.total.phase_ns[k];
    if (v <= 0) continue;
    line += (line.empty() ? "" : ", ") + std::string(analysis::phase_name(static_cast<Phase>(k))) + " " +
            num(pct(v, wall), 1) + "%";
  }
  return line.empty() ? "no time in steps" : line;
}

void table_summary(const trace::Trace& trace, const RunSummary& s, std::ostream& out, bool markdown) {
  auto text = [&](std::string_view t) { return markdown ? md(t) : escape_terminal(t); };
  const auto& bd = s.breakdown;
  const int64_t wall = bd.total.wall_ns;
  out << (markdown ? "# " : "") << "strata summary: " << what_ran(trace, s) << "\n\n";
  out << (markdown ? "- " : "") << "processes: " << processes_line(trace, s) << "\n";
  if (s.run.has_steps())
    out << (markdown ? "- " : "") << "outside the steps: init " << num(ms(s.run.init_ns()), 1)
        << " ms, teardown " << num(ms(s.run.teardown_ns()), 1) << " ms\n";
  out << "\n"
      << (markdown ? "## " : "") << "Where the step time goes (" << num(ms(wall), 1) << " ms in all)\n\n";
  if (markdown) out << "| phase | ms | % |\n|---|---:|---:|\n";
  for (size_t k = 0; k < analysis::kPhaseCount; ++k) {
    const int64_t v = bd.total.phase_ns[k];
    if (v <= 0) continue;
    const std::string name(analysis::phase_name(static_cast<Phase>(k)));
    const double p = pct(v, wall);
    if (markdown) {
      out << "| " << name << " | " << num(ms(v), 1) << " | " << num(p, 1) << " |\n";
    } else {
      char buf[96];
      std::snprintf(buf, sizeof buf, "  %-14s %10.1f ms %6.1f%%  ", name.c_str(), ms(v), p);
      out << buf << std::string(static_cast<size_t>(p / 2.5 + 0.5), '#') << "\n";
    }
  }
  if (bd.has_device) {
    const auto& d = bd.total.device;
    out << "\n"
        << (markdown ? "- " : "") << "device within the steps: busy " << num(pct(d.busy_ns, wall), 1)
        << "% (kernels " << num(pct(d.kernel_ns, wall), 1) << "%, copies " << num(pct(d.memcpy_ns, wall), 1)
        << "%, memsets " << num(pct(d.memset_ns, wall), 1) << "%), idle "
        << num(100 - pct(d.busy_ns, wall), 1) << "%\n";
  }
  out << "\n"
      << (markdown ? "## " : "") << "Bottleneck: " << s.bottleneck.kind << " (confidence "
      << s.bottleneck.confidence << ")\n"
      << (markdown ? "\n" : "  ") << text(s.bottleneck.evidence) << "\n";
  if (!s.findings.empty()) out << "\n" << (markdown ? "## " : "") << "Findings\n" << (markdown ? "\n" : "");
  for (size_t k = 0; k < s.findings.size(); ++k) {
    const analysis::Finding& f = s.findings[k];
    out << (markdown ? "" : "  ") << k + 1 << ". [" << f.severity << "] " << (markdown ? "**" : "") << f.rule
        << (markdown ? "**" : "") << ": " << text(f.message) << "\n"
        << (markdown ? "   - " : "     ") << text(f.evidence) << "\n";
  }
  if (s.top_ops.empty()) return;
  // On the terminal long names are shortened so that different names never read the same (shorten.h).
  std::vector<std::string> names;
  for (const analysis::TopOp& op : s.top_ops) names.push_back(escape_terminal(op.name));
  size_t shortened = 0;
  if (!markdown) names = shorten_column(names, 56, &shortened);
  out << "\n" << (markdown ? "## " : "") << "Top ops by self time\n\n";
  if (markdown) out << "| op | self ms | self % | count | alloc MB |\n|---|---:|---:|---:|---:|\n";
  for (size_t k = 0; k < s.top_ops.size(); ++k) {
    const analysis::TopOp& op = s.top_ops[k];
    const std::string alloc = op.alloc_mb ? num(*op.alloc_mb, 1) : "";
    if (markdown) {
      out << "| " << md(op.name) << " | " << num(op.self_ms, 2) << " | " << num(op.self_pct, 1) << " | "
          << op.count << " | " << alloc << " |\n";
      continue;
    }
    char buf[192];
    std::snprintf(buf, sizeof buf, "  %-56s %10.2f ms %6.1f%% %8lld %s\n", names[k].c_str(), op.self_ms,
                  op.self_pct, static_cast<long long>(op.count),
                  alloc.empty() ? "" : (alloc + " MB").c_str());
    out << buf;
  }
}

}  // namespace

bool parse_summary_format(std::string_view text, SummaryFormat* format) {
  if (text == "table")
    *format = SummaryFormat::kTable;
  else if (text == "json")
    *format = SummaryFormat::kJson;
  else if (text == "md" || text == "markdown")
    *format = SummaryFormat::kMarkdown;
  else
    return false;
  return true;
}

void render_summary(const trace::Trace& trace, const RunSummary& summary, SummaryFormat format,
                    std::ostream& out) {
  if (format == SummaryFormat::kJson)
    json_summary(trace, summary, out);
  else
    table_summary(trace, summary, out, format == SummaryFormat::kMarkdown);
}

std::string short_summary(const trace::Trace& trace, const RunSummary& s) {
  return "strata: " + escape_terminal(what_ran(trace, s)) + "\nstrata: step time: " + breakdown_line(s) +
         "\nstrata: bottleneck: " + s.bottleneck.kind + " (" + s.bottleneck.confidence +
         "): " + escape_terminal(s.bottleneck.evidence) + "\n";
}

}  // namespace strata::exporter
