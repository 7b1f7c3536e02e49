#include "import/import_builder.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

#include "core/vector_growth.h"
#include "import/correlation_map.h"

namespace strata::import {

ImportBuilder::ImportBuilder(trace::TraceBuilder* builder, Format format, const std::string& source)
    : builder_(builder), trace_(&builder->trace()), format_(format), source_(source) {}

int64_t ImportBuilder::id_key(const JsonScalar& value) {
  if (value.kind == JsonScalar::kInt) return value.i;
  // A number beyond int64 ("pid": 19999999999999999990) cannot be converted (undefined behaviour,
  // and it would collide): it is kept apart by its text, like a string id.
  if (value.kind == JsonScalar::kDouble && std::isfinite(value.d) && value.d >= -0x1p63 && value.d < 0x1p63)
    return static_cast<int64_t>(value.d);
  if (value.kind != JsonScalar::kString && value.kind != JsonScalar::kDouble) return 0;
  auto [it, inserted] = string_ids_.emplace(std::string(value.text),
                                            int64_t{1} << 62 | static_cast<int64_t>(string_keys_.size()));
  if (inserted) string_keys_.emplace_back(value.text);
  return it->second;
}

uint32_t ImportBuilder::thread_id(const JsonScalar& value) {
  if (value.kind != JsonScalar::kString) return static_cast<uint32_t>(id_key(value));
  int64_t key = id_key(value);
  return 0xFFFF0000u + static_cast<uint32_t>(key & 0xFFFF);
}

std::string_view ImportBuilder::key_text(int64_t key) const {
  if (key < (int64_t{1} << 62)) return {};
  size_t index = static_cast<size_t>(key & ((int64_t{1} << 62) - 1));
  return index < string_keys_.size() ? std::string_view(string_keys_[index]) : std::string_view();
}

void ImportBuilder::drop(std::string_view cause, const ChromeEvent& event, std::string_view detail) {
  drops_["import." + std::string(cause)] += 1;
  if (first_problem_.empty())
    first_problem_ = "event " + std::to_string(event.index) + " at offset " + std::to_string(event.offset) +
                     ": " + std::string(detail);
}

bool ImportBuilder::check_times(const ChromeEvent& ev, bool instant) {
  if (!ev.ts_ns) {
    drop(ev.ts_malformed ? "malformed_ts" : "missing_ts", ev,
         "field ts missing, not a number, or beyond +-2^62 ns (146 years)");
    return false;
  }
  if (instant) return true;
  if (!ev.dur_ns) {
    drop(ev.dur_malformed ? "malformed_dur" : "missing_dur", ev,
         "field dur missing, not a number, or beyond +-2^62 ns (146 years)");
    return false;
  }
  if (*ev.dur_ns < 0) {
    drop("negative_duration", ev, "field dur is negative");
    return false;
  }
  if (*ev.ts_ns > kMaxTimeNs - *ev.dur_ns) {  // times stay within +-2^62 ns (core/span_record.h)
    drop("time_overflow", ev, "ts + dur exceeds the representable time range");
    return false;
  }
  return true;
}

void ImportBuilder::add_attr(const AttrRecord& attr) {
  PendingSpan& span = spans_.back();
  if (span.attr_count >= UINT16_MAX - 8) {  // room left for late attributes (flow bindings)
    drops_["import.attribute_limit"] += 1;
    return;
  }
  attrs_.push_back(attr);
  ++span.attr_count;
}

uint32_t ImportBuilder::key_id(std::string_view key) {
  const size_t n = key.size();
  const size_t slot =
      n == 0 ? 0
             : (n * 151 + static_cast<unsigned char>(key[0]) * 31 +
                static_cast<unsigned char>(key[n / 2]) * 7 + static_cast<unsigned char>(key[n - 1])) %
                   key_cache_.size();
  uint32_t& id = key_cache_[slot];
  if (id == kNoKey || trace_->strings.get(id) != key) id = trace_->strings.intern(key);
  return id;
}

uint32_t ImportBuilder::constant_key_id(std::string_view key) {
  const auto address = reinterpret_cast<uintptr_t>(key.data());
  ConstantKey& slot = constant_keys_[((address ^ key.size()) * 0x9E3779B97F4A7C15ull) >> 58];
  if (slot.data != key.data() || slot.size != key.size()) slot = {key.data(), key.size(), key_id(key)};
  return slot.id;
}

AttrRecord ImportBuilder::int_attr(std::string_view key, int64_t value) {
  AttrRecord a;
  a.key = constant_key_id(key);
  a.type = static_cast<uint8_t>(AttrType::kInt);
  a.value.i = value;
  return a;
}

AttrRecord ImportBuilder::double_attr(std::string_view key, double value) {
  AttrRecord a;
  a.key = constant_key_id(key);
  a.type = static_cast<uint8_t>(AttrType::kDouble);
  a.value.d = value;
  return a;
}

AttrRecord ImportBuilder::string_attr(std::string_view key, std::string_view value) {
  AttrRecord a;
  a.key = constant_key_id(key);  // the key first, as Trace::string_attr interns them
  a.type = static_cast<uint8_t>(AttrType::kString);
  a.value.u = trace_->strings.intern(value);
  return a;
}

std::optional<AttrRecord> ImportBuilder::arg_attr(const ChromeArg& arg) {
  AttrRecord a;
  switch (arg.value.kind) {
    case JsonScalar::kInt:
    case JsonScalar::kBool:
      a.type = static_cast<uint8_t>(AttrType::kInt);
      a.value.i = arg.value.i;
      break;
    case JsonScalar::kDouble:
      a.type = static_cast<uint8_t>(AttrType::kDouble);
      a.value.d = arg.value.d;
      break;
    case JsonScalar::kString:
    case JsonScalar::kRaw:
      a.type = static_cast<uint8_t>(AttrType::kString);
      a.key = key_id(arg.key);  // the key first, as Trace::string_attr interns them
      a.value.u = trace_->strings.intern(arg.value.text);
      return a;
    case JsonScalar::kAbsent:
    case JsonScalar::kNull:
      return std::nullopt;
  }
  a.key = key_id(arg.key);
  return a;
}

const std::vector<AttrRecord>& ImportBuilder::arg_attrs(const ChromeArg& arg) {
  arg_scratch_.clear();
  if (arg_translation_ != nullptr && arg_translation_(arg, *this, &arg_scratch_)) return arg_scratch_;
  arg_scratch_.clear();
  if (std::optional<AttrRecord> attr = arg_attr(arg)) arg_scratch_.push_back(*attr);
  return arg_scratch_;
}

void ImportBuilder::add_args(const ChromeEvent& event, std::string_view skip_key) {
  for (const ChromeArg& arg : event.args) {
    if (!skip_key.empty() && arg.key == skip_key) continue;
    // Most args keep their key: converted straight, without the translation's scratch list.
    arg_scratch_.clear();
    if (arg_translation_ != nullptr && arg_translation_(arg, *this, &arg_scratch_)) {
      for (const AttrRecord& attr : arg_scratch_) add_attr(attr);
    } else if (std::optional<AttrRecord> attr = arg_attr(arg)) {
      add_attr(*attr);
    }
  }
}

void ImportBuilder::merge_args(size_t span_index, const ChromeEvent& event, std::string_view skip_key) {
  PendingSpan& span = spans_[span_index];
  for (const ChromeArg& arg : event.args) {
    if (!skip_key.empty() && arg.key == skip_key) continue;
    for (const AttrRecord& attr : arg_attrs(arg)) {
      // The span's own attributes are still contiguous in attrs_: a key the "B" had is overwritten.
      bool replaced = false;
      for (uint32_t k = span.attr_first; k < span.attr_first + span.attr_count && !replaced; ++k)
        if (attrs_[k].key == attr.key) {
          attrs_[k] = attr;
          replaced = true;
        }
      if (replaced) continue;
      if (span.attr_count >= UINT16_MAX - 8) {
        drops_["import.attribute_limit"] += 1;
        continue;
      }
      add_late_attr(span_index, attr);
    }
  }
}

void ImportBuilder::observe_time(const ChromeEvent& event) {
  if (!event.ts_ns) return;
  int64_t t = *event.ts_ns;
  if (event.dur_ns && *event.dur_ns > 0 && t <= kMaxTimeNs - *event.dur_ns) t += *event.dur_ns;
  latest_time_ns_ = std::max(latest_time_ns_, t);
}

void ImportBuilder::add_counter(const ChromeEvent& event, int64_t host_pid) {
  if (!check_times(event, /*instant=*/true)) return;
  size_t numeric = 0, other = 0;
  for (const ChromeArg& arg : event.args)
    (arg.value.kind == JsonScalar::kInt || arg.value.kind == JsonScalar::kDouble ? numeric : other) += 1;
  if (numeric == 0) {
    drop("counter_without_values", event, "counter event (ph C) without a numeric value in args");
    return;
  }
  if (other) note("counter_non_numeric_series", other);
  std::string prefix(event.name);
  // Counters with the same name but different ids are different counters (Chrome, Perfetto).
  if (event.id.kind != JsonScalar::kAbsent && event.id.kind != JsonScalar::kNull && !event.id.text.empty())
    prefix += " id: " + std::string(event.id.text);
  for (const ChromeArg& arg : event.args) {
    if (arg.value.kind != JsonScalar::kInt && arg.value.kind != JsonScalar::kDouble) continue;
    std::string name = prefix;
    if (arg.key != "value" && arg.key != "metric.value" && arg.key != event.name)
      name += (name.empty() ? "" : " ") + std::string(arg.key);
    PendingSpan& span = begin_span(event, static_cast<uint8_t>(Level::kApplication),
                                   static_cast<uint8_t>(SpanKind::kCounter), name, ActivityType::kCounter);
    span.record.end_ns = span.record.start_ns;  // a sample, whatever dur the event carried
    span.host_pid = host_pid;
    add_attr(trace_->metric("value", arg.value.d));
  }
  ++counter_events_;
  counter_samples_ += numeric;
}

namespace {

// An integer member of a flat JSON object's text ({"backend": "nccl", "rank": 3, "world_size": 8});
// nullopt when absent or not an integer.
std::optional<int64_t> json_int_member(std::string_view object, std::string_view key) {
  const std::string quoted = "\"" + std::string(key) + "\"";
  for (size_t at = object.find(quoted); at != std::string_view::npos; at = object.find(quoted, at + 1)) {
    size_t i = at + quoted.size();
    while (i < object.size() && (object[i] == ' ' || object[i] == '\t' || object[i] == '\n')) ++i;
    if (i >= object.size() || object[i] != ':') continue;
    ++i;
    while (i < object.size() && (object[i] == ' ' || object[i] == '\t' || object[i] == '\n')) ++i;
    int64_t v = 0;
    auto [ptr, ec] = std::from_chars(object.data() + i, object.data() + object.size(), v);
    if (ec != std::errc()) return std::nullopt;
    return v;
  }
  return std::nullopt;
}

}  // namespace

// Kineto writes the job's rank as {"distributedInfo": {"backend", "rank", "world_size"}}: the rank
// identity strata record writes (rank, world_size) under the same keys.
void ImportBuilder::add_rank_properties(format::Properties* properties) const {
  for (const auto& [key, value] : metadata_) {
    if (key != "distributedInfo") continue;
    const auto rank = json_int_member(value, "rank");
    const auto world = json_int_member(value, "world_size");
    if (rank && *rank >= 0) properties->set_int("rank", *rank);
    if (world && *world > 0) properties->set_int("world_size", *world);
    if (!rank || *rank < 0)
      properties->set("import.rank_problem", "distributedInfo has no integer rank >= 0; rank not imported");
  }
}

void ImportBuilder::add_device_properties(format::Properties* properties) {
  // Keyed by the device's own "id" (the CUDA/HIP ordinal the kernels' "device" refers to); by its
  // position when the id is missing, not a small integer, or repeated.
  std::vector<bool> taken;
  uint64_t renumbered = 0;
  for (size_t position = 0; position < devices_.size(); ++position) {
    const ChromeDevice& device = devices_[position];
    int64_t id = -1;
    if (const std::string* text = device.field("id")) {
      JsonScalar s;
      s.kind = JsonScalar::kString;
      s.text = *text;
      id = s.as_int().value_or(-1);
    }
    if (id < 0 || id >= int64_t{kNoDevice} || (static_cast<size_t>(id) < taken.size() && taken[id])) {
      id = static_cast<int64_t>(position);
      while (static_cast<size_t>(id) < taken.size() && taken[id]) ++id;
      ++renumbered;
    }
    if (static_cast<size_t>(id) >= taken.size()) taken.resize(static_cast<size_t>(id) + 1, false);
    taken[static_cast<size_t>(id)] = true;
    const std::string prefix = "device." + std::to_string(id) + ".";
    for (const auto& [key, value] : device.fields)
      if (key != "id") properties->set(prefix + key, value);
  }
  if (!devices_.empty()) properties->set_int("import.devices", static_cast<int64_t>(devices_.size()));
  if (renumbered) properties->set_int("import.devices_renumbered", static_cast<int64_t>(renumbered));
  if (!devices_problem_.empty()) properties->set("import.devices_problem", devices_problem_);
}

PendingSpan& ImportBuilder::begin_span(const ChromeEvent& event, uint8_t level, uint8_t kind,
                                       std::string_view name, ActivityType activity) {
  PendingSpan& span = spans_.emplace_back();
  span.record.start_ns = event.ts_ns.value_or(0);
  span.record.end_ns = span.record.start_ns;
  // check_times() vetted dur for complete events; an instant's or counter's stray dur must not
  // overflow or end before the start.
  if (event.dur_ns && *event.dur_ns > 0 && span.record.start_ns <= kMaxTimeNs - *event.dur_ns)
    span.record.end_ns += *event.dur_ns;
  span.record.level = level;
  span.record.kind = kind;
  span.record.activity = static_cast<uint8_t>(activity);
  span.record.clock = static_cast<uint8_t>(ClockDomain::kImported);
  span.record.name = trace_->strings.intern(name);
  span.record.tid = thread_id(event.tid);
  span.attr_first = static_cast<uint32_t>(attrs_.size());
  span.track_pid = id_key(event.pid);
  span.track_tid = id_key(event.tid);
  return span;
}

bool ImportBuilder::finish(uint64_t events_read, ImportStats* stats, std::string* error) {
  if (spans_.empty()) {
    std::string why;
    for (const auto& [cause, count] : drops_) why += " " + cause + "=" + std::to_string(count);
    *error = source_ + ": no usable " + std::string(format_name(format_)) + " events among " +
             std::to_string(events_read) + " read" + (why.empty() ? "" : " (dropped:" + why + ")") +
             (first_problem_.empty() ? "" : "; first problem: " + first_problem_) +
             "; check that the file is a complete profiler trace";
    return false;
  }
  // Host processes in order of first appearance; the main one holds the most spans.
  std::vector<int64_t> pids;
  std::unordered_map<int64_t, uint64_t> per_pid;
  for (const PendingSpan& s : spans_)
    if (s.host_pid != kResolveByCorrelation && s.host_pid != kMainProcess && per_pid[s.host_pid]++ == 0)
      pids.push_back(s.host_pid);
  if (pids.empty()) pids.push_back(0);  // device-only input: one placeholder process
  int64_t main_pid = pids.front();
  for (int64_t pid : pids)
    if (per_pid[pid] > per_pid[main_pid]) main_pid = pid;
  if (trace_->processes.size() + pids.size() > UINT16_MAX) {
    *error =
        source_ + ": " + std::to_string(pids.size()) + " processes; Strata holds at most 65535 per trace";
    return false;
  }
  CorrelationMap<int64_t> pid_by_correlation;
  for (const PendingSpan& s : spans_)
    if (s.record.correlation_id != 0 && s.host_pid != kResolveByCorrelation && s.host_pid != kMainProcess)
      pid_by_correlation.emplace(s.record.correlation_id, s.host_pid);

  std::unordered_map<int64_t, uint16_t> process_of_pid;
  for (int64_t pid : pids) {
    trace::Process p;
    p.pid = pid;
    p.ended_cleanly = true;
    p.stream_id = (uint64_t{0x1A} << 56) | (trace_->processes.size() + 1);
    if (auto it = process_names_.find(pid); it != process_names_.end()) p.command_line = it->second;
    p.properties.set("writer", "strata import");
    p.properties.set("import.format", std::string(format_name(format_)));
    p.properties.set("import.source", source_);
    if (auto it = process_labels_.find(pid); it != process_labels_.end())
      p.properties.set("import.labels", it->second);
    for (const auto& [key, value] : thread_names_)
      if (key.first == pid || (pid == main_pid && key.first == kMainProcess))
        p.thread_names[key.second] = value;
    add_rank_properties(&p.properties);  // every process of the file belongs to its rank
    if (pid == main_pid) {
      for (const auto& [key, value] : metadata_) p.properties.set("import.meta." + key, value);
      if (!first_problem_.empty()) p.properties.set("import.first_problem", first_problem_);
      for (const auto& [key, value] : metadata_)
        if (key == "host_name") p.host = value;
      add_device_properties(&p.properties);
    }
    process_of_pid[pid] = trace_->add_process(std::move(p));
  }
  uint64_t unresolved = 0;
  for (PendingSpan& s : spans_) {
    if (s.host_pid == kMainProcess) {
      s.host_pid = main_pid;
    } else if (s.host_pid == kResolveByCorrelation) {
      if (const int64_t* pid = pid_by_correlation.find(s.record.correlation_id)) {
        s.host_pid = *pid;
      } else {
        s.host_pid = main_pid;
        ++unresolved;
      }
    }
    s.record.process = process_of_pid[s.host_pid];
  }
  pid_by_correlation = {};  // not kept through the hand-off, the peak of memory
  // Zins Algorithm 1: records that arrived after a later-starting one are counted here; the
  // TraceBuilder orders everything by its own time, once, and numbers the spans in that order.
  uint64_t late = 0;
  int64_t latest = INT64_MIN;
  for (const PendingSpan& s : spans_) {
    if (s.record.start_ns < latest) ++late;
    latest = std::max(latest, s.record.start_ns);
  }
  hand_spans_to_builder(process_of_pid);
  trace::Process& main = trace_->processes[process_of_pid[main_pid]];
  record_stats(&main.stats, &main.properties, events_read, late, unresolved);
  if (stats) *stats = main.stats;
  trace_->invalidate_structure();
  return true;
}

void ImportBuilder::merge_late_attrs(uint64_t* overflow) {
  std::stable_sort(late_attrs_.begin(), late_attrs_.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<uint32_t> late_begin(spans_.size() + 1, 0);
  for (const auto& [index, attr] : late_attrs_) ++late_begin[index + 1];
  std::partial_sum(late_begin.begin(), late_begin.end(), late_begin.begin());
  // A record holds at most 65,535 attributes (its attr_count is 16 bits): late ones beyond are dropped
  // and counted.
  std::vector<uint32_t> kept(spans_.size());
  bool in_order = true;
  size_t own = 0, total = 0;
  for (size_t index = 0; index < spans_.size(); ++index) {
    const PendingSpan& s = spans_[index];
    const uint32_t late = late_begin[index + 1] - late_begin[index];
    kept[index] = std::min<uint32_t>(late, UINT16_MAX - std::min<uint32_t>(s.attr_count, UINT16_MAX));
    *overflow += late - kept[index];
    in_order = in_order && s.attr_first == own;
    own += s.attr_count;
    total += s.attr_count + kept[index];
  }
  auto place_late = [&](size_t index, AttrRecord* at) {
    for (uint32_t k = 0; k < kept[index]; ++k) at[k] = late_attrs_[late_begin[index] + k].second;
  };
  if (in_order && own == attrs_.size()) {
    // Each span's attributes are one run of attrs_, in span order (add_attr appends to the last
    // span): the late ones are merged in place, from the back. A span's new place is never before
    // its old one, so nothing not yet moved is overwritten.
    attrs_.resize(total);
    size_t end = total;
    for (size_t index = spans_.size(); index-- > 0;) {
      PendingSpan& s = spans_[index];
      const size_t first = end - kept[index] - s.attr_count;
      place_late(index, attrs_.data() + first + s.attr_count);
      std::copy_backward(attrs_.begin() + s.attr_first, attrs_.begin() + s.attr_first + s.attr_count,
                         attrs_.begin() + static_cast<ptrdiff_t>(first + s.attr_count));
      s.attr_first = static_cast<uint32_t>(first);
      s.attr_count = static_cast<uint32_t>(s.attr_count + kept[index]);
      end = first;
    }
  } else {
    std::vector<AttrRecord> merged(total);
    size_t at = 0;
    for (size_t index = 0; index < spans_.size(); ++index) {
      PendingSpan& s = spans_[index];
      std::copy_n(attrs_.begin() + s.attr_first, s.attr_count, merged.begin() + static_cast<ptrdiff_t>(at));
      place_late(index, merged.data() + at + s.attr_count);
      s.attr_first = static_cast<uint32_t>(at);
      s.attr_count = static_cast<uint32_t>(s.attr_count + kept[index]);
      at += s.attr_count;
    }
    attrs_.swap(merged);
  }
  std::vector<std::pair<size_t, AttrRecord>>().swap(late_attrs_);
}

void ImportBuilder::hand_spans_to_builder(const std::unordered_map<int64_t, uint16_t>& process_of_pid) {
  uint64_t drops_attr_overflow = 0;
  merge_late_attrs(&drops_attr_overflow);
  // attrs_ is now the attribute column of these spans, in their order: it becomes the trace's own
  // (moved, not copied, into an empty trace; appended when merging into one that has spans).
  trace::Trace& t = *trace_;
  const size_t base = t.attrs.size();
  if (base == 0) {
    t.attrs = std::move(attrs_);
  } else {
    t.attrs.insert(t.attrs.end(), attrs_.begin(), attrs_.end());
  }
  std::vector<AttrRecord>().swap(attrs_);
  reserve_more(t.spans, spans_.size());  // files imported into one trace: geometric growth
  reserve_more(t.attr_begin, spans_.size() + 1);
  t.attr_begin.pop_back();  // the end of the column, put back below
  for (const PendingSpan& s : spans_) {
    SpanRecord record = s.record;
    record.span_id = 0;  // numbered by the TraceBuilder in time order
    record.attr_count = static_cast<uint16_t>(s.attr_count);
    t.spans.push_back(record);
    t.attr_begin.push_back(static_cast<uint32_t>(base + s.attr_first));
    t.processes[record.process].span_count += 1;
  }
  t.attr_begin.push_back(static_cast<uint32_t>(t.attrs.size()));
  t.invalidate_structure();
  for (const auto& [pid, process] : process_of_pid) builder_->number_spans_of(process);
  if (drops_attr_overflow) drops_["import.attribute_limit"] += drops_attr_overflow;
}

// The import's counts, on the main process: stats of the registry (and, for a cause or note this
// version has not registered, the on-disk key, so nothing is lost).
void ImportBuilder::record_stats(stats::StatSet* out, format::Properties* properties, uint64_t events_read,
                                 uint64_t late, uint64_t unresolved) {
  using stats::Stat;
  stats::StatSet& st = *out;
  for (const auto& [cause, count] : drops_) {
    if (std::optional<Stat> stat = stats::find(cause))
      st.add(*stat, count);
    else
      st.add_unregistered("dropped." + cause, count);
  }
  for (const auto& [key, count] : notes_) {
    std::optional<Stat> stat = stats::find("import." + key);
    if (stat && stats::info(*stat).disk == stats::Disk::kProcess)
      st.add(*stat, count);
    else
      properties->set_int("import." + key, static_cast<int64_t>(count));
  }
  st.add(Stat::kImportEventsRead, events_read);
  st.add(Stat::kImportSpansWritten, spans_.size());
  st.add(Stat::kImportLateRecordsReordered, late);
  st.add(Stat::kImportMetadataEvents, metadata_events_);
  st.add(Stat::kImportFlowEvents, flow_events_);
  st.add(Stat::kImportDeviceSpansWithoutLaunch, unresolved);
  st.add(Stat::kImportEndEvents, end_events_);
  st.add(Stat::kImportCounterEvents, counter_events_);
  st.add(Stat::kImportCounterSamples, counter_samples_);
  st.add(Stat::kImportUnfinishedSpans, unfinished_spans_);
}

}  // namespace strata::import
