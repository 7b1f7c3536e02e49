// Chrome trace phases beyond "X": "B"/"E" duration pairs, "C" counters, and Kineto's top-level
// deviceProperties. Every expected number is written out from the small JSON documents below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>

#include "import/chrome_json.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/span_tree.h"

namespace strata::import {
namespace {

using strata::testing::source_path;

bool import_json(const std::string& json, trace::Trace* t, ImportStats* stats, std::string* error) {
  ImportOptions opts;
  opts.format = "kineto";
  return import_buffer_with_stats(json, "test.json", t, error, opts, stats);
}

int find_span(const trace::Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == name) return static_cast<int>(i);
  return -1;
}

const trace::Process& main_process(const trace::Trace& t) {
  const trace::Process* best = &t.processes.at(0);
  for (const trace::Process& p : t.processes)
    if (p.stats.get(stats::Stat::kImportEventsRead)) best = &p;
  return *best;
}

TEST(ChromePhases, BeginEndPairsPerTrack) {
  // tid 1: outer [10, 20] holds inner [12, 15]; tid 2 interleaves its own pair [11, 13].
  // tid 3: an E with nothing open. tid 4: a B without ts, then its E. tid 5: a B never closed.
  // tid 6: an E before its B. The last X ends at 55 us, the latest time in the file... until the
  // B at 60 on tid 6.
  const std::string json = R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "B", "cat": "cpu_op", "name": "outer", "pid": 1, "tid": 1, "ts": 10},
    {"ph": "B", "cat": "user_annotation", "name": "other", "pid": 1, "tid": 2, "ts": 11},
    {"ph": "B", "cat": "cpu_op", "name": "inner", "pid": 1, "tid": 1, "ts": 12, "args": {"a": 1, "k": "from B"}},
    {"ph": "E", "name": "other", "pid": 1, "tid": 2, "ts": 13},
    {"ph": "E", "pid": 1, "tid": 1, "ts": 15, "args": {"k": "from E", "extra": 2}},
    {"ph": "E", "name": "not_outer", "pid": 1, "tid": 1, "ts": 20},
    {"ph": "E", "pid": 1, "tid": 3, "ts": 21},
    {"ph": "B", "cat": "cpu_op", "name": "no_ts", "pid": 1, "tid": 4},
    {"ph": "E", "pid": 1, "tid": 4, "ts": 30},
    {"ph": "B", "cat": "cpu_op", "name": "open", "pid": 1, "tid": 5, "ts": 40},
    {"ph": "X", "cat": "cpu_op", "name": "last", "pid": 1, "tid": 1, "ts": 50, "dur": 5},
    {"ph": "B", "cat": "cpu_op", "name": "reversed", "pid": 1, "tid": 6, "ts": 60},
    {"ph": "E", "pid": 1, "tid": 6, "ts": 58}
  ]})";
  trace::Trace t;
  ImportStats stats;
  std::string error;
  ASSERT_TRUE(import_json(json, &t, &stats, &error)) << error;
  EXPECT_EQ(stats.get(stats::Stat::kImportEventsRead), 13u);
  EXPECT_EQ(stats.get(stats::Stat::kImportEndEvents), 3u);        // inner, other, outer
  EXPECT_EQ(stats.get(stats::Stat::kImportUnfinishedSpans), 2u);  // open, reversed
  EXPECT_EQ(stats.get(stats::Stat::kImportSpansWritten), 6u);     // outer, other, inner, open, last, reversed
  EXPECT_EQ(dropped_events(stats), 4u);
  EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));
  const trace::Process& p = main_process(t);
  const std::map<std::string, uint64_t> drops = {{"import.end_before_begin", 1},
                                                 {"import.end_of_dropped_begin", 1},
                                                 {"import.missing_ts", 1},
                                                 {"import.unmatched_end", 1}};
  EXPECT_EQ(strata::testing::drops_of(p), drops);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportEndNameMismatch), 1u);  // "not_outer" closed "outer"
  EXPECT_EQ(p.stats.get(stats::Stat::kImportEndEvents), 3u);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportUnfinishedSpans), 2u);

  int outer = find_span(t, "outer"), inner = find_span(t, "inner"), other = find_span(t, "other");
  int open = find_span(t, "open"), reversed = find_span(t, "reversed");
  ASSERT_GE(outer, 0);
  ASSERT_GE(inner, 0);
  ASSERT_GE(other, 0);
  ASSERT_GE(open, 0);
  ASSERT_GE(reversed, 0);
  EXPECT_EQ(t.spans[outer].start_ns, 10000);
  EXPECT_EQ(t.spans[outer].end_ns, 20000);
  EXPECT_EQ(t.spans[inner].start_ns, 12000);
  EXPECT_EQ(t.spans[inner].end_ns, 15000);
  EXPECT_EQ(t.spans[other].start_ns, 11000);
  EXPECT_EQ(t.spans[other].end_ns, 13000);
  EXPECT_EQ(t.spans[outer].level, static_cast<uint8_t>(Level::kLayer));  // mapped like "X"
  EXPECT_EQ(t.spans[other].level, static_cast<uint8_t>(Level::kModel));
  EXPECT_EQ(t.spans[outer].flags & kSpanFlagUnfinished, 0);
  // Args of B and E merged; on a key both carry, E wins.
  EXPECT_EQ(t.attr_value_string(*t.find_attr(inner, "k")), "from E");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(inner, "a")), "1");
  EXPECT_EQ(t.attr_value_string(*t.find_attr(inner, "extra")), "2");
  // Never closed: extended to the latest time in the file (the B at 60 us), flagged unfinished.
  EXPECT_EQ(t.spans[open].start_ns, 40000);
  EXPECT_EQ(t.spans[open].end_ns, 60000);
  EXPECT_NE(t.spans[open].flags & kSpanFlagUnfinished, 0);
  EXPECT_NE(t.spans[reversed].flags & kSpanFlagUnfinished, 0);
  EXPECT_EQ(t.spans[reversed].end_ns, 60000);

  trace::SpanTree tree = trace::build_span_tree(t);
  EXPECT_EQ(tree.parent(static_cast<size_t>(inner)), outer);
}

TEST(ChromePhases, CountersBecomeCounterSamples) {
  const std::string json = R"({"schemaVersion": 1, "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 10},
    {"ph": "C", "name": "Memory", "pid": 1, "ts": 5, "args": {"Allocated": 100, "Reserved": 200.5, "unit": "B"}},
    {"ph": "C", "name": "queue", "pid": 1, "ts": 6, "args": {"value": 3}},
    {"ph": "C", "name": "ctr", "id": 7, "pid": 1, "ts": 6, "args": {"ctr": 1}},
    {"ph": "C", "name": "words", "pid": 1, "ts": 7, "args": {"state": "busy"}},
    {"ph": "C", "name": "Memory", "pid": 1, "args": {"Allocated": 1}}
  ]})";
  trace::Trace t;
  ImportStats stats;
  std::string error;
  ASSERT_TRUE(import_json(json, &t, &stats, &error)) << error;
  EXPECT_EQ(stats.get(stats::Stat::kImportCounterEvents), 3u);
  EXPECT_EQ(stats.get(stats::Stat::kImportCounterSamples), 4u);
  EXPECT_EQ(stats.get(stats::Stat::kImportSpansWritten), 5u);
  EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));
  const trace::Process& p = main_process(t);
  const std::map<std::string, uint64_t> drops = {{"import.counter_without_values", 1},
                                                 {"import.missing_ts", 1}};
  EXPECT_EQ(strata::testing::drops_of(p), drops);
  EXPECT_EQ(p.stats.get(stats::Stat::kImportCounterNonNumericSeries), 1u);  // "unit": "B"
  struct Expected {
    const char* name;
    int64_t ts_ns;
    double value;
  };
  for (const Expected& e : {Expected{"Memory Allocated", 5000, 100}, Expected{"Memory Reserved", 5000, 200.5},
                            Expected{"queue", 6000, 3}, Expected{"ctr id: 7", 6000, 1}}) {
    int i = find_span(t, e.name);
    ASSERT_GE(i, 0) << e.name;
    const SpanRecord& s = t.spans[static_cast<size_t>(i)];
    EXPECT_EQ(s.kind, static_cast<uint8_t>(SpanKind::kCounter)) << e.name;
    EXPECT_EQ(s.level, static_cast<uint8_t>(Level::kApplication)) << e.name;
    EXPECT_EQ(s.start_ns, e.ts_ns) << e.name;
    EXPECT_EQ(s.end_ns, e.ts_ns) << e.name;
    auto value = t.find_attr(static_cast<size_t>(i), "value");
    ASSERT_TRUE(value) << e.name;
    EXPECT_EQ(value->type, static_cast<uint8_t>(AttrType::kMetric));
    EXPECT_DOUBLE_EQ(value->value.d, e.value) << e.name;
  }
}

TEST(ChromePhases, DevicePropertiesBecomeProcessProperties) {
  const std::string json = R"({"schemaVersion": 1, "deviceProperties": [
      {"id": 0, "name": "NVIDIA A100-SXM4-80GB", "totalGlobalMem": 85899345920, "computeMajor": 8,
       "computeMinor": 0, "numSms": 108, "maxThreadsPerBlock": 1024},
      {"id": 1, "name": "Tesla V100-SXM2-32GB", "computeMajor": 7, "computeMinor": 0, "numSms": 80, "ecc": true}
    ], "traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 10}
  ]})";
  trace::Trace t;
  ImportStats stats;
  std::string error;
  ASSERT_TRUE(import_json(json, &t, &stats, &error)) << error;
  const format::Properties& props = main_process(t).properties;
  EXPECT_EQ(props.get("device.0.name"), "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(props.get_int("device.0.totalGlobalMem"), 85899345920);
  EXPECT_EQ(props.get_int("device.0.computeMajor"), 8);
  EXPECT_EQ(props.get_int("device.0.numSms"), 108);
  EXPECT_EQ(props.get_int("device.0.maxThreadsPerBlock"), 1024);
  EXPECT_EQ(props.get("device.1.name"), "Tesla V100-SXM2-32GB");
  EXPECT_EQ(props.get("device.1.ecc"), "true");
  EXPECT_FALSE(props.get("device.0.id"));
  EXPECT_EQ(props.get_int("import.devices"), 2);
  EXPECT_FALSE(props.get("import.devices_problem"));
  EXPECT_TRUE(props.get("import.meta.deviceProperties"));  // the raw JSON, as before
}

TEST(ChromePhases, BadDevicePropertiesNameOffsetAndField) {
  struct Case {
    const char* devices;
    int64_t imported;
    const char* needle;
  };
  for (const Case& c : {Case{"5", 0, "field deviceProperties is not an array"},
                        Case{R"([1, {"id": 0, "name": "x"}])", 1, "element 0 is not an object"},
                        Case{R"([{"id": 3, "name": "a"}, {"id": 3, "name": "b"}])", 2, ""}}) {
    const std::string json = std::string(R"({"schemaVersion": 1, "deviceProperties": )") + c.devices +
                             R"(, "traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "op", "pid": 1, "tid": 1, "ts": 1, "dur": 1}]})";
    trace::Trace t;
    ImportStats stats;
    std::string error;
    ASSERT_TRUE(import_json(json, &t, &stats, &error)) << error;  // the events do not depend on it
    const format::Properties& props = main_process(t).properties;
    EXPECT_EQ(props.get_int("import.devices").value_or(0), c.imported) << c.devices;
    if (*c.needle) {
      auto problem = props.get("import.devices_problem");
      ASSERT_TRUE(problem) << c.devices;
      EXPECT_NE(problem->find("test.json: offset "), std::string::npos) << *problem;
      EXPECT_NE(problem->find(c.needle), std::string::npos) << *problem;
      EXPECT_EQ(problem->find('\n'), std::string::npos);
    } else {
      // A repeated id: the second device is keyed by its position instead, and that is counted.
      EXPECT_EQ(props.get("device.3.name"), "a");
      EXPECT_EQ(props.get("device.1.name"), "b");
      EXPECT_EQ(props.get_int("import.devices_renumbered"), 1);
    }
  }
}

TEST(ChromePhases, KinetoShapedFixtureNestsAndLinks) {
  trace::Trace t;
  ImportStats stats;
  std::string error;
  ASSERT_TRUE(import_trace_with_stats(source_path("tests/import/data/kineto_phases.json"), &t, &error, {}, &stats))
      << error;
  EXPECT_EQ(strata::testing::imported_format(t), "kineto");
  EXPECT_EQ(stats.get(stats::Stat::kImportEventsRead), 11u);
  EXPECT_EQ(stats.get(stats::Stat::kImportSpansWritten),
            8u);  // step, linear, launch, kernel, mark, cut_short + 2 counter samples
  EXPECT_EQ(stats.get(stats::Stat::kImportEndEvents), 2u);
  EXPECT_EQ(stats.get(stats::Stat::kImportCounterEvents), 1u);
  EXPECT_EQ(stats.get(stats::Stat::kImportCounterSamples), 2u);
  EXPECT_EQ(stats.get(stats::Stat::kImportUnfinishedSpans), 1u);
  EXPECT_EQ(stats.get(stats::Stat::kImportMetadataEvents), 1u);
  EXPECT_EQ(dropped_events(stats), 1u);  // the "E" on tid 202
  EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));
  EXPECT_EQ(t.total_drops(), 1u);
  int step = find_span(t, "ProfilerStep#0"), linear = find_span(t, "aten::linear"),
      launch = find_span(t, "cudaLaunchKernel"), kernel = find_span(t, "gemm_kernel"),
      cut = find_span(t, "aten::cut_short");
  ASSERT_GE(step, 0);
  ASSERT_GE(linear, 0);
  ASSERT_GE(launch, 0);
  ASSERT_GE(kernel, 0);
  ASSERT_GE(cut, 0);
  EXPECT_EQ(t.spans[step].level, static_cast<uint8_t>(Level::kModel));
  EXPECT_EQ(t.spans[step].end_ns, 200000);
  EXPECT_EQ(t.spans[linear].end_ns, 140000);
  EXPECT_TRUE(t.find_attr(linear, attr_keys::kShapes));  // Kineto's "Input Dims"
  EXPECT_TRUE(t.find_attr(linear, "Output Dims"));
  EXPECT_EQ(t.spans[cut].end_ns, 200000);  // the latest time in the file
  EXPECT_NE(t.spans[cut].flags & kSpanFlagUnfinished, 0);
  EXPECT_EQ(t.spans[kernel].device, 1);
  trace::SpanTree tree = trace::build_span_tree(t);
  EXPECT_EQ(tree.parent(kernel), launch);
  EXPECT_EQ(tree.parent(launch), linear);
  EXPECT_EQ(tree.parent(linear), step);
  EXPECT_GE(find_span(t, "[memory] Total Allocated"), 0);
  EXPECT_GE(find_span(t, "[memory] Total Reserved"), 0);
  EXPECT_EQ(main_process(t).properties.get("device.1.name"), "NVIDIA A100-SXM4-40GB");
}

// The real traces: what deviceProperties says, checked against the decompressed text.
TEST(ChromePhases, RealTracesCarryTheirDeviceNames) {
  struct Case {
    const char* file;
    const char* device_name;
  };
  for (const Case& c : {Case{"tests/data/kineto/a100_alexnet_train.json.gz", "NVIDIA A100-PG509-200"},
                        Case{"tests/data/kineto/v100_train_rank0.json.gz", "Tesla V100-SXM2-32GB"},
                        Case{"tests/data/kineto/mi250_train.json.gz", "AMD Radeon Graphics"}}) {
    const std::string path = source_path(c.file);
    const std::string text = strata::testing::gunzip_file(path);
    ASSERT_FALSE(text.empty()) << c.file;
    trace::Trace t;
    ImportStats stats;
    std::string error;
    ASSERT_TRUE(import_trace_with_stats(path, &t, &error, {}, &stats)) << error;
    EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead)) << c.file;
    EXPECT_EQ(stats.get(stats::Stat::kImportEndEvents) + stats.get(stats::Stat::kImportCounterEvents) +
                  stats.get(stats::Stat::kImportUnfinishedSpans),
              0u)
        << c.file;
    const format::Properties& props = main_process(t).properties;
    // One device per "computeMajor" in the text (each deviceProperties element has one).
    EXPECT_EQ(props.get_int("import.devices"),
              static_cast<int64_t>(strata::testing::count_occurrences(text, "\"computeMajor\"")))
        << c.file;
    EXPECT_EQ(props.get("device.0.name"), c.device_name) << c.file;
    EXPECT_TRUE(props.get_int("device.0.numSms")) << c.file;
    EXPECT_TRUE(props.get_int("device.0.totalGlobalMem")) << c.file;
    EXPECT_FALSE(props.get("import.devices_problem")) << c.file;
  }
}

}  // namespace
}  // namespace strata::import

namespace strata::import {
namespace {

void append_json_string(std::string* out, std::string_view s) {
  out->push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", static_cast<unsigned>(c));
      *out += buf;
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

void append_scalar(std::string* out, const JsonScalar& v) {
  switch (v.kind) {
    case JsonScalar::kString:
      append_json_string(out, v.text);
      break;
    case JsonScalar::kBool:
      *out += v.i ? "true" : "false";
      break;
    case JsonScalar::kInt:
    case JsonScalar::kDouble:
    case JsonScalar::kRaw:
      *out += v.text;
      break;
    case JsonScalar::kNull:
    case JsonScalar::kAbsent:
      *out += "null";
      break;
  }
}

std::string us_text(int64_t ns) {  // exact: ns -> "us.nnn"
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  return buf;
}

struct Slice {
  std::string head;  // "ph" left out: "cat", "name", "pid", "tid", "args"
  std::string track;  // pid and tid as JSON
  int64_t ts = 0, dur = 0;
};

// Keeps the slices that nest properly on their track: B/E pairs cannot express two slices that
// partly overlap (the A100 trace has "Stream Sync" spans that start inside a memcpy on the same
// stream and end after it), so a slice that would cross an enclosing one is left out of both
// encodings.
size_t keep_nested(std::vector<Slice>* slices) {
  std::vector<size_t> order(slices->size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  const auto& s = *slices;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    if (s[a].track != s[b].track) return s[a].track < s[b].track;
    if (s[a].ts != s[b].ts) return s[a].ts < s[b].ts;
    return s[a].dur > s[b].dur;
  });
  std::vector<bool> keep(s.size(), true);
  std::vector<size_t> open;
  for (size_t k = 0; k < order.size(); ++k) {
    const Slice& x = s[order[k]];
    if (k > 0 && s[order[k - 1]].track != x.track) open.clear();
    while (!open.empty() && s[open.back()].ts + s[open.back()].dur <= x.ts) open.pop_back();
    if (!open.empty() && x.ts + x.dur > s[open.back()].ts + s[open.back()].dur) {
      keep[order[k]] = false;
      continue;
    }
    open.push_back(order[k]);
  }
  std::vector<Slice> kept;
  for (size_t i = 0; i < s.size(); ++i)
    if (keep[i]) kept.push_back(s[i]);
  size_t left_out = s.size() - kept.size();
  *slices = std::move(kept);
  return left_out;
}

// Every "X" event of a real trace written back twice: as "X" events, and as "B"/"E" pairs in time
// order (at equal times ends before begins, inner ends first, outer begins first). Both imports must
// give the same spans.
void check_begin_end_equivalence(const std::string& file) {
  SCOPED_TRACE(file);
  const std::string text = strata::testing::gunzip_file(source_path(file));
  ASSERT_FALSE(text.empty());
  std::vector<Slice> slices;
  ChromeDocument doc;
  std::string error;
  ASSERT_TRUE(parse_chrome_trace(
      text, file, &doc,
      [&](const ChromeEvent& ev) {
        if (ev.ph != "X" || !ev.ts_ns || !ev.dur_ns || *ev.ts_ns < 0 || *ev.dur_ns < 0) return;
        Slice s;
        s.head = "\"cat\": ";
        append_json_string(&s.head, ev.cat);
        s.head += ", \"name\": ";
        append_json_string(&s.head, ev.name);
        s.head += ", \"pid\": ";
        append_scalar(&s.head, ev.pid);
        s.head += ", \"tid\": ";
        append_scalar(&s.head, ev.tid);
        s.track = s.head.substr(s.head.find(", \"pid\": "));
        s.head += ", \"args\": {";
        for (size_t k = 0; k < ev.args.size(); ++k) {
          if (k) s.head += ", ";
          append_json_string(&s.head, ev.args[k].key);
          s.head += ": ";
          append_scalar(&s.head, ev.args[k].value);
        }
        s.head += "}";
        s.ts = *ev.ts_ns;
        s.dur = *ev.dur_ns;
        slices.push_back(std::move(s));
      },
      &error))
      << error;
  ASSERT_GT(slices.size(), 100u);
  const size_t left_out = keep_nested(&slices);
  EXPECT_LT(left_out, 10u);  // A100: 8 Stream Syncs crossing a memcpy; none in the others

  std::string as_x = R"({"schemaVersion": 1, "traceEvents": [)";
  for (size_t i = 0; i < slices.size(); ++i)
    as_x += std::string(i ? ",\n" : "\n") + R"({"ph": "X", )" + slices[i].head + ", \"ts\": " + us_text(slices[i].ts) +
            ", \"dur\": " + us_text(slices[i].dur) + "}";
  as_x += "]}";

  // At one instant: ends of slices that began earlier (inner first), then begins (outer first), then
  // the ends of zero-length slices (last opened, first closed).
  struct Edge {
    int64_t t;
    int phase;      // 0 end, 1 begin, 2 end of a zero-length slice
    int64_t order;  // end: -start (inner first); begin: -dur (outer first)
    size_t slice;
  };
  std::vector<Edge> edges;
  for (size_t i = 0; i < slices.size(); ++i) {
    edges.push_back({slices[i].ts, 1, -slices[i].dur, i});
    edges.push_back({slices[i].ts + slices[i].dur, slices[i].dur == 0 ? 2 : 0, -slices[i].ts, i});
  }
  std::sort(edges.begin(), edges.end(), [](const Edge& a, const Edge& b) {
    if (a.t != b.t) return a.t < b.t;
    if (a.phase != b.phase) return a.phase < b.phase;
    if (a.order != b.order) return a.order < b.order;
    return a.phase == 1 ? a.slice < b.slice : a.slice > b.slice;  // identical intervals
  });
  std::string as_be = R"({"schemaVersion": 1, "traceEvents": [)";
  for (size_t i = 0; i < edges.size(); ++i) {
    const Slice& s = slices[edges[i].slice];
    as_be += std::string(i ? ",\n" : "\n") + (edges[i].phase != 1 ? R"({"ph": "E", )" : R"({"ph": "B", )") + s.head +
             ", \"ts\": " + us_text(edges[i].t) + "}";
  }
  as_be += "]}";

  trace::Trace x, be;
  ImportStats xs, bes;
  ImportOptions opts;
  opts.format = "kineto";
  ASSERT_TRUE(import_buffer_with_stats(as_x, "as_x.json", &x, &error, opts, &xs)) << error;
  ASSERT_TRUE(import_buffer_with_stats(as_be, "as_be.json", &be, &error, opts, &bes)) << error;
  EXPECT_EQ(bes.get(stats::Stat::kImportEndEvents), slices.size());
  EXPECT_EQ(bes.get(stats::Stat::kImportUnfinishedSpans), 0u);
  EXPECT_EQ(dropped_events(bes), 0u);
  EXPECT_EQ(accounted_events(bes), bes.get(stats::Stat::kImportEventsRead));
  ASSERT_EQ(x.spans.size(), be.spans.size());
  auto key = [](const trace::Trace& t, size_t i) {
    const SpanRecord& r = t.spans[i];
    return std::make_tuple(r.start_ns, r.end_ns, std::string(t.name(r)), r.level, r.kind, r.tid, r.stream, r.device,
                           r.correlation_id, t.process(r).pid, r.flags, t.attributes(i).size());
  };
  using Key = decltype(key(x, 0));
  std::vector<Key> kx, kbe;
  for (size_t i = 0; i < x.spans.size(); ++i) kx.push_back(key(x, i));
  for (size_t i = 0; i < be.spans.size(); ++i) kbe.push_back(key(be, i));
  std::sort(kx.begin(), kx.end());
  std::sort(kbe.begin(), kbe.end());
  for (size_t i = 0; i < kx.size(); ++i) {
    if (kx[i] == kbe[i]) continue;
    const auto& a = kx[i];
    const auto& b = kbe[i];
    ADD_FAILURE() << "span " << i << " differs: X " << std::get<0>(a) << ".." << std::get<1>(a) << " "
                  << std::get<2>(a) << " kind " << int(std::get<4>(a)) << " flags " << int(std::get<10>(a))
                  << " attrs " << std::get<11>(a) << " corr " << std::get<8>(a) << "; B/E " << std::get<0>(b)
                  << ".." << std::get<1>(b) << " " << std::get<2>(b) << " kind " << int(std::get<4>(b))
                  << " flags " << int(std::get<10>(b)) << " attrs " << std::get<11>(b) << " corr "
                  << std::get<8>(b);
    break;
  }
}

TEST(ChromePhases, RealTracesAsBeginEndPairsGiveTheSameSpans) {
  for (const char* file : {"tests/data/kineto/mi250_train.json.gz", "tests/data/kineto/a100_alexnet_train.json.gz",
                           "tests/data/kineto/v100_train_rank0.json.gz"})
    check_begin_end_equivalence(file);
}

TEST(ChromePhases, DevicePropertiesMarkKineto) {
  std::string error;
  EXPECT_EQ(detect_format(R"({"deviceProperties": [], "traceEvents": [{"ph": "B"}]})", &error), Format::kKineto);
}

}  // namespace
}  // namespace strata::import
