#include "analysis/iterations/stream_classifier.h"

#include <algorithm>
#include <charconv>
#include <map>

#include "core/activity_type.h"
#include "core/level.h"

namespace strata::analysis::iterations {
namespace {

bool parse_u32(std::string_view text, uint32_t* out) {
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && ptr == text.data() + text.size();
}

// "device:D/stream:S", "stream:S", "tid:T" or "thread:T".
bool parse_stream_spec(std::string_view spec, std::optional<uint32_t>* device, uint32_t* id,
                       bool* is_device) {
  auto slash = spec.find('/');
  if (spec.rfind("device:", 0) == 0 && slash != std::string_view::npos) {
    uint32_t d = 0;
    if (!parse_u32(spec.substr(7, slash - 7), &d)) return false;
    *device = d;
    spec = spec.substr(slash + 1);
  }
  if (spec.rfind("stream:", 0) == 0) {
    *is_device = true;
    return parse_u32(spec.substr(7), id);
  }
  if (spec.rfind("tid:", 0) == 0 || spec.rfind("thread:", 0) == 0) {
    *is_device = false;
    return !device->has_value() && parse_u32(spec.substr(spec.find(':') + 1), id);
  }
  return false;
}

}  // namespace

std::string_view role_name(TrackRole role) {
  switch (role) {
    case TrackRole::kMain:
      return "main";
    case TrackRole::kCopy:
      return "copy";
    case TrackRole::kAssist:
      return "assist";
  }
  return "assist";
}

std::string_view direction_name(CopyDirection direction) {
  switch (direction) {
    case CopyDirection::kNone:
      return "";
    case CopyDirection::kHostToDevice:
      return "HtoD";
    case CopyDirection::kDeviceToHost:
      return "DtoH";
    case CopyDirection::kDeviceToDevice:
      return "DtoD";
    case CopyDirection::kPeer:
      return "PtoP";
    case CopyDirection::kHostToHost:
      return "host copy";
  }
  return "";
}

CopyDirection copy_direction(uint8_t activity, bool device_span) {
  switch (static_cast<ActivityType>(activity)) {
    case ActivityType::kMemcpyHtoD:
      return device_span ? CopyDirection::kHostToDevice : CopyDirection::kNone;
    case ActivityType::kMemcpyDtoH:
      return device_span ? CopyDirection::kDeviceToHost : CopyDirection::kNone;
    case ActivityType::kMemcpyDtoD:
      return device_span ? CopyDirection::kDeviceToDevice : CopyDirection::kNone;
    case ActivityType::kMemcpyPtoP:
      return device_span ? CopyDirection::kPeer : CopyDirection::kNone;
    case ActivityType::kMemcpyHtoH:
      return device_span ? CopyDirection::kHostToHost : CopyDirection::kNone;
    // Host ops that move tensor data (aten::copy_, aten::to, ...): the CPU analog of an input
    // transfer (ones nested inside other ops are not top-level and never reach this test).
    case ActivityType::kTensorCopy:
      return device_span ? CopyDirection::kNone : CopyDirection::kHostToHost;
    default:
      // kMemcpyOther (a source that gave no direction) has no direction to name the track by: it
      // counts as neither compute nor a directed copy.
      return CopyDirection::kNone;
  }
}

bool is_memset(uint8_t activity) { return activity == static_cast<uint8_t>(ActivityType::kMemset); }

namespace {

// A copy whose direction the source did not give: neither compute nor a directed copy.
bool is_undirected_copy(uint8_t activity) {
  return activity == static_cast<uint8_t>(ActivityType::kMemcpyOther);
}

}  // namespace

CopyDirection span_copy_direction(const SpanRecord& span, bool device_span) {
  return copy_direction(span.activity, device_span);
}

namespace {

// The level whose spans are the ops: the one asked for; else the device's when the trace has device
// executions, else layers, else the fullest of library, runtime API and model. 0 when none.
uint8_t choose_op_level(const trace::Trace& trace, const ClassifyOptions& options,
                        const uint64_t (&per_level)[256]) {
  bool any_device = false;
  for (const SpanRecord& s : trace.spans)
    if (s.level == static_cast<uint8_t>(Level::kDevice) &&
        s.kind != static_cast<uint8_t>(SpanKind::kCounter) &&
        s.kind != static_cast<uint8_t>(SpanKind::kInstant))
      any_device = true;
  if (options.op_level) return *options.op_level;
  if (any_device) return static_cast<uint8_t>(Level::kDevice);
  if (per_level[static_cast<uint8_t>(Level::kLayer)] > 0) return static_cast<uint8_t>(Level::kLayer);
  uint8_t level = 0;
  for (Level l : {Level::kLibrary, Level::kRuntimeApi, Level::kModel})
    if (per_level[static_cast<uint8_t>(l)] > per_level[level]) level = static_cast<uint8_t>(l);
  return level;
}

// The op spans of `level` by track (a device stream, or a host thread), in trace order.
std::map<TrackKey, std::vector<uint32_t>> op_spans_by_track(const trace::Trace& trace, uint8_t level,
                                                            bool device_trace) {
  // On a device the ops are the stream's executions (kernels, copies, memsets). Ranges on the device
  // timeline (Kineto's gpu_user_annotation, cuda_sync) are markers, not operations: taken as ops they
  // would hide the kernels they contain (the top-level rule below) and feed step markers to the miner.
  const bool executions_only =
      device_trace && std::any_of(trace.spans.begin(), trace.spans.end(), [&](const SpanRecord& s) {
        return s.level == level && s.kind == static_cast<uint8_t>(SpanKind::kExecution);
      });
  std::map<TrackKey, std::vector<uint32_t>> by_track;
  // Consecutive spans mostly share a track: one map lookup per run of them, not per span.
  std::vector<uint32_t>* current = nullptr;
  TrackKey current_key;
  for (uint32_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (s.level != level || s.kind == static_cast<uint8_t>(SpanKind::kCounter) ||
        s.kind == static_cast<uint8_t>(SpanKind::kInstant) || s.end_ns < s.start_ns)
      continue;
    if (executions_only && s.kind != static_cast<uint8_t>(SpanKind::kExecution)) continue;
    TrackKey key;
    key.process = s.process;
    key.device = device_trace;
    if (key.device) {
      key.device_id = s.device;
      key.stream_or_tid = s.stream != kNoStream ? s.stream : s.tid;
    } else {
      key.stream_or_tid = s.tid;
    }
    if (current == nullptr || !(key == current_key)) {
      current = &by_track[key];
      current_key = key;
    }
    current->push_back(i);
  }
  return by_track;
}

// A track's label and its top-level ops (sorted by start; an op nested in an earlier one is not
// top-level), counted as copies by direction, memsets, undirected copies or compute.
TrackInfo describe_track(const trace::Trace& trace, const TrackKey& key, std::vector<uint32_t>& spans) {
  auto by_start = [&](uint32_t a, uint32_t b) {
    const SpanRecord& x = trace.spans[a];
    const SpanRecord& y = trace.spans[b];
    return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;
  };
  // Loaded traces are sorted by start already: a linear check spares an n log n sort.
  if (!std::is_sorted(spans.begin(), spans.end(), by_start)) std::sort(spans.begin(), spans.end(), by_start);
  TrackInfo info;
  info.key = key;
  const trace::Process* process =
      key.process < trace.processes.size() ? &trace.processes[key.process] : nullptr;
  const long long pid = process != nullptr ? static_cast<long long>(process->pid) : key.process;
  if (key.device) {
    info.label = "pid " + std::to_string(pid) + " device " + std::to_string(key.device_id) + " stream " +
                 std::to_string(key.stream_or_tid);
  } else {
    info.label = "pid " + std::to_string(pid) + " thread " + std::to_string(key.stream_or_tid);
    if (process != nullptr) {
      auto it = process->thread_names.find(key.stream_or_tid);
      if (it != process->thread_names.end()) info.label += " (" + it->second + ")";
    }
  }
  int64_t max_end = INT64_MIN;
  for (uint32_t i : spans) {
    const SpanRecord& s = trace.spans[i];
    if (s.start_ns < max_end) continue;  // nested in (or overlapping) an earlier op: not top-level
    max_end = s.end_ns;
    info.op_spans.push_back(i);
    ++info.ops;
    info.busy_ns += s.duration_ns();
    const CopyDirection dir = copy_direction(s.activity, key.device);
    if (dir != CopyDirection::kNone) {
      ++info.copies[static_cast<int>(dir)];
    } else if (is_memset(s.activity)) {
      ++info.memsets;
    } else if (is_undirected_copy(s.activity)) {
      ++info.undirected_copies;
    } else {
      ++info.compute_ops;
    }
  }
  return info;
}

// The main track named by --stream; false with the reason when the spec is malformed or names no
// track.
bool pick_given_track(const std::string& stream, uint8_t level, Classification* out, std::string* error) {
  std::optional<uint32_t> device;
  uint32_t id = 0;
  bool is_device = false;
  if (!parse_stream_spec(stream, &device, &id, &is_device)) {
    *error = "--stream '" + stream + "': expected device:D/stream:S, stream:S or tid:T";
    return false;
  }
  for (size_t t = 0; t < out->tracks.size(); ++t) {
    const TrackKey& k = out->tracks[t].key;
    if (k.device == is_device && k.stream_or_tid == id && (!device || k.device_id == *device)) {
      out->main_track = static_cast<int>(t);
      break;
    }
  }
  if (out->main_track < 0) {
    *error = "--stream '" + stream + "' names no track with " + level_name(level) +
             " ops in the trace: see the streams table (strata iterations FILE) for the tracks present";
    return false;
  }
  out->note = "main track given with --stream";
  return true;
}

// The main track when none is given: the one with the most compute (kernels' busy time on devices,
// op count on host threads).
void pick_busiest_track(const trace::Trace& trace, uint8_t level, Classification* out) {
  int64_t best = -1;
  for (size_t t = 0; t < out->tracks.size(); ++t) {
    const TrackInfo& info = out->tracks[t];
    int64_t score = 0;
    if (out->device_trace) {
      for (uint32_t i : info.op_spans) {
        const SpanRecord& s = trace.spans[i];
        if (copy_direction(s.activity, true) == CopyDirection::kNone && !is_memset(s.activity) &&
            !is_undirected_copy(s.activity))
          score += s.duration_ns();
      }
    } else {
      score = static_cast<int64_t>(info.compute_ops);
    }
    if (score > best) {
      best = score;
      out->main_track = static_cast<int>(t);
    }
  }
  out->note = out->device_trace
                  ? "main stream: the stream with the most kernel time"
                  : "main thread: the thread with the most top-level " + level_name(level) + " ops";
}

// Main, copy (only directed copies, named by the dominant direction) or assist, for every track.
void assign_roles(Classification* out) {
  for (size_t t = 0; t < out->tracks.size(); ++t) {
    TrackInfo& info = out->tracks[t];
    uint64_t copies = 0;
    int dominant = 0;
    for (int d = 1; d < 6; ++d) {
      copies += info.copies[d];
      if (info.copies[d] > info.copies[dominant]) dominant = d;
    }
    if (static_cast<int>(t) == out->main_track) {
      info.role = TrackRole::kMain;
    } else if (info.compute_ops == 0 && info.memsets == 0 && info.undirected_copies == 0 && copies > 0) {
      info.role = TrackRole::kCopy;
      info.copy_direction = static_cast<CopyDirection>(dominant);
    } else {
      info.role = TrackRole::kAssist;
    }
  }
}

}  // namespace

bool classify_tracks(const trace::Trace& trace, const ClassifyOptions& options, Classification* out,
                     std::string* error) {
  *out = Classification{};
  uint64_t per_level[256] = {};
  for (const SpanRecord& s : trace.spans) ++per_level[s.level];
  const uint8_t level = choose_op_level(trace, options, per_level);
  if (level == 0 || per_level[level] == 0) {
    *error = level == 0 ? "no op spans in the trace (no device, layer, library or model level): record with "
                          "--level layer (PyTorch ops) or import a Kineto GPU trace"
                        : "no spans at level " + level_name(level) + " in the trace: pick another --level";
    return false;
  }
  out->op_level = level;
  out->device_trace = level == static_cast<uint8_t>(Level::kDevice);
  for (auto& [key, spans] : op_spans_by_track(trace, level, out->device_trace))
    out->tracks.push_back(describe_track(trace, key, spans));
  if (!options.stream.empty()) {
    if (!pick_given_track(options.stream, level, out, error)) return false;
  } else {
    pick_busiest_track(trace, level, out);
  }
  assign_roles(out);
  if (out->main_track < 0 || out->tracks[out->main_track].compute_ops == 0) {
    *error = "no compute ops at level " + level_name(level) +
             " on any track (only copies/memsets): nothing to mine";
    return false;
  }
  return true;
}

}  // namespace strata::analysis::iterations
