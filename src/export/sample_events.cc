#include "export/sample_events.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <unordered_map>

#include "export/text_escape.h"
#include "profile/profile.h"

namespace strata::exporter {

int64_t first_sample_ns(const trace::Trace& trace) {
  int64_t first = INT64_MAX;
  for (const trace::SamplePoint& p : trace.samples.timeline) first = std::min(first, p.time_ns);
  return first;
}

void append_sample_events(const trace::Trace& trace, int64_t origin_ns,
                          const std::set<std::pair<int64_t, int64_t>>& tracks, std::string* out, bool* first,
                          const std::function<void()>& maybe_flush) {
  const trace::SampleData& data = trace.samples;
  if (data.timeline.empty()) return;
  auto sep = [&]() {
    if (!*first) *out += ",\n";
    *first = false;
  };
  symbolize::Symbolizer symbolizer;
  profile::FrameNamer namer(trace, &symbolizer);
  std::unordered_map<uint32_t, std::string> folded;  // stack id -> "root;...;leaf"
  std::set<std::pair<int64_t, int64_t>> named = tracks;
  char num[64];
  for (const trace::SamplePoint& p : data.timeline) {
    const int64_t pid = p.process < trace.processes.size() ? trace.processes[p.process].pid : 0;
    if (named.insert({pid, p.tid}).second) {
      std::string name = "thread " + std::to_string(p.tid);
      if (p.process < trace.processes.size()) {
        const auto& names = trace.processes[p.process].thread_names;
        if (auto it = names.find(p.tid); it != names.end()) name = it->second;
        auto config = data.config.find(p.process);
        if (config != data.config.end())
          if (auto comm = config->second.get("thread." + std::to_string(p.tid))) name = std::string(*comm);
      }
      sep();
      *out += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" + std::to_string(pid) + ",\"tid\":" +
              std::to_string(p.tid) + ",\"args\":{\"name\":";
      append_json_string(out, name);
      *out += "}}";
    }
    std::span<const uint32_t> stack = data.stack(p.stack);
    auto [it, inserted] = folded.try_emplace(p.stack);
    if (inserted) {
      for (size_t k = stack.size(); k-- > 0;) {
        it->second += namer.name(stack[k]).function;
        if (k > 0) it->second += ";";
      }
    }
    sep();
    *out += "{\"ph\":\"i\",\"s\":\"t\",\"cat\":\"cpu_sample\",\"name\":";
    append_json_string(out, stack.empty() ? std::string("sample") : namer.name(stack[0]).function);
    *out += ",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(p.tid) + ",\"ts\":";
    const int64_t rel = p.time_ns - origin_ns;
    std::snprintf(num, sizeof(num), "%s%" PRId64 ".%03" PRId64, rel < 0 ? "-" : "", std::abs(rel) / 1000,
                  std::abs(rel) % 1000);
    *out += num;
    *out += ",\"args\":{\"stack\":";
    append_json_string(out, it->second);
    if (p.span_id != 0) {
      std::snprintf(num, sizeof(num), "\"%016" PRIx64 "\"", p.span_id);
      *out += ",\"span_id\":";
      *out += num;
    }
    if (p.weight != 1) *out += ",\"weight\":" + std::to_string(p.weight);
    *out += "}}";
    maybe_flush();
  }
}

}  // namespace strata::exporter
