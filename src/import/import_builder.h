// Shared machinery of the importers: buffers converted spans, maps the foreign pid/tid identities
// onto Strata processes and threads, counts every dropped event by cause (stats registry,
// import.*), and finally hands everything to the model's TraceBuilder, which orders spans by their
// own timestamps (Zins et al., Algorithm 1: records that arrived late, e.g. device activity flushed
// at the end of a Kineto file, are reordered), numbers them and builds the tree, as for every format.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "core/activity_type.h"
#include "core/level.h"
#include "core/span_record.h"
#include "import/chrome_json.h"
#include "import/importer.h"
#include "trace/trace.h"
#include "trace/trace_builder.h"

namespace strata::import {

// host_pid value for spans whose process is decided at the end: device work goes to the process
// that launched it (by correlation id), else to the main process.
inline constexpr int64_t kResolveByCorrelation = INT64_MIN;
// host_pid value for spans on a named (non-numeric) track such as Kineto's "Spans": main process.
inline constexpr int64_t kMainProcess = INT64_MIN + 1;

struct PendingSpan {
  SpanRecord record;
  uint32_t attr_first = 0;
  uint32_t attr_count = 0;
  int64_t host_pid = kMainProcess;
  int64_t track_pid = 0;  // the JSON's own pid/tid identity, for binding flow events
  int64_t track_tid = 0;
};

class ImportBuilder {
 public:
  ImportBuilder(trace::TraceBuilder* builder, Format format, const std::string& source);

  trace::Trace& trace() { return *trace_; }
  const std::string& source() const { return source_; }
  // Bytes readable after the end of the JSON being converted (see ImportOptions::input_padding).
  size_t input_padding() const { return input_padding_; }
  void set_input_padding(size_t bytes) { input_padding_ = bytes; }
  // The caller's input text may be freed now (see ImportOptions::release_input).
  void set_input_release(std::function<void()> release) { release_input_ = std::move(release); }
  void release_input() {
    if (release_input_) std::exchange(release_input_, nullptr)();
  }
  // The caller's input text before an offset may be freed (see ImportOptions::release_input_before).
  void set_input_release_before(std::function<void(size_t)> release) { release_before_ = std::move(release); }
  const std::function<void(size_t)>& input_release_before() const { return release_before_; }
  // Reserves the span and attribute lists for a JSON input of `json_bytes` (Kineto writes about 250
  // bytes per event and 25 per arg), so they are not copied each time they double: the reservation is
  // address space only until used.
  void reserve_for_input(size_t json_bytes) {
    spans_.reserve(json_bytes / 256);
    attrs_.reserve(json_bytes / 24);
    advise_huge_pages(spans_.data(), spans_.capacity() * sizeof(PendingSpan));
    advise_huge_pages(attrs_.data(), attrs_.capacity() * sizeof(AttrRecord));
  }

  // A stable integer for a JSON pid/tid: integers as themselves, strings mapped to ids above 2^62.
  int64_t id_key(const JsonScalar& value);
  // A 32-bit thread id for a JSON tid (strings get synthetic ids from 0xFFFF0000 up).
  uint32_t thread_id(const JsonScalar& value);
  std::string_view key_text(int64_t key) const;  // the original string of a string key, or ""

  // Counts a dropped event by cause (the stat "import.<cause>") and remembers the first problem's
  // location.
  void drop(std::string_view cause, const ChromeEvent& event, std::string_view detail);
  // Counts something noteworthy that lost no data (the stat "import.<key>"; keys with a variable
  // part, such as unmapped_category.<category>, become the property "import.<key>").
  void note(const std::string& key, uint64_t count = 1) { notes_[key] += count; }

  // Checks ts (and dur unless instant): present, numeric, dur >= 0, end representable. Counts the
  // event as dropped by cause and returns false otherwise.
  bool check_times(const ChromeEvent& event, bool instant);

  // How a format's args become canonical attributes (core/attr_keys.h), set once by the converter:
  // appends the attributes one arg becomes to *out (renamed, or split, e.g. a [x, y, z] array into
  // three) and returns true; false keeps the arg as it is, under its own key.
  using ArgTranslation = bool (*)(const ChromeArg& arg, ImportBuilder& builder, std::vector<AttrRecord>* out);
  void set_arg_translation(ArgTranslation translation) { arg_translation_ = translation; }
  // Trace::int_attr/double_attr/string_attr for a key that is a constant (a literal, attr_keys::*):
  // its id is cached by the key's address and length, so the same few renamed keys on every event
  // are neither hashed nor compared (through Trace::int_attr that was 3-4% of a Kineto import, and
  // through key_id's text check still about 3%). The key's text must not change at its address
  // while the import runs. Same ids, interned in the same order, as through the Trace.
  AttrRecord int_attr(std::string_view key, int64_t value);
  AttrRecord double_attr(std::string_view key, double value);
  AttrRecord string_attr(std::string_view key, std::string_view value);
  // An attribute key's pool id (interned at first use); public for the key cache's tests.
  uint32_t key_id(std::string_view key);

  // Converts every JSON arg into attributes of the span being built (after begin_span()).
  void add_args(const ChromeEvent& event, std::string_view skip_key = {});
  // Merges an "E" event's args into the span its "B" opened (Chrome semantics: on a key both carry,
  // the "E" value wins).
  void merge_args(size_t span_index, const ChromeEvent& event, std::string_view skip_key = {});
  void add_attr(const AttrRecord& attr);
  // `activity`: what the span is, decided by the converter from the format's own fields.
  PendingSpan& begin_span(const ChromeEvent& event, uint8_t level, uint8_t kind, std::string_view name,
                          ActivityType activity);
  std::vector<PendingSpan>& spans() { return spans_; }
  std::vector<AttrRecord>& attrs() { return attrs_; }
  // Attributes added after the fact (e.g. flow bindings), merged when the spans are written.
  void add_late_attr(size_t span_index, const AttrRecord& attr) {
    late_attrs_.emplace_back(span_index, attr);
  }

  // A metadata event ("M": process/thread names) was consumed; it is not a span and not a drop.
  void count_metadata() { ++metadata_events_; }
  void count_flows(uint64_t bound) { flow_events_ += bound; }
  // An "E" event closed the span of its "B" (the pair is one span, counted at the "B").
  void count_end_event() { ++end_events_; }
  void count_unfinished() { ++unfinished_spans_; }

  // A counter event (ph "C"): one counter record per numeric series in args, on the application
  // level with the value in the metric "value" (the collector's strata_counter() representation).
  // Named as Perfetto names the series' track, "<name> <series>"; plain "<name>" when the series is
  // called like the counter (TensorFlow's allocators) or "value" / "metric.value" (what
  // `strata export --format chrome` writes for Strata's own counters).
  // Counts the event as dropped by cause when it has no usable time or no numeric series.
  void add_counter(const ChromeEvent& event, int64_t host_pid);
  // Counter samples an importer derived from events already counted as spans (the memory timeline
  // from Kineto's "[memory]" instants): counted as samples so the event accounting stays exact.
  void count_derived_counter_samples(uint64_t n) { counter_samples_ += n; }

  // Latest time (ts, or ts + dur) of any event seen so far: the "last seen time" that a span whose
  // end never came is extended to (kSpanFlagUnfinished).
  void observe_time(const ChromeEvent& event);
  int64_t latest_time() const { return latest_time_ns_; }

  void set_process_name(int64_t pid, std::string_view name) { process_names_[pid] = std::string(name); }
  void set_process_label(int64_t pid, std::string_view label) { process_labels_[pid] = std::string(label); }
  void set_thread_name(int64_t pid, uint32_t tid, std::string_view name) {
    thread_names_[{pid, tid}] = std::string(name);
  }
  // Top-level fields other than traceEvents, kept as "import.meta.<key>"; a Kineto
  // "deviceProperties" array also as "device.<id>.<field>" (see finish()).
  void set_metadata(const ChromeDocument& doc) {
    metadata_ = doc.metadata;
    devices_ = doc.devices;
    devices_problem_ = doc.devices_problem;
  }

  // Creates the processes, hands the spans to the TraceBuilder (which sorts and numbers them in its
  // finish()) and records the import.* stats on the main process; *stats (if given) gets a copy of
  // them. False with *error when not a single span could be made.
  bool finish(uint64_t events_read, ImportStats* stats, std::string* error);

 private:
  trace::TraceBuilder* builder_;
  trace::Trace* trace_;
  Format format_;
  std::string source_;
  size_t input_padding_ = 0;
  std::function<void()> release_input_;
  std::function<void(size_t)> release_before_;
  std::vector<PendingSpan> spans_;
  std::vector<AttrRecord> attrs_;
  std::vector<std::pair<size_t, AttrRecord>> late_attrs_;
  std::unordered_map<std::string, int64_t> string_ids_;
  std::vector<std::string> string_keys_;
  std::map<std::string, uint64_t> drops_;
  std::map<std::string, uint64_t> notes_;
  std::string first_problem_;
  uint64_t metadata_events_ = 0;
  uint64_t flow_events_ = 0;
  uint64_t end_events_ = 0;
  uint64_t counter_events_ = 0;
  uint64_t counter_samples_ = 0;
  uint64_t unfinished_spans_ = 0;
  int64_t latest_time_ns_ = INT64_MIN;
  std::vector<ChromeDevice> devices_;
  std::string devices_problem_;
  std::map<int64_t, std::string> process_names_;
  std::map<int64_t, std::string> process_labels_;
  std::map<std::pair<int64_t, uint32_t>, std::string> thread_names_;
  std::vector<std::pair<std::string, std::string>> metadata_;

  ArgTranslation arg_translation_ = nullptr;
  // An arg key's pool id: every event of a kind carries the same keys, so the id is remembered in a
  // small direct-mapped table (slot by length and three bytes) and checked against the pool's text;
  // a hit skips hashing the key. Ids are the pool's, in the order interned, as without the table.
  static constexpr uint32_t kNoKey = UINT32_MAX;
  std::array<uint32_t, 251> key_cache_ = make_key_cache();
  static constexpr std::array<uint32_t, 251> make_key_cache() {
    std::array<uint32_t, 251> a{};
    a.fill(kNoKey);
    return a;
  }
  // constant_key_id's cache: direct-mapped by address; a miss goes through key_id (text-checked).
  struct ConstantKey {
    const char* data = nullptr;
    size_t size = 0;
    uint32_t id = 0;
  };
  std::array<ConstantKey, 64> constant_keys_{};
  uint32_t constant_key_id(std::string_view key);
  std::vector<AttrRecord> arg_scratch_;
  std::optional<AttrRecord> arg_attr(const ChromeArg& arg);
  // The attributes one arg becomes (translated), in arg_scratch_.
  const std::vector<AttrRecord>& arg_attrs(const ChromeArg& arg);
  void add_rank_properties(format::Properties* properties) const;
  void add_device_properties(format::Properties* properties);
  // finish(), after the processes exist: the spans (with their late attributes) into the trace, and
  // the import's counts into the main process's stats.
  void hand_spans_to_builder(const std::unordered_map<int64_t, uint16_t>& process_of_pid);
  // The late attributes merged into attrs_ after their span's own (at most 65,535 a span; the rest
  // counted in *overflow): afterwards each span's attributes are one run of attrs_, in span order.
  void merge_late_attrs(uint64_t* overflow);
  void record_stats(stats::StatSet* out, format::Properties* properties, uint64_t events_read, uint64_t late,
                    uint64_t unresolved);
};

}  // namespace strata::import
