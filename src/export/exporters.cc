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
#include "trace/span_tree.h"
#include "trace/tracks.h"

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

void append_attr_value(const trace::Trace& trace, const AttrRecord& a, std::string* out) {
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
void append_attr_members(const trace::Trace& trace, size_t index, std::string* out, bool leading_comma) {
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
void append_counter_series(const trace::Trace& trace, size_t index, std::string* out) {
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
int64_t chrome_tid(const trace::TrackKey& k) {
  if (!k.on_device()) return k.tid;
  int64_t device = k.device == kNoDevice ? 0 : k.device;
  int64_t stream = k.stream == kNoStream ? 0 : k.stream;
  return (int64_t{1} << 32) + device * 100000 + stream;
}

// The tree as exports carry it: the parent's span id and how it was established. A parent from the
// span tree is a span of the same process. A span the tree leaves a root whose recorded parent id is
// a span of another process of the file (a context handed over with TRACEPARENT: a child process
// under its parent's span) names that span, linked "process". A recorded parent id that names no
// span of the file is a remote parent in W3C terms (the recorder's span, another service's).
struct ParentRef {
  const SpanRecord* parent = nullptr;
  std::string_view link;
  uint64_t remote_id = 0;
};

class Parents {
 public:
  Parents(const trace::Trace& trace, const trace::SpanTree& tree) : trace_(trace), tree_(tree) {
    // Recorded parents the tree did not take: found anywhere in the file, in one scan.
    for (size_t i = 0; i < trace.spans.size(); ++i)
      if (tree.parent(i) == trace::kNoParent && trace.spans[i].parent_id != 0)
        elsewhere_.emplace(trace.spans[i].parent_id, SIZE_MAX);
    if (elsewhere_.empty()) return;
    for (size_t i = 0; i < trace.spans.size(); ++i) {
      auto it = elsewhere_.find(trace.spans[i].span_id);
      if (it != elsewhere_.end() && it->second == SIZE_MAX) it->second = i;
    }
  }

  ParentRef of(size_t i) const {
    ParentRef r;
    const SpanRecord& s = trace_.spans[i];
    const int32_t p = tree_.parent(i);
    if (p != trace::kNoParent) {
      r.parent = &trace_.spans[static_cast<size_t>(p)];
      r.link = trace::link_kind_name(tree_.link(i));
      return r;
    }
    if (s.parent_id == 0) return r;
    auto it = elsewhere_.find(s.parent_id);
    const size_t found = it == elsewhere_.end() ? SIZE_MAX : it->second;
    if (found != SIZE_MAX && trace_.spans[found].process != s.process) {
      r.parent = &trace_.spans[found];
      r.link = "process";
    } else {
      r.remote_id = s.parent_id;
    }
    return r;
  }

 private:
  const trace::Trace& trace_;
  const trace::SpanTree& tree_;
  std::unordered_map<uint64_t, size_t> elsewhere_;
};

// Chrome metadata events: a name for every process and every track (thread or device stream).
template <typename Sep>
void append_chrome_names(const trace::Trace& trace, const trace::TrackTable& track_table, std::string* out,
                         Sep& sep) {
  std::string& b = *out;
  std::map<std::pair<int64_t, int64_t>, uint32_t> tracks;  // (pid, Chrome tid) -> track
  for (uint32_t t = 0; t < track_table.size(); ++t) {
    const trace::TrackKey& k = track_table[t].key;
    tracks.emplace(std::make_pair(trace.processes[k.process].pid, chrome_tid(k)), t);
  }
  for (const trace::Process& p : trace.processes) {
    sep();
    b += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":";
    append_i64(&b, p.pid);
    b += ",\"tid\":0,\"args\":{\"name\":";
    std::string label = p.command_line.empty() ? "process" : p.command_line.substr(0, 120);
    // A rank of a multi-rank job says so first (and on which host), and the timeline orders ranks.
    const auto rank = p.properties.get_int("rank");
    if (rank) label = "rank " + std::to_string(*rank) + (p.host.empty() ? "" : " on " + p.host) + ": " + label;
    append_json_string(&b, label + " (" + std::to_string(p.pid) + ")");
    b += "}}";
    if (rank) {
      sep();
      b += "{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":";
      append_i64(&b, p.pid);
      b += ",\"tid\":0,\"args\":{\"sort_index\":";
      append_i64(&b, *rank);
      b += "}}";
      sep();
      std::string labels = "rank " + std::to_string(*rank);
      if (!p.host.empty()) labels += ", host " + p.host;
      if (auto bound = p.properties.get_int("clock.uncertainty_ns"); bound && *bound >= 0) {
        char buf[64];
        std::snprintf(buf, sizeof(buf), ", clock +-%.3f us", static_cast<double>(*bound) / 1e3);
        labels += buf;
      } else if (auto method = p.properties.get("clock.method")) {
        labels += ", clock " + std::string(*method);
      }
      b += "{\"ph\":\"M\",\"name\":\"process_labels\",\"pid\":";
      append_i64(&b, p.pid);
      b += ",\"tid\":0,\"args\":{\"labels\":";
      append_json_string(&b, labels);
      b += "}}";
    }
  }
  for (const auto& [key, track] : tracks) {
    const auto& [pid, tid] = key;
    sep();
    b += "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":";
    append_i64(&b, pid);
    b += ",\"tid\":";
    append_i64(&b, tid);
    b += ",\"args\":{\"name\":";
    append_json_string(&b, track_table.label(trace, track));
    b += "}}";
  }
}

// The flow arrow (a start and an end event) from span i's parent to span i, when nesting on the
// child's own row cannot show the link. Flow ids are the child's position in the file: unique.
template <typename Sep>
void append_parent_flow(const trace::Trace& trace, const trace::TrackTable& track_table, size_t i,
                        const ParentRef& parent, int64_t origin, std::string* out, Sep& sep) {
  const SpanRecord& s = trace.spans[i];
  const SpanRecord* p = parent.parent;
  if (p == nullptr || p->kind == static_cast<uint8_t>(SpanKind::kCounter)) return;
  const uint32_t track = track_table.track_of(s);
  const uint32_t parent_track = track_table.track_of(*p);
  if (parent_track == track && p->start_ns <= s.start_ns && s.end_ns <= p->end_ns) return;  // nested
  std::string& b = *out;
  for (const bool start : {true, false}) {
    const SpanRecord& at = start ? *p : s;
    sep();
    b += start ? "{\"ph\":\"s\"" : "{\"ph\":\"f\",\"bp\":\"e\"";
    b += ",\"name\":";
    append_json_string(&b, parent.link);
    b += ",\"cat\":\"parent\",\"id\":";
    append_u64(&b, i + 1);
    b += ",\"pid\":";
    append_i64(&b, trace.process(at).pid);
    b += ",\"tid\":";
    append_i64(&b, chrome_tid(track_table[start ? parent_track : track].key));
    b += ",\"ts\":";
    append_us(&b, at.start_ns - origin);
    b += "}";
  }
}

}  // namespace

void write_chrome_trace(const trace::Trace& trace, std::ostream& out) {
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
  const trace::TrackTable& track_table = trace.tracks();
  const Parents parents(trace, trace.tree());
  append_chrome_names(trace, track_table, &b, sep);

  // Spans. The tree shows as Chrome shows structure: an edge whose parent encloses the child on the
  // child's own track by nesting; every other edge (device work under its launch, a call under the
  // op on another thread, a parent in another process) by a flow arrow from parent to child, named
  // by how the link was established.
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const int64_t pid = trace.process(s).pid;
    const uint32_t track = track_table.track_of(s);
    const int64_t tid = chrome_tid(track_table[track].key);
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
    const ParentRef parent = parents.of(i);
    if (parent.parent) {
      b += ",\"parent_id\":";
      append_hex(&b, parent.parent->span_id);
      b += ",\"parent_link\":";
      append_json_string(&b, parent.link);
    }
    if (parent.remote_id) {
      b += ",\"remote_parent_id\":";
      append_hex(&b, parent.remote_id);
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
    append_parent_flow(trace, track_table, i, parent, origin, &b, sep);
    w.maybe_flush();
  }
  std::set<std::pair<int64_t, int64_t>> named_tracks;  // (pid, Chrome tid) named above
  for (uint32_t t = 0; t < track_table.size(); ++t) {
    const trace::TrackKey& k = track_table[t].key;
    named_tracks.insert({trace.processes[k.process].pid, chrome_tid(k)});
  }
  // CPU samples on their threads (threads without spans get their names there).
  append_sample_events(trace, origin, named_tracks, &b, &first, [&] { w.maybe_flush(); });
  b += "\n]}\n";
}

void write_spans_json(const trace::Trace& trace, std::ostream& out) {
  Buffered w(out);
  std::string& b = w.buf();
  const Parents parents(trace, trace.tree());
  b += "[\n";
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const trace::Process& p = trace.process(s);
    const ParentRef parent = parents.of(i);
    if (i) b += ",\n";
    b += "{\"span_id\":";
    append_hex(&b, s.span_id);
    b += ",\"parent_id\":";
    if (parent.parent)
      append_hex(&b, parent.parent->span_id);
    else
      b += "null";
    b += ",\"parent_link\":";
    if (parent.parent)
      append_json_string(&b, parent.link);
    else
      b += "null";
    b += ",\"remote_parent_id\":";
    if (parent.remote_id)
      append_hex(&b, parent.remote_id);
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

void write_spans_csv(const trace::Trace& trace, std::ostream& out) {
  Buffered w(out);
  std::string& b = w.buf();
  b += "span_id,parent_id,parent_link,remote_parent_id,trace_id,level,kind,activity,name,start_ns,end_ns,"
       "duration_ns,pid,tid,device,stream,correlation_id,clock,flags,attributes\n";
  const Parents parents(trace, trace.tree());
  char hex[24];
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    const trace::Process& p = trace.process(s);
    const ParentRef parent = parents.of(i);
    std::snprintf(hex, sizeof(hex), "%016" PRIx64, s.span_id);
    b += hex;
    b += ',';
    if (parent.parent) {
      std::snprintf(hex, sizeof(hex), "%016" PRIx64, parent.parent->span_id);
      b += hex;
      b += ',';
      b += parent.link;
    } else {
      b += ',';
    }
    b += ',';
    if (parent.remote_id) {
      std::snprintf(hex, sizeof(hex), "%016" PRIx64, parent.remote_id);
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
