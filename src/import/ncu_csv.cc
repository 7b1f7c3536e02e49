#include "import/ncu_csv.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>

#include "core/attr_keys.h"
#include "core/level.h"
#include "format/input_file.h"
#include "import/sass_flops.h"
#include "trace/trace_reader.h"

namespace strata::import {
namespace {

constexpr size_t kMaxInput = size_t{1} << 30;  // 1 GiB of CSV
constexpr size_t kMaxFields = 100000;

// One CSV record starting at `at` (a physical line, or more when a quoted field holds a newline).
// Fields are unquoted ("" -> "). False when a quote is never closed.
bool read_record(std::string_view text, size_t* at, std::vector<std::string>* fields, size_t* lines) {
  fields->clear();
  std::string field;
  size_t p = *at;
  bool quoted = false, was_quoted = false;
  *lines = 1;
  for (; p < text.size(); ++p) {
    const char c = text[p];
    if (quoted) {
      if (c == '"') {
        if (p + 1 < text.size() && text[p + 1] == '"') {
          field += '"';
          ++p;
        } else {
          quoted = false;
        }
      } else {
        if (c == '\n') ++*lines;
        field += c;
      }
      continue;
    }
    if (c == '"' && !was_quoted && field.empty()) {
      quoted = was_quoted = true;
    } else if (c == ',') {
      fields->push_back(std::move(field));
      field.clear();
      was_quoted = false;
      if (fields->size() > kMaxFields) return false;
    } else if (c == '\n') {
      break;
    } else if (c != '\r') {
      field += c;
    }
  }
  if (quoted) return false;
  fields->push_back(std::move(field));
  *at = p < text.size() ? p + 1 : p;
  return true;
}

std::string_view next_line(std::string_view text, size_t* at) {
  const size_t end = text.find('\n', *at);
  std::string_view line =
      text.substr(*at, end == std::string_view::npos ? std::string_view::npos : end - *at);
  *at = end == std::string_view::npos ? text.size() : end + 1;
  return line;
}

// "1,234.5" / "406240" / "12.3 %" -> number (and a unit written in the cell). False for text.
bool parse_number(std::string_view cell, double* value, std::string* cell_unit) {
  std::string digits;
  size_t p = 0;
  while (p < cell.size() && cell[p] == ' ') ++p;
  for (; p < cell.size(); ++p) {
    const char c = cell[p];
    if (c == ',') continue;
    if ((c >= '0' && c <= '9') || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E')
      digits += c;
    else
      break;
  }
  if (digits.empty()) return false;
  std::string_view rest = cell.substr(p);
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  while (!rest.empty() && rest.back() == ' ') rest.remove_suffix(1);
  if (!rest.empty() && rest != "%" && (p == 0 || cell[p - 1] != ' ')) return false;  // "10.0x"
  char* end = nullptr;
  const double v = std::strtod(digits.c_str(), &end);
  if (end != digits.c_str() + digits.size() || !std::isfinite(v)) return false;
  *value = v;
  if (cell_unit) *cell_unit = std::string(rest);
  return true;
}

// An integer cell ("371693", "7"): false unless a whole number within +-2^53 (casting a larger
// double to int64 is undefined).
bool parse_integer(std::string_view cell, int64_t* out) {
  double v = 0;
  if (!parse_number(cell, &v, nullptr) || v != std::floor(v) || std::fabs(v) > 9007199254740992.0)
    return false;
  *out = static_cast<int64_t>(v);
  return true;
}

// Scale of a unit to ns (times) or bytes; 0 when it is neither.
double time_scale(std::string_view unit) {
  if (unit == "ns" || unit == "nsecond") return 1;
  if (unit == "us" || unit == "usecond") return 1e3;
  if (unit == "ms" || unit == "msecond") return 1e6;
  if (unit == "s" || unit == "second") return 1e9;
  return 0;
}
double byte_scale(std::string_view unit) {
  if (unit == "byte" || unit == "B") return 1;
  if (unit == "Kbyte" || unit == "KB" || unit == "kbyte") return 1e3;
  if (unit == "Mbyte" || unit == "MB") return 1e6;
  if (unit == "Gbyte" || unit == "GB") return 1e9;
  if (unit == "Tbyte" || unit == "TB") return 1e12;
  return 0;
}

// "name [unit]" -> name, unit.
void split_header_unit(std::string* name, std::string* unit) {
  if (name->size() > 3 && name->back() == ']') {
    const size_t open = name->rfind(" [");
    if (open != std::string::npos) {
      *unit = name->substr(open + 2, name->size() - open - 3);
      name->resize(open);
    }
  }
}

// "(384, 1, 1)" -> {384, 1, 1}; left as it is unless three integers.
void parse_dim3(std::string_view text, int64_t out[3]) {
  int64_t v[3] = {};
  size_t at = 0;
  for (int n = 0; n < 3; ++n) {
    while (at < text.size() && (text[at] == '(' || text[at] == ' ' || text[at] == ',')) ++at;
    const size_t begin = at;
    while (at < text.size() && text[at] >= '0' && text[at] <= '9' && at - begin < 12)
      v[n] = v[n] * 10 + (text[at++] - '0');
    if (at == begin) return;
  }
  while (at < text.size() && text[at] == ' ') ++at;
  if (at + 1 != text.size() || text[at] != ')') return;
  std::copy(v, v + 3, out);
}

// Columns that describe the kernel, not a metric (raw page: every other column is a metric).
bool is_identity_column(std::string_view c) {
  static constexpr std::string_view kColumns[] = {"ID",
                                                  "Process ID",
                                                  "Process Name",
                                                  "Host Name",
                                                  "Kernel Name",
                                                  "Kernel Time",
                                                  "Context",
                                                  "Stream",
                                                  "Block Size",
                                                  "Grid Size",
                                                  "Device",
                                                  "CC",
                                                  "Section Name",
                                                  "Metric Name",
                                                  "Metric Unit",
                                                  "Metric Value",
                                                  "Rule Name",
                                                  "Rule Type",
                                                  "Rule Description",
                                                  "Estimated Speedup Type",
                                                  "Estimated Speedup",
                                                  "Function Name"};
  return std::find(std::begin(kColumns), std::end(kColumns), c) != std::end(kColumns);
}

struct Columns {
  std::map<std::string, size_t, std::less<>> index;
  std::vector<std::string> names, units;
  size_t get(std::string_view name) const {
    auto it = index.find(name);
    return it == index.end() ? SIZE_MAX : it->second;
  }
};

class Parser {
 public:
  Parser(std::string_view text, const std::string& source, NcuProfile* out)
      : text_(text), source_(source), out_(out) {}

  bool run(std::string* error) {
    size_t at = 0, line_no = 0;
    // Before the header: ==PROF== lines and the program's output.
    while (at < text_.size()) {
      const size_t start = at;
      std::string_view line = next_line(text_, &at);
      ++line_no;
      if (looks_like_ncu_csv(line)) {
        at = start;
        break;
      }
      ++out_->other_lines;
    }
    if (at >= text_.size()) {
      *error = source_ +
               ": no Nsight Compute CSV header (a row starting \"ID\" with a \"Kernel Name\" column); " +
               "pass the output of ncu --csv (details page or --page raw)";
      return false;
    }
    std::vector<std::string> fields;
    size_t lines = 0;
    if (!read_record(text_, &at, &fields, &lines))
      return fail(line_no, "header", "unterminated quote", error);
    for (std::string& f : fields) {
      std::string unit;
      split_header_unit(&f, &unit);
      cols_.index.emplace(f, cols_.names.size());
      cols_.names.push_back(f);
      cols_.units.push_back(unit);
    }
    while (!cols_.names.empty() && cols_.names.back().empty()) cols_.names.pop_back();  // trailing comma
    out_->raw_page = cols_.get("Metric Name") == SIZE_MAX;
    if (!out_->raw_page && (cols_.get("Metric Value") == SIZE_MAX))
      return fail(line_no, "header", "a \"Metric Name\" column without \"Metric Value\"", error);
    line_no += lines;
    return rows(at, line_no, error);
  }

 private:
  bool fail(size_t line, std::string_view field, std::string_view what, std::string* error) const {
    // A quoted cell can hold a newline (found by the fuzzer): the error stays one line, the cell's
    // control characters written as escapes.
    std::string text;
    for (const char c : what) {
      if (c == '\n')
        text += "\\n";
      else if (static_cast<unsigned char>(c) < 0x20)
        text += ' ';
      else
        text += c;
    }
    *error = source_ + ": line " + std::to_string(line) + ", field " + std::string(field) + ": " + text +
             "; pass the unmodified output of ncu --csv (details page or --page raw)";
    return false;
  }

  std::string cell(const std::vector<std::string>& f, std::string_view column) const {
    const size_t c = cols_.get(column);
    return c < f.size() ? f[c] : std::string();
  }

  bool rows(size_t at, size_t line_no, std::string* error) {
    std::vector<std::string> fields;
    size_t at_line = line_no;
    bool first_row = true;
    while (at < text_.size()) {
      const size_t start = at;
      std::string_view line = next_line(text_, &at);
      if (line.empty() || line.front() != '"') {  // ==PROF== lines, program output after the table
        ++out_->other_lines;
        ++at_line;
        continue;
      }
      at = start;
      size_t lines = 0;
      if (!read_record(text_, &at, &fields, &lines))
        return fail(at_line, "(record)", "unterminated quote", error);
      while (fields.size() > cols_.names.size() && fields.back().empty()) fields.pop_back();
      if (fields.size() > cols_.names.size())
        return fail(at_line, "(record)",
                    std::to_string(fields.size()) + " fields, more than the header's " +
                        std::to_string(cols_.names.size()),
                    error);
      const bool units_row = out_->raw_page && first_row && fields[0].empty();
      first_row = false;
      if (units_row) {
        for (size_t c = 0; c < fields.size(); ++c)
          if (!fields[c].empty()) cols_.units[c] = fields[c];
      } else if (!row(fields, at_line, error)) {
        return false;
      }
      at_line += lines;
    }
    std::sort(out_->kernels.begin(), out_->kernels.end(),
              [](const NcuKernel& a, const NcuKernel& b) { return a.id < b.id; });
    if (out_->kernels.empty()) return fail(at_line, "(end)", "a header but no kernel rows", error);
    return true;
  }

  NcuKernel& kernel_of(const std::vector<std::string>& f, int64_t id, size_t line) {
    auto it = by_id_.find(id);
    if (it != by_id_.end()) return out_->kernels[it->second];
    NcuKernel k;
    k.id = id;
    k.line = line;
    k.name = cell(f, "Kernel Name");
    k.process_name = cell(f, "Process Name");
    parse_integer(cell(f, "Process ID"), &k.pid);
    parse_integer(cell(f, "Device"), &k.device);
    parse_integer(cell(f, "Stream"), &k.stream);
    parse_integer(cell(f, "Context"), &k.context);
    parse_dim3(cell(f, "Block Size"), k.block);
    parse_dim3(cell(f, "Grid Size"), k.grid);
    by_id_[id] = out_->kernels.size();
    out_->kernels.push_back(std::move(k));
    return out_->kernels.back();
  }

  static NcuMetric metric(std::string name, std::string unit, const std::string& text) {
    NcuMetric m{std::move(name), std::move(unit), text, false, 0};
    std::string cell_unit;
    if (parse_number(text, &m.value, &cell_unit)) {
      m.numeric = true;
      if (m.unit.empty()) m.unit = cell_unit;
      m.text.clear();
    }
    return m;
  }

  bool row(const std::vector<std::string>& f, size_t line, std::string* error) {
    int64_t id = 0;
    const std::string id_text = cell(f, "ID");
    if (!parse_integer(id_text, &id) || id < 0)
      return fail(line, "ID", "'" + id_text.substr(0, 40) + "' is not a kernel ID", error);
    if (cell(f, "Kernel Name").empty()) return fail(line, "Kernel Name", "empty", error);
    NcuKernel& k = kernel_of(f, id, line);
    if (!out_->raw_page) {
      const std::string name = cell(f, "Metric Name");
      if (name.empty()) {
        const std::string rule = cell(f, "Rule Name");
        if (rule.empty()) return fail(line, "Metric Name", "empty, and no Rule Name either", error);
        k.metrics.push_back({"rule." + rule, "", cell(f, "Rule Type"), false, 0});
        ++out_->rule_rows;
        return true;
      }
      k.metrics.push_back(metric(name, cell(f, "Metric Unit"), cell(f, "Metric Value")));
      ++out_->metric_rows;
      return true;
    }
    for (size_t c = 0; c < cols_.names.size(); ++c) {
      if (is_identity_column(cols_.names[c]) || cols_.names[c].empty()) continue;
      k.metrics.push_back(metric(cols_.names[c], cols_.units[c], c < f.size() ? f[c] : std::string()));
      ++out_->metric_rows;
    }
    return true;
  }

  std::string_view text_;
  const std::string& source_;
  NcuProfile* out_;
  Columns cols_;
  std::map<int64_t, size_t> by_id_;
};

// Canonical facts of one kernel's metrics.
struct Facts {
  double duration_ns = -1, dram_read = -1, dram_write = -1, occupancy = -1, registers = -1, tensor = -1;
  SassFlopCounter flops, sp, dp, hp;
};

Facts facts_of(const NcuKernel& k) {
  Facts f;
  for (const NcuMetric& m : k.metrics) {
    if (!m.numeric) continue;
    const std::string_view n = m.name;
    if (n == "Duration" || n == "gpu__time_duration.sum") {
      if (double s = time_scale(m.unit); s > 0) f.duration_ns = m.value * s;
    } else if (n == "dram__bytes_read.sum") {
      if (double s = byte_scale(m.unit.empty() ? "byte" : m.unit); s > 0) f.dram_read = m.value * s;
    } else if (n == "dram__bytes_write.sum") {
      if (double s = byte_scale(m.unit.empty() ? "byte" : m.unit); s > 0) f.dram_write = m.value * s;
    } else if (n == "Achieved Occupancy" || n == "sm__warps_active.avg.pct_of_peak_sustained_active") {
      f.occupancy = m.value;
    } else if (n == "Registers Per Thread" || n == "launch__registers_per_thread") {
      f.registers = m.value;
    } else if (n.starts_with("sm__inst_executed_pipe_tensor") && n.ends_with(".sum")) {
      f.tensor = std::max(f.tensor, 0.0) + m.value;
    } else if (f.flops.add(n, m.value)) {
      constexpr std::string_view kPrefix = "smsp__sass_thread_inst_executed_op_";
      const char precision = n[kPrefix.size()];
      (precision == 'f' ? f.sp : precision == 'd' ? f.dp : f.hp).add(n, m.value);
    }
  }
  return f;
}

}  // namespace

bool looks_like_ncu_csv(std::string_view head) {
  return head.substr(0, 5) == "\"ID\"," &&
         head.substr(0, 4096).find("\"Kernel Name\"") != std::string_view::npos;
}

bool parse_ncu_csv(std::string_view text, const std::string& source, NcuProfile* out, std::string* error) {
  *out = {};
  return Parser(text, source, out).run(error);
}

std::vector<AttrRecord> NcuKernel::canonical(trace::Trace& t) const {
  namespace k = attr_keys;
  const Facts f = facts_of(*this);
  std::vector<AttrRecord> out;
  if (f.flops.flops()) out.push_back(t.metric(k::kFlops, *f.flops.flops()));
  if (f.sp.flops()) out.push_back(t.metric(k::kFlopsSingle, *f.sp.flops()));
  if (f.dp.flops()) out.push_back(t.metric(k::kFlopsDouble, *f.dp.flops()));
  if (f.hp.flops()) out.push_back(t.metric(k::kFlopsHalf, *f.hp.flops()));
  if (f.tensor >= 0) out.push_back(t.metric(k::kTensorInstructions, f.tensor));
  if (f.dram_read >= 0) out.push_back(t.metric(k::kDramReadBytes, f.dram_read));
  if (f.dram_write >= 0) out.push_back(t.metric(k::kDramWriteBytes, f.dram_write));
  if (f.occupancy >= 0) out.push_back(t.metric(k::kAchievedOccupancy, f.occupancy));
  if (grid[0] >= 0)
    for (auto [key, v] : {std::pair{k::kGridX, grid[0]}, {k::kGridY, grid[1]}, {k::kGridZ, grid[2]}})
      out.push_back(t.int_attr(key, v));
  if (block[0] >= 0)
    for (auto [key, v] : {std::pair{k::kBlockX, block[0]}, {k::kBlockY, block[1]}, {k::kBlockZ, block[2]}})
      out.push_back(t.int_attr(key, v));
  if (f.registers >= 0 && f.registers < 1e9)
    out.push_back(t.int_attr(k::kRegistersPerThread, static_cast<int64_t>(f.registers)));
  for (const NcuMetric& m : metrics) {
    const std::string key = "ncu." + m.name + (m.unit.empty() ? "" : " [" + m.unit + "]");
    out.push_back(m.numeric ? t.metric(key, m.value) : t.string_attr(key, m.text));
  }
  return out;
}

void add_ncu_spans(const NcuProfile& profile, const std::string& source, trace::Trace* trace) {
  std::map<int64_t, uint16_t> process_of_pid;
  std::map<int64_t, uint64_t> kernels_of_pid;
  for (const NcuKernel& k : profile.kernels) ++kernels_of_pid[k.pid];
  for (const NcuKernel& k : profile.kernels) {
    if (process_of_pid.count(k.pid)) continue;
    trace::Process p;
    p.pid = k.pid;
    p.ended_cleanly = true;  // a complete file, as the JSON importers' processes
    p.stream_id = (uint64_t{0x1C} << 56) | (trace->processes.size() + 1);
    p.span_count = kernels_of_pid[k.pid];
    p.command_line = k.process_name;
    p.properties.set("writer", "strata import");
    p.properties.set("import.format", "ncu");
    p.properties.set("import.source", source);
    p.properties.set("import.ncu_page", profile.raw_page ? "raw" : "details");
    p.properties.set("import.note", "ncu gives no start times: kernels are laid back to back in ID order");
    p.stats.add(stats::Stat::kImportNcuKernels, kernels_of_pid[k.pid]);
    p.stats.add(stats::Stat::kImportSpansWritten, kernels_of_pid[k.pid]);
    if (process_of_pid.empty()) {  // the file's counts, once
      p.stats.add(stats::Stat::kImportNcuMetricRows, profile.metric_rows);
      p.stats.add(stats::Stat::kImportNcuRuleRows, profile.rule_rows);
      p.stats.add(stats::Stat::kImportNcuOtherLines, profile.other_lines);
      p.stats.add(stats::Stat::kImportEventsRead, profile.metric_rows + profile.rule_rows);
    }
    process_of_pid[k.pid] = trace->add_process(std::move(p));
  }
  int64_t clock = 0;
  for (const NcuKernel& k : profile.kernels) {
    SpanRecord s;
    s.start_ns = clock;
    const double d = facts_of(k).duration_ns;
    s.end_ns = add_time_ns(clock, d > 0 ? clamp_to_time_ns(d) : 0);
    clock = s.end_ns;
    s.name = trace->strings.intern(k.name);
    s.level = static_cast<uint8_t>(Level::kDevice);
    s.kind = static_cast<uint8_t>(SpanKind::kExecution);
    s.activity = static_cast<uint8_t>(kernel_activity(k.name));
    s.clock = static_cast<uint8_t>(ClockDomain::kImported);
    s.process = process_of_pid[k.pid];
    if (k.device >= 0 && k.device < kNoDevice) s.device = static_cast<uint16_t>(k.device);
    if (k.stream >= 0 && k.stream < kNoStream) s.stream = static_cast<uint32_t>(k.stream);
    s.tid = s.stream == kNoStream ? 0 : s.stream;
    std::vector<AttrRecord> attrs = k.canonical(*trace);
    attrs.push_back(trace->int_attr("ncu.id", k.id));
    trace->add_span(s, attrs);
  }
}

std::string_view kernel_base_name(std::string_view name) {
  // "void ns::kern<int, 4>(float*, int)" -> "kern"; "kern" stays. An anonymous namespace is no
  // argument list: "(anonymous namespace)" (GCC's demangler: Kineto, Strata) and "<unnamed>" (ncu).
  size_t end = std::string_view::npos;
  for (size_t i = 0; i < name.size() && end == std::string_view::npos; ++i) {
    if (name.substr(i).starts_with("(anonymous namespace)"))
      i += std::string_view("(anonymous namespace)").size() - 1;
    else if (name.substr(i).starts_with("<unnamed>"))
      i += std::string_view("<unnamed>").size() - 1;
    else if (name[i] == '(' || name[i] == '<')
      end = i;
  }
  std::string_view head = name.substr(0, end == std::string_view::npos ? name.size() : end);
  while (!head.empty() && head.back() == ' ') head.remove_suffix(1);
  const size_t space = head.rfind(' ');
  if (space != std::string_view::npos) head = head.substr(space + 1);  // the return type
  const size_t scope = head.rfind("::");
  if (scope != std::string_view::npos) head = head.substr(scope + 2);
  return head.empty() ? name : head;
}

namespace {

// Trace kernels in launch order: by correlation id when every kernel has one (CUPTI and Kineto
// number launches in order; concurrent streams can start kernels out of launch order), else by start.
std::vector<size_t> kernels_in_launch_order(const trace::Trace& trace) {
  std::vector<size_t> kernels;
  bool all_correlated = true;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const ActivityType a = trace.spans[i].activity_type();
    if (a != ActivityType::kKernel && a != ActivityType::kCollective) continue;
    kernels.push_back(i);
    all_correlated = all_correlated && trace.spans[i].correlation_id != 0;
  }
  std::stable_sort(kernels.begin(), kernels.end(), [&](size_t a, size_t b) {
    return all_correlated ? trace.spans[a].correlation_id < trace.spans[b].correlation_id
                          : trace.spans[a].start_ns < trace.spans[b].start_ns;
  });
  return kernels;
}

// ncu numbers the kernels it profiled in launch order from the program's start; a trace of the same
// program from its start has the same sequence. The two demangle differently (ncu: "native::<unnamed>::",
// Kineto and Strata: "at::native::(anonymous namespace)::"), so names are compared by base name, and
// position decides among the many instantiations of one template (vectorized_elementwise_kernel). Used
// when at least 90% of the profiled kernels agree by position; otherwise the trace is another run or
// a part of one, and kernels are matched by name and ordinal instead.
std::vector<size_t> positional_matches(const NcuProfile& profile, const trace::Trace& trace,
                                       const std::vector<size_t>& kernels) {
  std::vector<size_t> match(profile.kernels.size(), SIZE_MAX);
  size_t agree = 0;
  for (size_t n = 0; n < profile.kernels.size() && n < kernels.size(); ++n) {
    if (kernel_base_name(profile.kernels[n].name) == kernel_base_name(trace.name(trace.spans[kernels[n]]))) {
      match[n] = kernels[n];
      ++agree;
    }
  }
  if (profile.kernels.empty() || agree * 10 < profile.kernels.size() * 9)
    match.assign(profile.kernels.size(), SIZE_MAX);
  return match;
}

}  // namespace

NcuJoinCounts join_ncu_metrics(const NcuProfile& profile, trace::Trace* trace) {
  NcuJoinCounts counts;
  const std::vector<size_t> kernels = kernels_in_launch_order(*trace);
  const std::vector<size_t> by_position = positional_matches(profile, *trace, kernels);
  const bool positional =
      std::any_of(by_position.begin(), by_position.end(), [](size_t m) { return m != SIZE_MAX; });
  std::map<std::string, std::vector<size_t>, std::less<>> by_name, by_base;
  for (size_t i : kernels) {
    const std::string_view name = trace->name(trace->spans[i]);
    by_name[std::string(name)].push_back(i);
    by_base[std::string(kernel_base_name(name))].push_back(i);
  }
  std::map<std::string, size_t, std::less<>> seen_name, seen_base;
  std::vector<bool> joined(trace->spans.size(), false);
  for (size_t n = 0; n < profile.kernels.size(); ++n) {  // ID order
    const NcuKernel& k = profile.kernels[n];
    size_t span = SIZE_MAX;
    if (positional) {
      span = by_position[n];
    } else if (auto it = by_name.find(k.name); it != by_name.end()) {
      const size_t ordinal = seen_name[k.name]++;
      if (ordinal < it->second.size()) span = it->second[ordinal];
    } else {
      const std::string base(kernel_base_name(k.name));
      auto b = by_base.find(base);
      const size_t ordinal = seen_base[base]++;
      if (b != by_base.end() && ordinal < b->second.size()) span = b->second[ordinal];
    }
    if (span == SIZE_MAX || joined[span]) {
      ++counts.ncu_unmatched;
      continue;
    }
    joined[span] = true;
    ++counts.matched;
    // The span's attributes move to the end of the attribute area with the measured ones added.
    std::vector<AttrRecord> attrs(trace->attributes(span).begin(), trace->attributes(span).end());
    std::vector<AttrRecord> measured = k.canonical(*trace);
    measured.push_back(trace->int_attr("ncu.id", k.id));
    // A measured canonical fact replaces an estimate the trace had under the same key.
    for (const AttrRecord& m : measured)
      std::erase_if(attrs, [&](const AttrRecord& a) { return a.key == m.key; });
    attrs.insert(attrs.end(), measured.begin(), measured.end());
    if (attrs.size() > UINT16_MAX) attrs.resize(UINT16_MAX);
    trace->attr_begin[span] = static_cast<uint32_t>(trace->attrs.size());
    trace->attrs.insert(trace->attrs.end(), attrs.begin(), attrs.end());
    trace->attr_begin.back() = static_cast<uint32_t>(trace->attrs.size());
    trace->spans[span].attr_count = static_cast<uint16_t>(attrs.size());
  }
  counts.trace_without_metrics = kernels.size() - counts.matched;
  if (!trace->processes.empty()) {
    stats::StatSet& s = trace->processes[0].stats;
    s.add(stats::Stat::kImportNcuJoinMatched, counts.matched);
    s.add(stats::Stat::kImportNcuJoinUnmatched, counts.ncu_unmatched);
    s.add(stats::Stat::kImportNcuJoinTraceKernelsWithout, counts.trace_without_metrics);
  }
  trace->invalidate_structure();
  return counts;
}

namespace {

class NcuReader final : public trace::TraceReader {
 public:
  std::string_view name() const override { return "ncu"; }
  std::string_view description() const override {
    return "Nsight Compute CSV (ncu --csv, details page or --page raw; ==PROF== and program output lines "
           "skipped)";
  }
  int probe(const trace::ProbeInput& input) const override {
    if (input.is_directory) return 0;
    // The header may follow ==PROF== lines and program output: look for it on any line of the head.
    size_t at = 0;
    while (at < input.head.size()) {
      if (looks_like_ncu_csv(input.head.substr(at))) return 50;
      const size_t nl = input.head.find('\n', at);
      if (nl == std::string_view::npos) break;
      at = nl + 1;
    }
    return 0;
  }
  uint64_t memory_estimate(const trace::ProbeInput& input) const override { return input.size * 3; }
  bool read(const trace::ProbeInput& input, std::string_view, trace::TraceBuilder& builder,
            std::string* error) const override {
    std::string bytes;
    if (!format::read_regular_file(input.path, kMaxInput, "split the ncu output", &bytes, error))
      return false;
    builder.count(stats::Stat::kLoadFiles);
    builder.count(stats::Stat::kLoadBytes, bytes.size());
    NcuProfile profile;
    if (!parse_ncu_csv(bytes, input.path, &profile, error)) return false;
    const size_t first = builder.trace().processes.size();
    add_ncu_spans(profile, input.path, &builder.trace());
    for (size_t p = first; p < builder.trace().processes.size(); ++p)
      builder.number_spans_of(static_cast<uint16_t>(p));
    return true;
  }
};

}  // namespace

void register_ncu_reader() { trace::register_reader(std::make_unique<NcuReader>()); }

}  // namespace strata::import
