#include "profile/profile.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <span>
#include <unordered_set>

#include "core/level.h"
#include "core/utf8.h"

namespace strata::profile {

const FrameName& FrameNamer::name(uint32_t frame_id) {
  auto it = names_.find(frame_id);
  if (it != names_.end()) return it->second;
  FrameName n;
  const trace::SampleFrame& f = trace_.samples.frame(frame_id);
  switch (f.kind) {
    case format::SampleFrameKind::kPython:
      n.python = true;
      n.function = std::string(trace_.strings.get(f.function));
      n.file = std::string(trace_.strings.get(f.file));
      n.line = f.line;
      break;
    case format::SampleFrameKind::kNative: {
      const trace::SampleMapping& m = trace_.samples.mapping(f.mapping);
      const std::string path(trace_.strings.get(m.path));
      n.module = symbolize::Symbolizer::module_name(path);
      // "//anon" without the flag: traces recorded before the sampler knew perf's name for it.
      if ((m.flags & format::kMappingAnonymous) || path == "//anon") {
        // No file behind it: JIT code (oneDNN's kernels, ...) or the vDSO. Named by the process's
        // perf map when it wrote one (sample/jit_map.h), else one row per kind of mapping: offsets
        // in generated code name nothing.
        if (f.function != 0) {
          n.function = std::string(trace_.strings.get(f.function));
          n.module = "jit";
          n.known = true;
        } else {
          n.function = path == "//anon" ? "[anonymous executable memory: JIT code]" : path;
          n.known = false;
        }
      } else {
        symbolize::Symbol s = symbolizer_->lookup(path, m.build_id, f.offset);
        n.function = s.function;
        n.known = s.known;
      }
      break;
    }
    case format::SampleFrameKind::kKernel:
      n.function = "[kernel]";
      break;
    case format::SampleFrameKind::kTruncated:
      n.function = "[stack truncated]";
      n.known = false;
      break;
    case format::SampleFrameKind::kAddress:
    default:
      // In no mapping: a frame-pointer walk through code built without frame pointers read a
      // value that is no return address. One name for all (perf's "[unknown]"), not a row per
      // value.
      n.function = "[unknown]";
      n.known = false;
      break;
  }
  return names_.emplace(frame_id, std::move(n)).first->second;
}

const std::string& FrameNamer::function_key(uint32_t frame_id) {
  auto it = keys_.find(frame_id);
  if (it != keys_.end()) return it->second;
  const FrameName& n = name(frame_id);
  std::string key = n.python ? n.function + " (" + n.file + ")" : n.function;
  return keys_.emplace(frame_id, std::move(key)).first->second;
}

namespace {

struct SpanRef {
  uint32_t name = 0;
  uint64_t parent = 0;
  uint8_t level = 0;
};

using SpanIndex = std::map<std::pair<uint16_t, uint64_t>, SpanRef>;

struct Accumulator {
  ProfileRow row;
  std::map<uint32_t, uint64_t> lines;  // Python: samples per line
  std::map<std::string, uint64_t> culprits;
};

void sort_rows(std::vector<ProfileRow>* rows, bool by_total) {
  std::sort(rows->begin(), rows->end(), [&](const ProfileRow& a, const ProfileRow& b) {
    const uint64_t ka = by_total ? a.total : a.self, kb = by_total ? b.total : b.self;
    if (ka != kb) return ka > kb;
    const uint64_t sa = by_total ? a.self : a.total, sb = by_total ? b.self : b.total;
    if (sa != sb) return sa > sb;
    return a.name < b.name;
  });
}

}  // namespace

bool parse_profile_by(std::string_view text, ProfileBy* by) {
  static const std::pair<const char*, ProfileBy> kNames[] = {{"function", ProfileBy::kFunction}, {"op", ProfileBy::kOp},
                                                             {"layer", ProfileBy::kLayer}, {"module", ProfileBy::kModule},
                                                             {"line", ProfileBy::kLine}};
  for (const auto& [name, value] : kNames)
    if (text == name) {
      *by = value;
      return true;
    }
  return false;
}

const std::string& FrameNamer::module_key(uint32_t frame_id) {
  auto it = module_keys_.find(frame_id);
  if (it != module_keys_.end()) return it->second;
  const FrameName& n = name(frame_id);
  std::string key = n.python ? n.file : !n.module.empty() ? n.module : n.function;
  return module_keys_.emplace(frame_id, std::move(key)).first->second;
}

const std::string& FrameNamer::line_key(uint32_t frame_id) {
  auto it = line_keys_.find(frame_id);
  if (it != line_keys_.end()) return it->second;
  const FrameName& n = name(frame_id);
  std::string key = n.python ? n.function + " (" + n.file + ":" + std::to_string(n.line) + ")" : function_key(frame_id);
  return line_keys_.emplace(frame_id, std::move(key)).first->second;
}

namespace {

// Names of the layer-level spans around `span_id` (itself included), innermost first.
std::vector<std::string> layer_spans_at(const trace::Trace& trace, const SpanIndex& spans, uint16_t process,
                                        uint64_t span_id) {
  std::vector<std::string> chain;  // innermost first
  for (int depth = 0; span_id != 0 && depth < 256; ++depth) {
    auto it = spans.find({process, span_id});
    if (it == spans.end()) break;
    if (it->second.level == static_cast<uint8_t>(Level::kLayer)) chain.emplace_back(trace.strings.get(it->second.name));
    span_id = it->second.parent;
  }
  return chain;
}

SpanIndex index_spans(const trace::Trace& trace) {
  SpanIndex spans;
  for (const SpanRecord& s : trace.spans) spans[{s.process, s.span_id}] = {s.name, s.parent_id, s.level};
  return spans;
}

}  // namespace

Profile build_profile(const trace::Trace& trace, const ProfileOptions& options, FrameNamer& namer) {
  Profile p;
  const trace::SampleData& data = trace.samples;
  if (!data.config.empty()) p.period_ns = data.period_ns(data.config.begin()->first);
  std::map<std::string, Accumulator> rows;
  const bool by_span = options.by == ProfileBy::kOp || options.by == ProfileBy::kLayer;
  const SpanIndex spans = by_span ? index_spans(trace) : SpanIndex{};
  auto key_of = [&](uint32_t frame) -> const std::string& {
    switch (options.by) {
      case ProfileBy::kModule: return namer.module_key(frame);
      case ProfileBy::kLine: return namer.line_key(frame);
      default: return namer.function_key(frame);
    }
  };
  std::unordered_set<std::string> seen;
  for (const trace::SampleCount& c : data.counts) {
    if (static_cast<int>(c.event) != options.event) continue;
    p.samples += c.count;
    std::span<const uint32_t> stack = data.stack(c.stack);
    if (c.span_id == 0) p.no_span += c.count;
    if (!by_span) {
      seen.clear();
      for (size_t i = 0; i < stack.size(); ++i) {
        const std::string& key = key_of(stack[i]);
        Accumulator& a = rows[key];
        if (i == 0) a.row.self += c.count;
        if (seen.insert(key).second) {
          a.row.total += c.count;
          const FrameName& n = namer.name(stack[i]);
          if (n.python && options.by == ProfileBy::kFunction) a.lines[n.line] += c.count;
          else if (a.row.where.empty() && options.by != ProfileBy::kModule) a.row.where = n.python ? "" : n.module;
        }
      }
      continue;
    }
    // By op: the innermost layer-level span around the sample's span, every op above it in total;
    // by layer: the outermost one only.
    const std::string leaf = stack.empty() ? std::string("[no stack]") : namer.function_key(stack[0]);
    std::vector<std::string> chain = layer_spans_at(trace, spans, c.process, c.span_id);
    if (options.by == ProfileBy::kLayer && chain.size() > 1) chain.erase(chain.begin(), chain.end() - 1);
    seen.clear();
    for (size_t i = 0; i < chain.size(); ++i) {
      Accumulator& a = rows[chain[i]];
      if (i == 0) {
        a.row.self += c.count;
        a.culprits[leaf] += c.count;
      }
      if (seen.insert(chain[i]).second) a.row.total += c.count;
    }
    if (chain.empty()) {
      p.outside_ops += c.count;
      Accumulator& a = rows[kOutsideAnyOp];
      a.row.self += c.count;
      a.row.total += c.count;
      a.culprits[leaf] += c.count;
    }
  }
  for (auto& [name, a] : rows) {
    a.row.name = name;
    if (!a.lines.empty()) {
      auto hottest = std::max_element(a.lines.begin(), a.lines.end(),
                                      [](const auto& x, const auto& y) { return x.second < y.second; });
      const size_t open = name.rfind(" (");
      std::string file = open == std::string::npos ? "" : name.substr(open + 2, name.size() - open - 3);
      a.row.where = file + ":" + std::to_string(hottest->first);
    }
    std::vector<std::pair<std::string, uint64_t>> culprits(a.culprits.begin(), a.culprits.end());
    std::sort(culprits.begin(), culprits.end(), [](const auto& x, const auto& y) {
      return x.second != y.second ? x.second > y.second : x.first < y.first;
    });
    if (culprits.size() > options.culprits) culprits.resize(options.culprits);
    a.row.culprits = std::move(culprits);
    p.rows.push_back(std::move(a.row));
  }
  sort_rows(&p.rows, by_span);
  if (data.counts.empty())
    p.notes.push_back(data.timeline.empty()
                          ? "the trace holds no CPU samples: record with `strata record --sample` (or profile a "
                            "running process with `strata attach PID`)"
                          : "the trace holds sample times but no counts");
  if (options.by == ProfileBy::kLine)
    p.notes.push_back("native frames are grouped by function: their line tables are not read (Python frames by line)");
  if (by_span && p.samples > 0 && p.no_span == p.samples)
    p.notes.push_back("no sample was taken inside a span: record with --level layer to attribute samples to ops");
  if (data.undefined_references > 0)
    p.notes.push_back(std::to_string(data.undefined_references) +
                      " sample references to undefined frames/stacks (a damaged trace): shown as unknown");
  return p;
}

namespace {
const char* const kByNames[] = {"function", "op", "layer", "module", "line"};
}  // namespace

std::string format_profile(const Profile& p, const ProfileOptions& options) {
  std::string out;
  char line[512];
  const double total = p.samples > 0 ? static_cast<double>(p.samples) : 1.0;
  std::snprintf(line, sizeof(line), "%llu samples", static_cast<unsigned long long>(p.samples));
  out += line;
  if (p.period_ns > 0) {
    std::snprintf(line, sizeof(line), " (%.3f s of CPU time)", static_cast<double>(p.samples * p.period_ns) / 1e9);
    out += line;
  }
  out += "\n";
  std::snprintf(line, sizeof(line), "%7s %7s %10s  %s\n", "self%", "total%", "samples", kByNames[static_cast<int>(options.by)]);
  out += line;
  size_t shown = 0;
  for (const ProfileRow& r : p.rows) {
    if (shown++ >= options.top) break;
    std::snprintf(line, sizeof(line), "%7.2f %7.2f %10llu  ", 100.0 * static_cast<double>(r.self) / total,
                  100.0 * static_cast<double>(r.total) / total, static_cast<unsigned long long>(r.self));
    out += line + r.name;
    if (!r.where.empty()) out += "  [" + r.where + "]";
    out += "\n";
    for (const auto& [function, n] : r.culprits) {
      std::snprintf(line, sizeof(line), "%7s %7.2f %10llu    ", "", 100.0 * static_cast<double>(n) / total,
                    static_cast<unsigned long long>(n));
      out += line + function + "\n";
    }
  }
  if (p.rows.size() > options.top)
    out += "(" + std::to_string(p.rows.size() - options.top) + " more rows; --top N shows more)\n";
  for (const std::string& note : p.notes) out += "note: " + note + "\n";
  return out;
}

std::string format_collapsed(const trace::Trace& trace, const ProfileOptions& options, FrameNamer& namer) {
  const trace::SampleData& data = trace.samples;
  const SpanIndex spans = index_spans(trace);
  // Folded stacks are text that flame-graph tools decode as UTF-8: a name that is not (read from a
  // process while it changed, or from a symbol table) has its stray bytes shown as U+FFFD.
  auto clean = [](const std::string& raw) {
    std::string name;
    core::append_valid_utf8(&name, raw);
    for (char& ch : name)
      if (ch == ';') ch = ':';
      else if (ch == '\n' || ch == '\r') ch = ' ';
    return name;
  };
  std::map<std::string, uint64_t> folded;
  std::string line;
  for (const trace::SampleCount& c : data.counts) {
    if (static_cast<int>(c.event) != options.event || c.count == 0) continue;
    line.clear();
    const std::vector<std::string> chain = layer_spans_at(trace, spans, c.process, c.span_id);
    for (size_t i = chain.size(); i-- > 0;) line += kOpFramePrefix + clean(chain[i]) + ";";
    std::span<const uint32_t> stack = data.stack(c.stack);
    for (size_t i = stack.size(); i-- > 0;) line += clean(namer.function_key(stack[i])) + ";";
    if (line.empty()) line = "[no stack];";
    line.pop_back();
    folded[line] += c.count;
  }
  std::string out;
  for (const auto& [stack, count] : folded) out += stack + " " + std::to_string(count) + "\n";
  return out;
}

}  // namespace strata::profile
