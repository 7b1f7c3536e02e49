#include "export/exporters.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "core/activity_type.h"
#include "core/level.h"
#include "export/sample_events.h"
#include "export/text_escape.h"

namespace strata::exporter {
namespace {

// Output is assembled in a string buffer and written in large pieces.
class Buffered {
 public:
  explicit Buffered(std::ostream& out) : out_(out) { buf_.reserve(1 << 20); }
  ~Buffered() { flush(); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() > (1 << 20)) flush();
  }
  void flush() {
    out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
    buf_.clear();
  }

 private:
  std::ostream& out_;
  std::string buf_;
};

void append_u64(std::string* out, uint64_t v) { *out += std::to_string(v); }
void append_i64(std::string* out, int64_t v) { *out += std::to_string(v); }

void append_us(std::string* out, int64_t ns) {
  char buf[48];
  uint64_t magnitude = ns < 0 ? static_cast<uint64_t>(-(ns + 1)) + 1 : static_cast<uint64_t>(ns);
  std::snprintf(buf, sizeof(buf), "%s%" PRIu64 ".%03" PRIu64, ns < 0 ? "-" : "", magnitude / 1000,
                magnitude % 1000);
  *out += buf;
}

void append_hex(std::string* out, uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "\"0x%016" PRIx64 "\"", v);
  *out += buf;
}

void append_attr_value(const model::Trace& trace, const AttrRecord& a, std::string* out) {
  switch (static_cast<AttrType>(a.type)) {
    case AttrType::kInt:
      append_i64(out, a.value.i);
      return;
    case AttrType::kDouble:
    case AttrType::kMetric: {
      if (a.value.d != a.value.d || a.value.d == std::numeric_limits<double>::infinity() ||
          a.value.d == -std::numeric_limits<double>::infinity()) {
        *out += "null";  // JSON has no NaN/Inf
        return;
      }
      char buf[40];
      std::snprintf(buf, sizeof(buf), "%.17g", a.value.d);
      *out += buf;
      return;
    }
    case AttrType::kString:
      append_json_string(out, trace.strings.get(static_cast<uint32_t>(a.value.u)));
      return;
  }
  *out += "null";
}

// Attributes as JSON object members (without braces); metrics get a "metric." prefix so the two
// kinds stay apart.
void append_attr_members(const model::Trace& trace, size_t index, std::string* out, bool leading_comma) {
  bool first = !leading_comma;
  for (const AttrRecord& a : trace.attributes(index)) {
    if (!first) out->push_back(',');
    first = false;
    std::string key(trace.strings.get(a.key));
    if (a.type == static_cast<uint8_t>(AttrType::kMetric)) key = "metric." + key;
    append_json_string(out, key);
    out->push_back(':');
    append_attr_value(trace, a, out);
  }
}

// A counter sample's args: its numeric attributes only, each a series of the track ("value" for
// Strata's counters; Perfetto names the track "<name> <key>"). Chrome and Perfetto read every arg of
// a "C" event as a number: a string (a memory counter's allocator and device, which its name
// already carries) would be a parse failure there.
void append_counter_series(const model::Trace& trace, size_t index, std::string* out) {
  bool first = true;
  for (const AttrRecord& a : trace.attributes(index)) {
    if (a.type == static_cast<uint8_t>(AttrType::kString)) continue;
    const bool real = a.type == static_cast<uint8_t>(AttrType::kDouble) ||
                      a.type == static_cast<uint8_t>(AttrType::kMetric);
    if (real && !std::isfinite(a.value.d)) continue;  // no number to plot (JSON has no NaN)
    if (!first) out->push_back(',');
    first = false;
    append_json_string(out, trace.strings.get(a.key));
    out->push_back(':');
    append_attr_value(trace, a, out);
  }
}

// Device work goes on its own track per (device, stream), as Nsight Systems and Perfetto show it.
// Chrome needs a numeric tid: synthesize one above any real thread id.
int64_t track_tid(const SpanRecord& s) {
  if (s.stream == kNoStream && s.device == kNoDevice) return s.tid;
  int64_t device = s.device == kNoDevice ? 0 : s.device;
  int64_t stream = s.stream == kNoStream ? 0 : s.stream;
  return (int64_t{1} << 32) + device * 100000 + stream;
}

}  // namespace

void write_chrome_trace(const model::Trace& trace, std::ostream& out) {
  Buffered w(out);
  std::string& b = w.buf();
  int64_t origin = std::numeric_limits<int64_t>::max();
  for (const SpanRecord& s : trace.spans) origin = std::min(origin, s.start_ns);
  origin = std::min(origin, first_sample_ns(trace));  // CPU samples may precede the first span
  if (trace.spans.empty() && trace.samples.timeline.empty()) origin = 0;

  b += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"strata\"";
  if (auto cmd = trace.record.get("command")) {
    b += ",\"command\":";
    append_json_string(&b, *cmd);
  }
  b += "},\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() {
    if (!first) b += ",\n";
    first = false;
  };

  // Metadata: process and thread (track) names.
  std::set<std::pair<int64_t, int64_t>> tracks;
  for (const SpanRecord& s : trace.spans) tracks.insert({trace.process(s).pid, track_tid(s)});
  for (const model::Process& p : trace.processes) {
    sep();
    b += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
    append_i64(&b, p.pid);
    b += ",\"tid\":0,\"args\":{\"name\":";
    std::string label = p.command_line.empty() ? "process" : p.command_line.substr(0, 120);
    append_json_string(&b, label + " (" + std::to_string(p.pid) + ")");
    b += "}}";
  }
  for (const auto& [pid, tid] : tracks) {
    std::string name;
    if (tid >= (int64_t{1} << 32)) {
      int64_t rest = tid - (int64_t{1} << 32);
      name = "GPU " + std::to_string(rest / 100000) + " stream " + std::to_string(rest % 100000);
    } else {
      name = "thread " + std::to_string(tid);
      for (const model::Process& p : trace.processes) {
        if (p.pid != pid) continue;
        auto it = p.thread_names.find(static_cast<uint32_t>(tid));
        if (it != p.thread_names.end()) name = it->second;
        if (tid == pid && it == p.thread_names.end()) name = "main thread";
      }
    }
    sep();
    b += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":";
    append_i64(&b, pid);
    b += ",\"tid\":";
    append_i64(&b, tid);
    b += ",\"args\":{\"name\":";
    append_json_string(&b, name);
    b += "}}";
  }

  // Spans. Launches and executions sharing a correlation id get a flow arrow.
  std::unordered_map<uint64_t, int> correlation_kinds;  // bit 0: has launch, bit 1: has execution
  for (const SpanRecord& s : trace.spans) {
    if (s.correlation_id == 0) continue;
    if (s.kind == static_cast<uint8_t>(SpanKind::kLaunch)) correlation_kinds[s.correlation_id] |= 1;
    if (s.kind == static_cast<uint8_t>(SpanKind::kExecution)) correlation_kinds[s.correlation_id] |= 2;
  }
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const int64_t pid = trace.process(s).pid;
    const int64_t tid = track_tid(s);
    sep();
    auto kind = static_cast<SpanKind>(s.kind);
    if (kind == SpanKind::kCounter) {
      b += "{\"ph\":\"C\",\"name\":";
      append_json_string(&b, trace.name(s));
      b += ",\"pid\":";
      append_i64(&b, pid);
      b += ",\"ts\":";
      append_us(&b, s.start_ns - origin);
      b += ",\"args\":{";
      append_counter_series(trace, i, &b);
      b += "}}";
      continue;
    }
    b += kind == SpanKind::kInstant ? "{\"ph\":\"i\",\"s\":\"t\"" : "{\"ph\":\"X\"";
    b += ",\"name\":";
    append_json_string(&b, trace.name(s));
    b += ",\"cat\":";
    append_json_string(&b, level_name(s.level));
    b += ",\"pid\":";
    append_i64(&b, pid);
    b += ",\"tid\":";
    append_i64(&b, tid);
    b += ",\"ts\":";
    append_us(&b, s.start_ns - origin);
    if (kind != SpanKind::kInstant) {
      b += ",\"dur\":";
      append_us(&b, std::max<int64_t>(0, s.end_ns - s.start_ns));
    }
    b += ",\"args\":{\"span_id\":";
    append_hex(&b, s.span_id);
    if (s.parent_id) {
      b += ",\"parent_id\":";
      append_hex(&b, s.parent_id);
    }
    if (s.correlation_id) {
      b += ",\"correlation\":";
      append_u64(&b, s.correlation_id);
    }
    b += ",\"kind\":";
    append_json_string(&b, kind_name(s.kind));
    b += ",\"activity\":";
    append_json_string(&b, activity_name(s.activity));
    if (s.flags & kSpanFlagUnfinished) b += ",\"unfinished\":true";
    append_attr_members(trace, i, &b, true);
    b += "}}";
    auto flow = s.correlation_id ? correlation_kinds.find(s.correlation_id) : correlation_kinds.end();
    if (flow != correlation_kinds.end() && flow->second == 3) {
      bool launch = kind == SpanKind::kLaunch;
      if (launch || kind == SpanKind::kExecution) {
        sep();
        b += launch ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"";
        b += ",\"name\":\"launch\",\"cat\":\"correlation\",\"id\":";
        append_u64(&b, s.correlation_id);
        b += ",\"pid\":";
        append_i64(&b, pid);
        b += ",\"tid\":";
        append_i64(&b, tid);
        b += ",\"ts\":";
        append_us(&b, s.start_ns - origin);
        b += "}";
      }
    }
    w.maybe_flush();
  }
  append_sample_events(trace, origin, tracks, &b, &first, [&] { w.maybe_flush(); });  // CPU samples on their threads
  b += "\n]}\n";
}

void write_spans_json(const model::Trace& trace, std::ostream& out) {
  Buffered w(out);
  std::string& b = w.buf();
  b += "[\n";
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const model::Process& p = trace.process(s);
    if (i) b += ",\n";
    b += "{\"span_id\":";
    append_hex(&b, s.span_id);
    b += ",\"parent_id\":";
    if (s.parent_id) append_hex(&b, s.parent_id);
    else b += "null";
    b += ",\"trace_id\":";
    append_json_string(&b, p.trace_id);
    b += ",\"level\":";
    append_json_string(&b, level_name(s.level));
    b += ",\"kind\":";
    append_json_string(&b, kind_name(s.kind));
    b += ",\"activity\":";
    append_json_string(&b, activity_name(s.activity));
    b += ",\"name\":";
    append_json_string(&b, trace.name(s));
    b += ",\"start_ns\":";
    append_i64(&b, s.start_ns);
    b += ",\"end_ns\":";
    append_i64(&b, s.end_ns);
    b += ",\"pid\":";
    append_i64(&b, p.pid);
    b += ",\"tid\":";
    append_u64(&b, s.tid);
    b += ",\"device\":";
    if (s.device != kNoDevice) append_u64(&b, s.device);
    else b += "null";
    b += ",\"stream\":";
    if (s.stream != kNoStream) append_u64(&b, s.stream);
    else b += "null";
    b += ",\"correlation_id\":";
    if (s.correlation_id) append_u64(&b, s.correlation_id);
    else b += "null";
    b += ",\"clock\":";
    append_u64(&b, s.clock);
    b += ",\"flags\":";
    append_u64(&b, s.flags);
    b += ",\"attributes\":{";
    append_attr_members(trace, i, &b, false);
    b += "}}";
    w.maybe_flush();
  }
  b += "\n]\n";
}

void write_spans_csv(const model::Trace& trace, std::ostream& out) {
  Buffered w(out);
  std::string& b = w.buf();
  b += "span_id,parent_id,trace_id,level,kind,activity,name,start_ns,end_ns,duration_ns,pid,tid,device,stream,"
       "correlation_id,clock,flags,attributes\n";
  char hex[24];
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const model::Process& p = trace.process(s);
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, s.span_id);
    b += hex;
    b += ',';
    if (s.parent_id) {
      std::snprintf(hex, sizeof(hex), "%016" PRIx64, s.parent_id);
      b += hex;
    }
    b += ',';
    b += p.trace_id;
    b += ',';
    b += level_name(s.level);
    b += ',';
    b += kind_name(s.kind);
    b += ',';
    b += activity_name(s.activity);
    b += ',';
    append_csv_field(&b, trace.name(s));
    b += ',';
    append_i64(&b, s.start_ns);
    b += ',';
    append_i64(&b, s.end_ns);
    b += ',';
    append_i64(&b, s.end_ns - s.start_ns);
    b += ',';
    append_i64(&b, p.pid);
    b += ',';
    append_u64(&b, s.tid);
    b += ',';
    if (s.device != kNoDevice) append_u64(&b, s.device);
    b += ',';
    if (s.stream != kNoStream) append_u64(&b, s.stream);
    b += ',';
    if (s.correlation_id) append_u64(&b, s.correlation_id);
    b += ',';
    append_u64(&b, s.clock);
    b += ',';
    append_u64(&b, s.flags);
    b += ',';
    std::string attrs = "{";
    append_attr_members(trace, i, &attrs, false);
    attrs += "}";
    append_csv_field(&b, attrs == "{}" ? "" : attrs);
    b += '\n';
    w.maybe_flush();
  }
}

}  // namespace strata::exporter
