// PyTorch profiler (Kineto) Chrome trace JSON -> spans.
//
// Category mapping (the reference for it; tests/python/test_import_kineto.py checks it independently),
// level and kind, then the activity type:
//   Trace (the profiler's own window)        -> application, span; annotation
//   python_function (Python stack frames)    -> application, span: user code above the framework ops,
//                                               kept out of the layer level so layer counts equal ops;
//                                               python_function
//   user_annotation (record_function, ProfilerStep#N) -> model, span; annotation. ProfilerStep#N
//                                               also gets the attribute step=N (one step of the loop)
//   cpu_op / operator                        -> layer, span; cpu_op, or tensor_copy for PyTorch's
//                                               copying ops (framework_op_activity)
//   cuda_runtime / cuda_driver               -> runtime_api, launch (kernel launches, memcpy/memset
//                                               calls, and any call a device activity correlates to)
//                                               or span (everything else); runtime_call / driver_call
//   kernel                                   -> device, execution; kernel (collective for NCCL/RCCL)
//   gpu_memcpy                               -> device, execution; memcpy by direction: args.kind
//                                               (ROCm) or Kineto's name "Memcpy HtoD (Pinned -> Device)"
//                                               (its src/dst memory kinds become src_kind/dst_kind)
//   gpu_memset                               -> device, execution; memset
//   cuda_profiler_range (CUPTI range profiler) -> device, span; device_range. Not a kernel: one
//                                               range per profiled kernel, carrying its counters
//                                               (kept as metrics, SASS FP counts also as flops),
//                                               at times Kineto makes up (the ranges are spread
//                                               evenly over the profiling window: 121 ms each in
//                                               a run whose kernels took microseconds)
//   gpu_user_annotation                      -> device, span (on the device stream's track); device_range
//   cuda_sync                                -> device, span; sync
//   nvtx_layer, os_runtime (written by the nsys reader) -> layer, span; annotation / application,
//                                               span; unknown
//   instants ("i"/"I")                       -> application, instant; memory_event for "[memory]",
//                                               annotation otherwise
//   no category on pid "CPU functions" (the legacy torch.autograd.profiler export, no Kineto)
//                                            -> like cpu_op
//   anything else                            -> application span, unknown activity, counted in
//                                               import.unmapped_category.*
// Args keep their names except where Kineto spells a canonical fact its own way (kineto_key):
// "Input Dims" -> shapes, "Input type" -> input_types, "External id" -> external_correlation_id,
// "est. achieved occupancy %" -> achieved_occupancy, "registers per thread" -> registers_per_thread,
// "shared memory" -> shared_memory, "grid"/"block"/"cluster" [x, y, z] -> grid_x.. / block_x.. /
// cluster_x...
//
// Phases: "X" complete events; "B"/"E" duration events, paired per JSON pid/tid as a stack (an "E"
// closes the innermost open "B" of its track, as Chrome's viewer does; its args merge into the
// span, an "E" value winning) and then mapped like "X"; "i"/"I" instants; "C" counters (one
// counter record per numeric series, see ImportBuilder::add_counter); "M" metadata; "s"/"t"/"f"
// flows bound to slices. A "B" whose end never comes (or whose "E" has no usable ts) is kept as an
// unfinished span (kSpanFlagUnfinished) ending at the latest time in the file, as the collector
// keeps spans of a process that died. Other phases (async "b"/"e"/"n", objects, samples) are
// dropped as import.unsupported_phase.
#include <algorithm>
#include <cctype>
#include <map>
#include <tuple>

#include "core/attr_keys.h"
#include "core/memory_keys.h"
#include "import/converters.h"
#include "import/correlation_map.h"
#include "import/sass_flops.h"

namespace strata::import {
namespace {

// How a category's activity type is found: fixed, or from the event.
enum class ActivityFrom : uint8_t { kFixed, kOpName, kKernelName, kCopy };

struct CategoryRule {
  std::string_view category;
  Level level;
  SpanKind kind;
  bool device_side;
  ActivityType activity;
  ActivityFrom from = ActivityFrom::kFixed;
};

constexpr CategoryRule kRules[] = {
    {"Trace", Level::kApplication, SpanKind::kSpan, false, ActivityType::kAnnotation},
    {"python_function", Level::kApplication, SpanKind::kSpan, false, ActivityType::kPythonFunction},
    {"user_annotation", Level::kModel, SpanKind::kSpan, false, ActivityType::kAnnotation},
    {"cpu_op", Level::kLayer, SpanKind::kSpan, false, ActivityType::kCpuOp, ActivityFrom::kOpName},
    {"operator", Level::kLayer, SpanKind::kSpan, false, ActivityType::kCpuOp, ActivityFrom::kOpName},
    {"Operator", Level::kLayer, SpanKind::kSpan, false, ActivityType::kCpuOp, ActivityFrom::kOpName},
    {"cuda_runtime", Level::kRuntimeApi, SpanKind::kSpan, false, ActivityType::kRuntimeCall},
    {"cuda_driver", Level::kRuntimeApi, SpanKind::kSpan, false, ActivityType::kDriverCall},
    {"Runtime", Level::kRuntimeApi, SpanKind::kSpan, false, ActivityType::kRuntimeCall},
    {"kernel", Level::kDevice, SpanKind::kExecution, true, ActivityType::kKernel, ActivityFrom::kKernelName},
    {"Kernel", Level::kDevice, SpanKind::kExecution, true, ActivityType::kKernel, ActivityFrom::kKernelName},
    {"gpu_memcpy", Level::kDevice, SpanKind::kExecution, true, ActivityType::kMemcpyOther,
     ActivityFrom::kCopy},
    {"Memcpy", Level::kDevice, SpanKind::kExecution, true, ActivityType::kMemcpyOther, ActivityFrom::kCopy},
    {"gpu_memset", Level::kDevice, SpanKind::kExecution, true, ActivityType::kMemset},
    {"Memset", Level::kDevice, SpanKind::kExecution, true, ActivityType::kMemset},
    {"cuda_profiler_range", Level::kDevice, SpanKind::kSpan, true, ActivityType::kDeviceRange},
    {"gpu_user_annotation", Level::kDevice, SpanKind::kSpan, true, ActivityType::kDeviceRange},
    {"cuda_sync", Level::kDevice, SpanKind::kSpan, true, ActivityType::kSync},
    // Categories of Strata's own translations (the Nsight Systems reader, nsys_sqlite_reader.cc):
    // NVTX ranges below the model level (docs/nsys.md gives the rule), OS runtime calls (no
    // activity type of their own; counted by that reader).
    {"nvtx_layer", Level::kLayer, SpanKind::kSpan, false, ActivityType::kAnnotation},
    {"os_runtime", Level::kApplication, SpanKind::kSpan, false, ActivityType::kUnknown},
};

constexpr size_t kCpuOpRule = 3;
static_assert(kRules[kCpuOpRule].category == "cpu_op");

// torch.autograd.profiler without Kineto (PyTorch <= 1.13 CPU builds, export_chrome_trace) writes
// its ops with no category, on the pid "CPU functions" (GPU work of use_cuda=True on "CUDA
// functions"): they are framework ops, so they map like Kineto's cpu_op (layer level).
bool is_legacy_autograd_op(const ChromeEvent& ev) {
  return ev.cat.empty() && ev.pid.kind == JsonScalar::kString && ev.pid.text == "CPU functions";
}

// Kineto names copies "Memcpy <kind> (<src memory> -> <dst memory>)", with CUPTI's kind code
// ("HtoD", "DtoD", ...) and memory kinds ("Pageable", "Pinned", "Device"). ROCm traces also give the
// kind as args.kind.
struct CopyName {
  std::string_view code, src, dst;
};
CopyName parse_copy_name(std::string_view name) {
  CopyName c;
  size_t space = name.find(' ');
  if (space == std::string_view::npos) return c;
  std::string_view rest = name.substr(space + 1);
  size_t end = rest.find(' ');
  c.code = rest.substr(0, end);
  if (end == std::string_view::npos) return c;
  rest = rest.substr(end + 1);
  size_t arrow = rest.find(" -> ");
  if (rest.size() < 2 || rest.front() != '(' || rest.back() != ')' || arrow == std::string_view::npos)
    return c;
  c.src = rest.substr(1, arrow - 1);
  c.dst = rest.substr(arrow + 4, rest.size() - arrow - 5);
  return c;
}

std::string lower(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// Case-insensitive search for a lower-case word, without a lowered copy of the name (this runs for
// every runtime call).
bool contains_word(std::string_view name, std::string_view lower_word) {
  auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
  for (size_t at = 0; at + lower_word.size() <= name.size(); ++at) {
    size_t k = 0;
    while (k < lower_word.size() && lower(name[at + k]) == lower_word[k]) ++k;
    if (k == lower_word.size()) return true;
  }
  return false;
}

bool looks_like_launch(std::string_view name) {
  return contains_word(name, "launch") || contains_word(name, "memcpy") || contains_word(name, "memset");
}

// "GPU 3" -> 3
std::optional<int64_t> trailing_number(std::string_view text) {
  size_t end = text.size();
  while (end > 0 && text[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(text[begin - 1]))) --begin;
  if (begin == end || end - begin > 9) return std::nullopt;
  return std::stoll(std::string(text.substr(begin, end - begin)));
}

// "ProfilerStep#12" -> 12: torch.profiler's mark of one step of the program's loop (its schedule
// counts steps by profiler.step() calls). Kept as the span's "step" attribute, which the analyses
// take as "this model span is one train/predict step".
std::optional<int64_t> profiler_step(std::string_view name) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.size() <= kPrefix.size() || name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  std::optional<int64_t> n = trailing_number(name);
  if (!n || std::to_string(*n).size() != name.size() - kPrefix.size()) return std::nullopt;
  return n;
}

// Marks a stack slot whose "B" was dropped (no usable ts): its "E" must not close an outer "B".
constexpr size_t kDroppedBegin = SIZE_MAX;

class KinetoConverter {
 public:
  explicit KinetoConverter(ImportBuilder& b) : b_(b) {}

  // Flow events are one per 500-700 bytes of Kineto JSON (V100 trace, synthetic ones); growing the
  // list by doubling copied it and faulted in each new block (1.2% of an import of 100 MB end to
  // end in perf). The reservation is address space only until written.
  void reserve_for_input(size_t json_bytes) { flows_.reserve(json_bytes / 256); }

  void on_event(const ChromeEvent& ev) {
    if (!ev.is_object) return b_.drop("malformed_event", ev, "array element is not a JSON object");
    if (ev.ph.empty()) return b_.drop("missing_phase", ev, "field ph missing or not a string");
    b_.observe_time(ev);
    if (ev.ph == "M") return on_metadata(ev);
    if (ev.ph == "s" || ev.ph == "f" || ev.ph == "t") return on_flow(ev);
    if (ev.ph == "B") return on_begin(ev);
    if (ev.ph == "E") return on_end(ev);
    if (ev.ph == "C") return b_.add_counter(ev, ev.pid.kind == JsonScalar::kInt ? ev.pid.i : kMainProcess);
    if (ev.ph != "X" && ev.ph != "i" && ev.ph != "I")
      return b_.drop("unsupported_phase", ev, "phase '" + std::string(ev.ph) + "' is not imported");
    const bool instant = ev.ph != "X";
    if (!b_.check_times(ev, instant)) return;
    add_slice(ev, instant);
  }

  bool finish(uint64_t events_read, ImportStats* stats, std::string* error) {
    close_open_spans();
    auto& spans = b_.spans();
    // A runtime call that device work correlates to is a launch, whatever its name.
    uint64_t promoted = 0;
    for (PendingSpan& s : spans)
      if (s.record.level == static_cast<uint8_t>(Level::kRuntimeApi) &&
          s.record.kind == static_cast<uint8_t>(SpanKind::kSpan) && s.record.correlation_id &&
          device_correlations_.contains(s.record.correlation_id)) {
        s.record.kind = static_cast<uint8_t>(SpanKind::kLaunch);
        ++promoted;
      }
    if (promoted) b_.note("runtime_calls_linked_as_launch", promoted);
    device_correlations_ = {};
    mark_hopper_calls(b_);
    attribute_memory();
    bind(flows_);
    // Freed before the spans go to the trace, the import's memory peak (a flow per launch and kernel).
    std::vector<FlowEvent>().swap(flows_);
    std::vector<MemoryEvent>().swap(memory_);
    return b_.finish(events_read, stats, error);
  }

 private:
  void on_begin(const ChromeEvent& ev) {
    if (!b_.check_times(ev, /*instant=*/true)) {  // dropped, counted by cause
      open_[{b_.id_key(ev.pid), b_.id_key(ev.tid)}].push_back(kDroppedBegin);
      return;
    }
    // The span is made now, while the event's strings are valid; its end comes with the "E". (Made
    // before the track key, so string pids/tids are numbered in the same order as for "X" events.)
    size_t index = add_slice(ev, /*instant=*/false);
    b_.spans()[index].record.flags |= kSpanFlagUnfinished;
    open_[{b_.id_key(ev.pid), b_.id_key(ev.tid)}].push_back(index);
  }

  void on_end(const ChromeEvent& ev) {
    auto it = open_.find({b_.id_key(ev.pid), b_.id_key(ev.tid)});
    if (it == open_.end() || it->second.empty())
      return b_.drop("unmatched_end", ev, "E event without an open B event on its pid/tid");
    const size_t index = it->second.back();
    it->second.pop_back();
    if (index == kDroppedBegin)
      return b_.drop("end_of_dropped_begin", ev, "E event closing a B event that was dropped");
    SpanRecord& r = b_.spans()[index].record;
    if (!ev.ts_ns || *ev.ts_ns < r.start_ns) {
      unfinished_.push_back(index);
      if (!ev.ts_ns)
        return b_.drop(ev.ts_malformed ? "malformed_ts" : "missing_ts", ev,
                       "field ts of an E event missing or not a number (its B is kept, unfinished)");
      return b_.drop("end_before_begin", ev, "E event earlier than its B event (the B is kept, unfinished)");
    }
    r.end_ns = *ev.ts_ns;
    r.flags &= static_cast<uint8_t>(~kSpanFlagUnfinished);
    if (!ev.name.empty() && ev.name != b_.trace().name(r)) b_.note("end_name_mismatch");
    if (const JsonScalar* corr = ev.arg("correlation");
        corr && r.correlation_id == 0 && corr->as_int() && *corr->as_int() > 0) {
      r.correlation_id = static_cast<uint64_t>(*corr->as_int());
      if (r.kind == static_cast<uint8_t>(SpanKind::kExecution))
        device_correlations_.emplace(r.correlation_id, true);
    }
    b_.merge_args(index, ev, "correlation");
    b_.count_end_event();
  }

  // "B" events whose end never came: extended to the latest time in the file, flagged unfinished.
  void close_open_spans() {
    for (const auto& [track, stack] : open_)
      for (size_t index : stack)
        if (index != kDroppedBegin) unfinished_.push_back(index);
    open_.clear();
    for (size_t index : unfinished_) {
      SpanRecord& r = b_.spans()[index].record;
      r.end_ns = std::max(r.start_ns, b_.latest_time());
      b_.count_unfinished();
    }
    unfinished_.clear();
  }

  // An "X" event (or a "B" event, or an instant) with valid times -> one pending span; returns its
  // index.
  size_t add_slice(const ChromeEvent& ev, bool instant) {
    const CategoryRule* rule = nullptr;
    for (const CategoryRule& r : kRules)
      if (r.category == ev.cat) {
        rule = &r;
        break;
      }
    if (rule == nullptr && is_legacy_autograd_op(ev)) rule = &kRules[kCpuOpRule];
    Level level = rule ? rule->level : Level::kApplication;
    SpanKind kind = instant ? SpanKind::kInstant : (rule ? rule->kind : SpanKind::kSpan);
    if (!rule && !instant) b_.note("unmapped_category." + std::string(ev.cat.empty() ? "(none)" : ev.cat));
    if (level == Level::kRuntimeApi && looks_like_launch(ev.name)) kind = SpanKind::kLaunch;

    ActivityType activity = rule ? rule->activity : ActivityType::kUnknown;
    if (instant)
      activity = ev.name == "[memory]" ? ActivityType::kMemoryEvent : ActivityType::kAnnotation;
    else if (rule && rule->from == ActivityFrom::kOpName)
      activity = framework_op_activity(ev.name);
    else if (rule && rule->from == ActivityFrom::kKernelName)
      activity = kernel_activity(ev.name);
    CopyName copy;
    if (!instant && rule && rule->from == ActivityFrom::kCopy) {
      copy = parse_copy_name(ev.name);
      const JsonScalar* k = ev.arg("kind");
      activity = memcpy_activity(k != nullptr && k->kind == JsonScalar::kString ? k->text : copy.code);
    }

    PendingSpan& span =
        b_.begin_span(ev, static_cast<uint8_t>(level), static_cast<uint8_t>(kind), ev.name, activity);
    if (const JsonScalar* corr = ev.arg("correlation"); corr && corr->as_int() && *corr->as_int() > 0)
      span.record.correlation_id = static_cast<uint64_t>(*corr->as_int());
    const bool device_side = rule ? rule->device_side : false;
    if (device_side) {
      span.host_pid = kResolveByCorrelation;
      std::optional<int64_t> device;
      if (const JsonScalar* d = ev.arg("device")) device = d->as_int();
      if (!device)
        device = ev.pid.kind == JsonScalar::kString ? trailing_number(ev.pid.text) : ev.pid.as_int();
      if (device && *device >= 0 && *device < kNoDevice) span.record.device = static_cast<uint16_t>(*device);
      std::optional<int64_t> stream;
      if (const JsonScalar* s = ev.arg("stream")) stream = s->as_int();
      if (!stream) stream = ev.tid.as_int();
      if (stream && *stream >= 0 && *stream < kNoStream) span.record.stream = static_cast<uint32_t>(*stream);
      span.record.tid = span.record.stream == kNoStream ? 0 : span.record.stream;
      if (span.record.kind == static_cast<uint8_t>(SpanKind::kExecution) && span.record.correlation_id)
        device_correlations_.emplace(span.record.correlation_id, true);
    } else if (ev.pid.kind == JsonScalar::kInt && ev.pid.i != 0) {
      span.host_pid = ev.pid.i;
    } else if (ev.pid.kind == JsonScalar::kInt) {
      // No Linux process has pid 0: Kineto writes it for a thread it could not place (tqdm's monitor
      // thread in the H100 BERT trace), which would otherwise read as a subprocess of the run.
      span.host_pid = kMainProcess;
      b_.note("host_events_of_pid_0");
    } else {
      // A named track ("Spans", "Traces"): the profiler's own rows, shown on the main process.
      span.host_pid = kMainProcess;
      b_.set_thread_name(kMainProcess, span.record.tid,
                         std::string(ev.pid.kind == JsonScalar::kString ? ev.pid.text : "?") + "/" +
                             std::string(ev.tid.kind == JsonScalar::kString ? ev.tid.text : "?"));
    }
    const bool metric_args = ev.cat == "cuda_profiler_range";  // CUPTI counter values
    if (metric_args) {
      SassFlopCounter flops;  // SASS FP instruction counters -> "flops" (sass_flops.h)
      for (const ChromeArg& a : ev.args)
        if (a.value.kind == JsonScalar::kInt || a.value.kind == JsonScalar::kDouble) {
          b_.add_attr(b_.trace().metric(a.key, a.value.d));
          flops.add(a.key, a.value.d);
        }
      if (flops.flops() && !ev.arg("flops")) b_.add_attr(b_.trace().metric("flops", *flops.flops()));
    } else {
      b_.add_args(ev, "correlation");
      if (!copy.src.empty()) {
        b_.add_attr(b_.string_attr(attr_keys::kSrcKind, lower(copy.src)));
        b_.add_attr(b_.string_attr(attr_keys::kDstKind, lower(copy.dst)));
      }
    }
    if (instant && ev.name == "[memory]") note_memory(ev, span);
    if (level == Level::kModel && !instant)
      if (std::optional<int64_t> step = profiler_step(ev.name))
        b_.add_attr(b_.int_attr(attr_keys::kStep, *step));
    return b_.spans().size() - 1;
  }

  // torch.profiler(profile_memory=True) writes every allocation and free as an instant "[memory]"
  // on the thread that did it: args "Bytes" (negative for a free), "Total Allocated" (the
  // allocator's live bytes right after), "Device Type" (c10::DeviceType: 0 CPU, 1 CUDA, ...) and
  // "Device Id".
  void note_memory(const ChromeEvent& ev, const PendingSpan& span) {
    const JsonScalar* bytes = ev.arg("Bytes");
    std::optional<int64_t> n = bytes ? bytes->as_int() : std::nullopt;
    if (!n) return b_.note("memory.events_without_bytes");
    MemoryEvent m;
    m.track_pid = span.track_pid;
    m.track_tid = span.track_tid;
    m.ts_ns = span.record.start_ns;
    m.bytes = *n;
    m.instant = static_cast<uint32_t>(b_.spans().size() - 1);
    if (const JsonScalar* v = ev.arg("Device Type"); v && v->as_int()) m.device_type = *v->as_int();
    if (const JsonScalar* v = ev.arg("Device Id"); v && v->as_int()) m.device_id = *v->as_int();
    if (const JsonScalar* v = ev.arg("Total Allocated"); v && v->as_int()) m.total = *v->as_int();
    // Host memory as torch.profiler counts it ("CPU Mem"): CPU, MKLDNN and IDEEP allocations.
    m.on_device = m.device_type != 0 && m.device_type != 2 && m.device_type != 5;
    memory_.push_back(m);
  }

  // The memory timeline: each event's "Total Allocated" becomes a sample of its allocator's counter
  // track (the tracer's representation: memory_keys), one track per device and process.
  void add_memory_timeline() {
    uint64_t samples = 0;
    for (const MemoryEvent& m : memory_) {
      if (m.total == kNoTotal) continue;
      std::string device = "cpu", allocator = "PyTorch CPU allocator";
      if (m.on_device) {
        static const std::map<int64_t, std::string> kNames = {
            {1, "cuda"}, {6, "hip"}, {12, "xpu"}, {13, "mps"}};
        auto it = kNames.find(m.device_type);
        std::string type = it != kNames.end() ? it->second : "device" + std::to_string(m.device_type);
        device = type + ":" + std::to_string(std::max<int64_t>(m.device_id, 0));
        std::string upper = type;
        std::transform(upper.begin(), upper.end(), upper.begin(),
                       [](unsigned char c) { return std::toupper(c); });
        allocator = "PyTorch " + upper + " allocator";
      }
      PendingSpan counter = b_.spans()[m.instant];
      counter.record.level = static_cast<uint8_t>(Level::kApplication);
      counter.record.kind = static_cast<uint8_t>(SpanKind::kCounter);
      counter.record.activity = static_cast<uint8_t>(ActivityType::kCounter);
      counter.record.name = b_.trace().strings.intern(memory_keys::counter_name(allocator, device));
      counter.record.correlation_id = 0;
      counter.attr_first = static_cast<uint32_t>(b_.attrs().size());
      counter.attr_count = 0;
      b_.spans().push_back(counter);
      b_.add_attr(b_.trace().metric("value", static_cast<double>(m.total)));
      b_.add_attr(b_.trace().string_attr(memory_keys::kCounterAllocator, allocator));
      b_.add_attr(b_.trace().string_attr(memory_keys::kCounterDevice, device));
      ++samples;
    }
    b_.count_derived_counter_samples(samples);
    if (samples) b_.note("memory.timeline_samples", samples);
  }

  // Each event counts toward every op on its thread whose [start, end] holds its time (nested ops
  // included in their parents), and as "self" toward the innermost one; see docs/memory.md for the
  // attributes. One sweep per thread over its ops by start time, with the open ones on a stack.
  void attribute_memory() {
    if (memory_.empty()) return;
    add_memory_timeline();
    auto& spans = b_.spans();
    using Track = std::pair<int64_t, int64_t>;
    std::map<Track, std::vector<uint32_t>> ops;
    for (size_t i = 0; i < spans.size(); ++i) {
      const SpanRecord& r = spans[i].record;
      if (r.level == static_cast<uint8_t>(Level::kLayer) && r.kind == static_cast<uint8_t>(SpanKind::kSpan))
        ops[{spans[i].track_pid, spans[i].track_tid}].push_back(static_cast<uint32_t>(i));
    }
    for (auto& [track, members] : ops)
      std::sort(members.begin(), members.end(), [&](uint32_t a, uint32_t b) {
        const SpanRecord &x = spans[a].record, &y = spans[b].record;
        return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.end_ns > y.end_ns;  // outer first
      });
    std::stable_sort(memory_.begin(), memory_.end(), [](const MemoryEvent& a, const MemoryEvent& b) {
      return std::tie(a.track_pid, a.track_tid, a.ts_ns) < std::tie(b.track_pid, b.track_tid, b.ts_ns);
    });
    std::map<uint32_t, OpMemory> totals;
    uint64_t attributed = 0, outside = 0, frees = 0;
    const std::vector<uint32_t> none;
    const std::vector<uint32_t>* members = &none;
    Track current{INT64_MIN, INT64_MIN};
    size_t next = 0;
    std::vector<uint32_t> open;
    for (const MemoryEvent& m : memory_) {
      if (m.bytes == 0) continue;
      const bool free = m.bytes < 0;
      frees += free;
      if (Track t{m.track_pid, m.track_tid}; t != current) {
        current = t;
        auto it = ops.find(t);
        members = it == ops.end() ? &none : &it->second;
        next = 0;
        open.clear();
      }
      for (; next < members->size() && spans[(*members)[next]].record.start_ns <= m.ts_ns; ++next) {
        const int64_t start = spans[(*members)[next]].record.start_ns;
        while (!open.empty() && spans[open.back()].record.end_ns < start) open.pop_back();
        open.push_back((*members)[next]);
      }
      while (!open.empty() && spans[open.back()].record.end_ns < m.ts_ns) open.pop_back();
      OpMemory* innermost = nullptr;
      for (uint32_t op : open)
        if (spans[op].record.end_ns >= m.ts_ns) {  // a sibling that ended under an open op is skipped
          OpMemory& o = totals[op];
          o.all.add(m);
          if (m.on_device) o.device.add(m);
          innermost = &o;
        }
      if (innermost != nullptr) {
        innermost->all.self_net += m.bytes;
        if (m.on_device) innermost->device.self_net += m.bytes;
      }
      if (!free) ++(innermost != nullptr ? attributed : outside);
    }
    write_memory_attributes(ops, totals);
    if (attributed) b_.note("memory.allocations_in_ops", attributed);
    if (outside) b_.note("memory.allocations_outside_ops", outside);
    if (frees) b_.note("memory.frees", frees);
  }

  static constexpr int64_t kNoTotal = INT64_MIN;  // no "Total Allocated" in the event
  struct MemoryEvent {
    int64_t track_pid = 0, track_tid = 0, ts_ns = 0, bytes = 0;
    int64_t total = kNoTotal;  // "Total Allocated"
    int64_t device_type = 0, device_id = -1;
    bool on_device = false;
    uint32_t instant = 0;  // the "[memory]" instant span
  };
  // One op's sums over the events attributed to it (all devices, or the accelerator part).
  struct MemorySums {
    int64_t alloc = 0, freed = 0, self_net = 0, peak = 0, peak_live = kNoTotal;
    bool seen = false;
    void add(const MemoryEvent& m) {
      seen = true;
      (m.bytes > 0 ? alloc : freed) += m.bytes > 0 ? m.bytes : -m.bytes;
      peak = std::max(peak, alloc - freed);
      if (m.bytes > 0 && m.total != kNoTotal) peak_live = std::max(peak_live, m.total);
    }
  };
  struct OpMemory {
    MemorySums all, device;
  };

  // Every op gets alloc_bytes (0 when nothing was allocated while it ran: the trace was profiled
  // with profile_memory, so that is a measurement); the rest only where events were attributed.
  void write_memory_attributes(const std::map<std::pair<int64_t, int64_t>, std::vector<uint32_t>>& ops,
                               const std::map<uint32_t, OpMemory>& totals) {
    trace::Trace& t = b_.trace();
    auto write = [&](uint32_t op, const MemorySums& s, std::string_view prefix) {
      auto key = [&](std::string_view k) { return std::string(prefix) + std::string(k); };
      b_.add_late_attr(op, t.int_attr(key(memory_keys::kAllocBytes), s.alloc));
      b_.add_late_attr(op, t.int_attr(key(memory_keys::kFreedBytes), s.freed));
      b_.add_late_attr(op, t.int_attr(key(memory_keys::kNetAllocBytes), s.alloc - s.freed));
      b_.add_late_attr(op, t.int_attr(key(memory_keys::kSelfNetAllocBytes), s.self_net));
      b_.add_late_attr(op, t.int_attr(key(memory_keys::kPeakAllocBytes), s.peak));
      if (s.peak_live != kNoTotal)
        b_.add_late_attr(op, t.int_attr(key(memory_keys::kPeakLiveBytes), s.peak_live));
    };
    for (const auto& [track, members] : ops)
      for (uint32_t op : members) {
        auto it = totals.find(op);
        if (it == totals.end()) {
          b_.add_late_attr(op, t.int_attr(memory_keys::kAllocBytes, 0));
          continue;
        }
        write(op, it->second.all, "");
        if (it->second.device.seen) write(op, it->second.device, memory_keys::kDevicePrefix);
      }
  }

  void on_metadata(const ChromeEvent& ev) {
    b_.count_metadata();
    const JsonScalar* value = nullptr;
    if (ev.name == "process_name" && (value = ev.arg("name")) && value->kind == JsonScalar::kString)
      b_.set_process_name(b_.id_key(ev.pid), value->text);
    else if (ev.name == "process_labels" && (value = ev.arg("labels")) && value->kind == JsonScalar::kString)
      b_.set_process_label(b_.id_key(ev.pid), value->text);
    else if (ev.name == "thread_name" && (value = ev.arg("name")) && value->kind == JsonScalar::kString)
      b_.set_thread_name(ev.pid.kind == JsonScalar::kInt ? ev.pid.i : kMainProcess, b_.thread_id(ev.tid),
                         value->text);
  }

  void on_flow(const ChromeEvent& ev) {
    if (!ev.ts_ns) return b_.drop("malformed_flow", ev, "flow event without a numeric ts");
    auto id = ev.id.as_int();
    if (!id) return b_.drop("malformed_flow", ev, "flow event without a numeric id");
    FlowEvent f;
    f.track_pid = b_.id_key(ev.pid);
    f.track_tid = b_.id_key(ev.tid);
    f.ts_ns = *ev.ts_ns;
    f.id = static_cast<uint64_t>(*id);
    f.phase = ev.ph[0];
    f.enclosing = ev.ph == "s" || ev.ph == "t" || ev.bp == "e";
    f.type = ev.cat == "ac2g"     ? FlowEvent::kLaunchToDevice
             : ev.cat == "fwdbwd" ? FlowEvent::kForwardToBackward
                                  : FlowEvent::kOther;
    f.event_index = ev.index;
    f.offset = ev.offset;
    flows_.push_back(f);
  }

  void bind(const std::vector<FlowEvent>& flows) {
    auto& spans = b_.spans();
    std::vector<size_t> bound = bind_flows(spans, flows);
    trace::Trace& t = b_.trace();
    uint64_t unbound = 0, filled = 0, disagreeing = 0, fwdbwd = 0, ac2g = 0;
    for (size_t k = 0; k < flows.size(); ++k) {
      const FlowEvent& f = flows[k];
      if (bound[k] == SIZE_MAX) {
        ++unbound;
        continue;
      }
      SpanRecord& r = spans[bound[k]].record;
      switch (f.type) {
        case FlowEvent::kLaunchToDevice:
          ++ac2g;
          if (r.correlation_id == 0) {
            r.correlation_id = f.id;
            ++filled;
          } else if (r.correlation_id != f.id) {
            ++disagreeing;
          }
          break;
        case FlowEvent::kForwardToBackward:
          ++fwdbwd;
          b_.add_late_attr(bound[k], t.int_attr(f.phase == 's' ? "flow.fwdbwd.out" : "flow.fwdbwd.in",
                                                static_cast<int64_t>(f.id)));
          break;
        case FlowEvent::kOther:
          b_.add_late_attr(bound[k],
                           t.int_attr(f.phase == 's' ? "flow.out" : "flow.in", static_cast<int64_t>(f.id)));
          break;
      }
    }
    if (unbound) {
      ChromeEvent where;
      for (size_t k = 0; k < flows.size(); ++k)
        if (bound[k] == SIZE_MAX) {
          where.index = flows[k].event_index;
          where.offset = flows[k].offset;
          break;
        }
      for (uint64_t i = 0; i < unbound; ++i)
        b_.drop("unbound_flow", where, "flow event at a time where no slice is");
    }
    b_.count_flows(flows.size() - unbound);
    if (ac2g) b_.note("flows.ac2g_bound", ac2g);
    if (fwdbwd) b_.note("flows.fwdbwd_bound", fwdbwd);
    if (filled) b_.note("flows.correlation_filled", filled);
    if (disagreeing) b_.note("flows.correlation_disagreeing", disagreeing);
  }

  ImportBuilder& b_;
  CorrelationMap<bool> device_correlations_;  // ids that device activity carries
  std::vector<FlowEvent> flows_;
  // Open "B" events per JSON (pid, tid) track, innermost last: pending span indices.
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> open_;
  std::vector<size_t> unfinished_;   // "B" events whose "E" gave no usable end
  std::vector<MemoryEvent> memory_;  // "[memory]" instants, attributed to ops at the end
};

}  // namespace

bool convert_kineto(std::string_view json, ImportBuilder& builder, ImportStats* stats, std::string* error) {
  KinetoConverter converter(builder);
  builder.set_arg_translation(kineto_arg);
  builder.reserve_for_input(json.size());
  converter.reserve_for_input(json.size());
  ChromeDocument doc;
  if (!parse_chrome_trace(
          json, builder.source(), &doc, [&](const ChromeEvent& ev) { converter.on_event(ev); }, error,
          builder.input_padding(), builder.input_release_before()))
    return false;
  builder.set_metadata(doc);
  builder.release_input();  // nothing below refers to the text: events are spans, strings interned
  return converter.finish(doc.events, stats, error);
}

}  // namespace strata::import
