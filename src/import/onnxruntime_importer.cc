// ONNX Runtime profile JSON (SessionOptions.enable_profiling) -> spans.
//
// The file is a bare array of Chrome "X" events. Mapping (level, kind; activity type):
//   cat Session: model_run, SequentialExecutor::Execute  -> model, span (one inference); annotation
//   cat Session: anything else (model_loading_uri, session_initialization) -> application, span;
//                                                            annotation
//   cat Node: "<node>_kernel_time"                        -> layer, span named <node>; cpu_op; args.op_name,
//                                                            provider, shapes and sizes kept
//   cat Node: "<node>_fence_before" / "_fence_after"      -> dropped, counted (zero-work markers)
//   cat Kernel (CUDA/ROCm EP kernel records)              -> device, execution (args.stream, grid...);
//                                                            kernel (collective for NCCL/RCCL names)
//   cat Api                                               -> runtime_api, span; runtime_call
//   other categories                                      -> application span, unknown activity,
//                                                            counted as unmapped
#include "import/converters.h"

namespace strata::import {
namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

class OrtConverter {
 public:
  explicit OrtConverter(ImportBuilder& b) : b_(b) {}

  void on_event(const ChromeEvent& ev) {
    if (!ev.is_object) return b_.drop("malformed_event", ev, "array element is not a JSON object");
    if (ev.ph.empty()) return b_.drop("missing_phase", ev, "field ph missing or not a string");
    if (ev.ph == "M") return b_.count_metadata();  // ORT writes none; tolerated
    if (ev.ph != "X")
      return b_.drop("unsupported_phase", ev, "phase '" + std::string(ev.ph) + "' is not imported");
    if (!b_.check_times(ev, false)) return;

    Level level = Level::kApplication;
    SpanKind kind = SpanKind::kSpan;
    ActivityType activity = ActivityType::kUnknown;
    std::string_view name = ev.name;
    bool device = false;
    if (ev.cat == "Session") {
      activity = ActivityType::kAnnotation;
      level = (ev.name == "model_run" || ev.name == "SequentialExecutor::Execute" ||
               ev.name == "ParallelExecutor::Execute")
                  ? Level::kModel
                  : Level::kApplication;
    } else if (ev.cat == "Node") {
      if (ends_with(ev.name, "_fence_before") || ends_with(ev.name, "_fence_after"))
        return b_.drop("fence_marker", ev, "ONNX Runtime fence marker (no work of its own)");
      level = Level::kLayer;
      activity = ActivityType::kCpuOp;
      if (ends_with(ev.name, "_kernel_time")) name = ev.name.substr(0, ev.name.size() - 12);
    } else if (ev.cat == "Kernel") {
      level = Level::kDevice;
      kind = SpanKind::kExecution;
      activity = kernel_activity(ev.name);
      device = true;
    } else if (ev.cat == "Api") {
      level = Level::kRuntimeApi;
      activity = ActivityType::kRuntimeCall;
    } else {
      b_.note("unmapped_category." + std::string(ev.cat.empty() ? "(none)" : ev.cat));
    }
    PendingSpan& span =
        b_.begin_span(ev, static_cast<uint8_t>(level), static_cast<uint8_t>(kind), name, activity);
    if (const JsonScalar* corr = ev.arg("correlation"); corr && corr->as_int() && *corr->as_int() > 0)
      span.record.correlation_id = static_cast<uint64_t>(*corr->as_int());
    if (device) {
      span.host_pid = kResolveByCorrelation;
      if (const JsonScalar* d = ev.arg("device_id");
          d && d->as_int() && *d->as_int() >= 0 && *d->as_int() < kNoDevice)
        span.record.device = static_cast<uint16_t>(*d->as_int());
      else
        span.record.device = 0;
      if (const JsonScalar* s = ev.arg("stream");
          s && s->as_int() && *s->as_int() >= 0 && *s->as_int() < kNoStream)
        span.record.stream = static_cast<uint32_t>(*s->as_int());
      else
        span.record.stream = 0;
      span.record.tid = span.record.stream;
    } else if (ev.pid.kind == JsonScalar::kInt) {
      span.host_pid = ev.pid.i;
    } else {
      span.host_pid = kMainProcess;
    }
    if (level == Level::kLayer && name != ev.name) b_.add_attr(b_.trace().string_attr("ort.event", ev.name));
    b_.add_args(ev, "correlation");
  }

 private:
  ImportBuilder& b_;
};

}  // namespace

bool convert_onnxruntime(std::string_view json, ImportBuilder& builder, ImportStats* stats,
                         std::string* error) {
  OrtConverter converter(builder);
  ChromeDocument doc;
  if (!parse_chrome_trace(
          json, builder.source(), &doc, [&](const ChromeEvent& ev) { converter.on_event(ev); }, error,
          builder.input_padding()))
    return false;
  builder.set_metadata(doc);
  return builder.finish(doc.events, stats, error);
}

}  // namespace strata::import
