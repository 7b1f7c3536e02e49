#include "export/profile_formats.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <unordered_map>
#include <vector>

#include "core/level.h"
#include "export/text_escape.h"

namespace strata::exporter {
namespace {

const char* by_name(profile::ProfileBy by) {
  switch (by) {
    case profile::ProfileBy::kOp:
      return "op";
    case profile::ProfileBy::kLayer:
      return "layer";
    case profile::ProfileBy::kModule:
      return "module";
    case profile::ProfileBy::kLine:
      return "line";
    default:
      return "function";
  }
}

std::string percent(uint64_t n, uint64_t total) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.4f",
                total ? 100.0 * static_cast<double>(n) / static_cast<double>(total) : 0.0);
  return buf;
}

}  // namespace

std::string format_profile_csv(const profile::Profile& p, const profile::ProfileOptions&) {
  std::string out = "rank,name,where,self,total,self_pct,total_pct,parent\n";
  auto line = [&](size_t rank, const std::string& name, const std::string& where, uint64_t self,
                  uint64_t total, const std::string& parent) {
    out += std::to_string(rank) + ",";
    append_csv_field(&out, name);
    out += ",";
    append_csv_field(&out, where);
    out += "," + std::to_string(self) + "," + std::to_string(total) + "," + percent(self, p.samples) + "," +
           percent(total, p.samples) + ",";
    append_csv_field(&out, parent);
    out += "\n";
  };
  size_t rank = 0;
  for (const profile::ProfileRow& r : p.rows) {
    line(++rank, r.name, r.where, r.self, r.total, "");
    for (const auto& [function, n] : r.culprits) line(rank, function, "", n, n, r.name);
  }
  return out;
}

std::string format_profile_json(const profile::Profile& p, const profile::ProfileOptions& options) {
  std::string out =
      "{\"by\":\"" + std::string(by_name(options.by)) + "\",\"samples\":" + std::to_string(p.samples) +
      ",\"period_ns\":" + std::to_string(p.period_ns) + ",\"outside_ops\":" + std::to_string(p.outside_ops) +
      ",\"no_span\":" + std::to_string(p.no_span) + ",\"rows\":[";
  for (size_t i = 0; i < p.rows.size(); ++i) {
    const profile::ProfileRow& r = p.rows[i];
    out += i ? ",\n{\"name\":" : "\n{\"name\":";
    append_json_string(&out, r.name);
    out += ",\"where\":";
    append_json_string(&out, r.where);
    out +=
        ",\"self\":" + std::to_string(r.self) + ",\"total\":" + std::to_string(r.total) + ",\"culprits\":[";
    for (size_t k = 0; k < r.culprits.size(); ++k) {
      out += k ? ",{\"function\":" : "{\"function\":";
      append_json_string(&out, r.culprits[k].first);
      out += ",\"samples\":" + std::to_string(r.culprits[k].second) + "}";
    }
    out += "]}";
  }
  out += "],\"notes\":[";
  for (size_t i = 0; i < p.notes.size(); ++i) {
    if (i) out += ",";
    append_json_string(&out, p.notes[i]);
  }
  out += "]}\n";
  return out;
}

std::string format_profile_speedscope(const trace::Trace& trace, const profile::ProfileOptions& options,
                                      profile::FrameNamer& namer) {
  const trace::SampleData& data = trace.samples;
  std::vector<std::string> frames_json;
  std::unordered_map<std::string, size_t> frame_index;  // by name + file + line
  auto frame = [&](const std::string& name, const std::string& file, uint32_t line) {
    const std::string key = name + '\0' + file + '\0' + std::to_string(line);
    auto [it, inserted] = frame_index.try_emplace(key, frames_json.size());
    if (inserted) {
      std::string f = "{\"name\":";
      append_json_string(&f, name);
      if (!file.empty()) {
        f += ",\"file\":";
        append_json_string(&f, file);
      }
      if (line > 0) f += ",\"line\":" + std::to_string(line);
      frames_json.push_back(f + "}");
    }
    return it->second;
  };
  // The layer spans around each sample's span, outermost first.
  std::map<std::pair<uint16_t, uint64_t>, const SpanRecord*> spans;
  for (const SpanRecord& s : trace.spans) spans[{s.process, s.span_id}] = &s;
  struct Thread {
    std::vector<std::vector<size_t>> stacks;
    std::vector<uint64_t> weights;
  };
  std::map<std::pair<uint16_t, uint32_t>, Thread> threads;
  std::vector<size_t> stack;
  for (const trace::SampleCount& c : data.counts) {
    if (static_cast<int>(c.event) != options.event || c.count == 0) continue;
    stack.clear();
    uint64_t id = c.span_id;
    for (int depth = 0; id != 0 && depth < 256; ++depth) {
      auto it = spans.find({c.process, id});
      if (it == spans.end()) break;
      if (it->second->level == static_cast<uint8_t>(Level::kLayer))
        stack.push_back(frame(profile::kOpFramePrefix + std::string(trace.name(*it->second)), "", 0));
      id = it->second->parent_id;
    }
    std::reverse(stack.begin(), stack.end());
    std::span<const uint32_t> frames = data.stack(c.stack);
    for (size_t i = frames.size(); i-- > 0;) {
      const profile::FrameName& n = namer.name(frames[i]);
      stack.push_back(
          frame(n.python ? n.function : namer.function_key(frames[i]), n.python ? n.file : n.module, n.line));
    }
    Thread& t = threads[{c.process, c.tid}];
    t.stacks.push_back(stack);
    t.weights.push_back(c.count);
  }
  std::string out =
      "{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"exporter\":\"strata\",";
  out += "\"name\":\"strata profile\",\"activeProfileIndex\":0,\"shared\":{\"frames\":[";
  for (size_t i = 0; i < frames_json.size(); ++i) out += (i ? ",\n" : "\n") + frames_json[i];
  out += "]},\"profiles\":[";
  bool first = true;
  for (const auto& [key, t] : threads) {
    uint64_t total = 0;
    for (uint64_t w : t.weights) total += w;
    const int64_t pid = key.first < trace.processes.size() ? trace.processes[key.first].pid : 0;
    out += first ? "\n" : ",\n";
    first = false;
    out += "{\"type\":\"sampled\",\"name\":\"pid " + std::to_string(pid) + " tid " +
           std::to_string(key.second) +
           "\",\"unit\":\"none\",\"startValue\":0,\"endValue\":" + std::to_string(total) + ",\"samples\":[";
    for (size_t i = 0; i < t.stacks.size(); ++i) {
      out += i ? ",[" : "[";
      for (size_t k = 0; k < t.stacks[i].size(); ++k) out += (k ? "," : "") + std::to_string(t.stacks[i][k]);
      out += "]";
    }
    out += "],\"weights\":[";
    for (size_t i = 0; i < t.weights.size(); ++i) out += (i ? "," : "") + std::to_string(t.weights[i]);
    out += "]}";
  }
  out += "]}\n";
  return out;
}

}  // namespace strata::exporter
