// TensorFlow trace JSON -> spans. Two producers write Chrome trace JSON:
//   * tf.compat.v1 timeline (RunMetadata.step_stats -> Timeline.generate_chrome_trace_format): one pid
//     per device track, named by "process_name" metadata such as
//     "/job:localhost/replica:0/task:0/device:GPU:0 Compute", ".../device:GPU:0/stream:7 Compute",
//     ".../device:GPU:0/stream:all Compute", "... Tensors", "Allocators"; ops are "X" events with
//     cat "Op" and args {name: node name, op: op type}; tensors are "N"/"O"/"D" object events and
//     dataflow arrows "s"/"t".
//   * the TF2 profiler's trace viewer: pids named "/host:CPU", "/device:GPU:0", threads such as
//     "TensorFlow Ops", "Stream #N(...)"; "X" events with args like long_name.
// Mapping: events on a GPU stream track -> device, execution (device from the name, stream from
// "stream:N" or the tid); activity: a copy by direction for TF's copy ops (op type "MEMCPYHtoD" in
// timelines, "MemcpyH2D" from the TF2 profiler), memset for "MEMSET...", else kernel;
// the "stream:all" track repeats every stream's ops and is dropped (counted);
// everything on host/device "Compute" tracks -> layer spans, cpu_op (the op kernels, op type kept);
// allocator counters ("C", bytes in use per allocator) -> counter records (ImportBuilder::add_counter);
// object and dataflow events are not imported (counted).
#include <cctype>

#include "core/attr_keys.h"
#include "import/converters.h"

namespace strata::import {
namespace {

struct TrackInfo {
  bool device_stream = false;
  bool duplicate = false;  // the "stream:all" aggregate
  bool not_ops = false;    // "Tensors", "Allocators", "Memory" tracks
  int64_t device = -1;
  int64_t stream = -1;
};

int64_t number_after(std::string_view text, std::string_view marker) {
  size_t at = text.find(marker);
  if (at == std::string_view::npos) return -1;
  at += marker.size();
  int64_t value = 0;
  size_t digits = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at])) && digits < 9) {
    value = value * 10 + (text[at++] - '0');
    ++digits;
  }
  return digits ? value : -1;
}

TrackInfo classify(std::string_view process_name) {
  TrackInfo info;
  int64_t gpu = number_after(process_name, "device:GPU:");
  if (gpu < 0) gpu = number_after(process_name, "/gpu:");
  info.device = gpu;
  if (process_name.find("stream:all") != std::string_view::npos) {
    info.duplicate = true;
  } else if (gpu >= 0 && process_name.find("stream:") != std::string_view::npos) {
    info.device_stream = true;
    info.stream = number_after(process_name, "stream:");
  } else if (gpu >= 0 && process_name.find("/device:GPU") == 0) {
    info.device_stream = true;  // TF2 profiler: GPU pid, one thread per stream
  }
  if (process_name.find(" Tensors") != std::string_view::npos ||
      process_name.find("Allocators") != std::string_view::npos ||
      process_name.find(" Memory") != std::string_view::npos)
    info.not_ops = true;
  return info;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  if (text.size() < prefix.size()) return false;
  for (size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

// TF names its device copies by op type: "MEMCPYHtoD" (timeline), "MemcpyH2D" (TF2 profiler).
ActivityType device_activity(std::string_view op_type, std::string_view node) {
  if (starts_with_ci(op_type, "memcpy")) return memcpy_activity(op_type.substr(6));
  if (starts_with_ci(op_type, "memset")) return ActivityType::kMemset;
  return kernel_activity(node);
}

class TfConverter {
 public:
  explicit TfConverter(ImportBuilder& b) : b_(b) {}

  void on_event(const ChromeEvent& ev) {
    if (!ev.is_object) return b_.drop("malformed_event", ev, "array element is not a JSON object");
    if (ev.ph.empty()) return b_.drop("missing_phase", ev, "field ph missing or not a string");
    if (ev.ph == "M") {
      b_.count_metadata();
      const JsonScalar* value = ev.arg("name");
      if (value && value->kind == JsonScalar::kString) {
        if (ev.name == "process_name") {
          tracks_[b_.id_key(ev.pid)] = classify(value->text);
          b_.set_process_name(b_.id_key(ev.pid), value->text);
        } else if (ev.name == "thread_name") {
          b_.set_thread_name(b_.id_key(ev.pid), b_.thread_id(ev.tid), value->text);
        }
      }
      return;
    }
    if (ev.ph == "N" || ev.ph == "O" || ev.ph == "D")
      return b_.drop("tensor_object_event", ev, "tensor object events are not imported");
    if (ev.ph == "C") return b_.add_counter(ev, kMainProcess);  // TF has no OS pids: one host process
    if (ev.ph == "s" || ev.ph == "t" || ev.ph == "f")
      return b_.drop("dataflow_event", ev, "dataflow arrows are not imported");
    if (ev.ph != "X")
      return b_.drop("unsupported_phase", ev, "phase '" + std::string(ev.ph) + "' is not imported");
    if (!b_.check_times(ev, false)) return;

    TrackInfo info;
    const int64_t pid_key = b_.id_key(ev.pid);
    if (auto it = tracks_.find(pid_key); it != tracks_.end()) info = it->second;
    if (info.duplicate)
      return b_.drop("stream_all_duplicate", ev, "op on the stream:all track repeats a per-stream op");
    if (info.not_ops) return b_.drop("non_op_track_event", ev, "event on a tensor/allocator track");

    // Node name from args.name (timeline) or the event name; op type from args.op or "name:Type".
    std::string_view node = ev.name, op_type;
    if (const JsonScalar* n = ev.arg("name"); n && n->kind == JsonScalar::kString && !n->text.empty())
      node = n->text;
    if (const JsonScalar* o = ev.arg("op"); o && o->kind == JsonScalar::kString) op_type = o->text;
    if (op_type.empty()) {
      size_t colon = ev.name.rfind(':');
      op_type = colon == std::string_view::npos ? ev.name : ev.name.substr(colon + 1);
    }
    const bool device = info.device_stream;
    Level level = device ? Level::kDevice : Level::kLayer;
    SpanKind kind = device ? SpanKind::kExecution : SpanKind::kSpan;
    const ActivityType activity = device ? device_activity(op_type, node) : ActivityType::kCpuOp;
    PendingSpan& span =
        b_.begin_span(ev, static_cast<uint8_t>(level), static_cast<uint8_t>(kind), node, activity);
    if (device) {
      span.host_pid = kResolveByCorrelation;
      span.record.device = static_cast<uint16_t>(info.device >= 0 ? info.device : 0);
      int64_t stream = info.stream >= 0 ? info.stream : ev.tid.as_int().value_or(0);
      span.record.stream = static_cast<uint32_t>(stream >= 0 ? stream : 0);
      span.record.tid = span.record.stream;
    } else {
      // TF has no OS pids in its traces: all host-side tracks are one process, threads told apart by
      // (track, tid) so ops of different devices' compute tracks do not nest into each other.
      span.host_pid = kMainProcess;
      span.record.tid = static_cast<uint32_t>((pid_key & 0xFFFF) << 16) ^ span.record.tid;
      if (info.device >= 0) span.record.device = kNoDevice;
    }
    b_.add_attr(b_.trace().string_attr(attr_keys::kOpType, op_type));
    if (info.device >= 0 && !device) b_.add_attr(b_.trace().int_attr("tf.device", info.device));
    b_.add_args(ev);
  }

 private:
  ImportBuilder& b_;
  std::map<int64_t, TrackInfo> tracks_;
};

}  // namespace

bool convert_tensorflow(std::string_view json, ImportBuilder& builder, ImportStats* stats,
                        std::string* error) {
  TfConverter converter(builder);
  ChromeDocument doc;
  if (!parse_chrome_trace(
          json, builder.source(), &doc, [&](const ChromeEvent& ev) { converter.on_event(ev); }, error,
          builder.input_padding()))
    return false;
  builder.set_metadata(doc);
  return builder.finish(doc.events, stats, error);
}

}  // namespace strata::import
