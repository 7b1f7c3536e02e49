// save_trace -> load_trace gives back every field.
#include "trace/trace_saver.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <tuple>

#include "../test_util.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/trace_loader.h"

namespace strata::trace {
namespace {

// A span with its attributes resolved to text, comparable across string pools.
struct FlatSpan {
  SpanRecord record;
  std::string name;
  std::vector<std::tuple<std::string, uint8_t, std::string>> attrs;
};

std::vector<FlatSpan> flatten(const Trace& t) {
  std::vector<FlatSpan> out;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    FlatSpan f;
    f.record = t.spans[i];
    f.record.name = 0;
    f.name = std::string(t.name(t.spans[i]));
    for (const AttrRecord& a : t.attributes(i))
      f.attrs.emplace_back(std::string(t.strings.get(a.key)), a.type, t.attr_value_string(a));
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const FlatSpan& a, const FlatSpan& b) {
    return std::tie(a.record.process, a.record.span_id) < std::tie(b.record.process, b.record.span_id);
  });
  return out;
}

void expect_same(const Trace& a, const Trace& b) {
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t p = 0; p < a.processes.size(); ++p) {
    const Process& x = a.processes[p];
    const Process& y = b.processes[p];
    EXPECT_EQ(x.stream_id, y.stream_id);
    EXPECT_EQ(x.pid, y.pid);
    EXPECT_EQ(x.ppid, y.ppid);
    EXPECT_EQ(x.host, y.host);
    EXPECT_EQ(x.command_line, y.command_line);
    EXPECT_EQ(x.trace_id, y.trace_id);
    EXPECT_EQ(x.parent_span_id, y.parent_span_id);
    EXPECT_EQ(x.start_realtime_ns, y.start_realtime_ns);
    EXPECT_EQ(x.start_monotonic_ns, y.start_monotonic_ns);
    EXPECT_EQ(x.level_gate, y.level_gate);
    EXPECT_EQ(x.stats.nonzero(), y.stats.nonzero());
    EXPECT_EQ(x.stats.unregistered(), y.stats.unregistered());
    EXPECT_EQ(x.thread_names, y.thread_names);
    EXPECT_EQ(x.ended_cleanly, y.ended_cleanly);
    EXPECT_EQ(x.span_count, y.span_count);
    ASSERT_EQ(x.clock_snapshots.size(), y.clock_snapshots.size());
    for (size_t c = 0; c < x.clock_snapshots.size(); ++c)
      EXPECT_EQ(x.clock_snapshots[c].readings, y.clock_snapshots[c].readings);
    for (const auto& [key, value] : x.properties.entries()) EXPECT_EQ(y.properties.get(key), value) << key;
  }
  EXPECT_EQ(a.record.entries(), b.record.entries());
  auto fa = flatten(a), fb = flatten(b);
  ASSERT_EQ(fa.size(), fb.size());
  for (size_t i = 0; i < fa.size(); ++i) {
    EXPECT_EQ(std::memcmp(&fa[i].record, &fb[i].record, sizeof(SpanRecord)), 0)
        << "span " << i << " " << fa[i].name;
    EXPECT_EQ(fa[i].name, fb[i].name);
    EXPECT_EQ(fa[i].attrs, fb[i].attrs) << fa[i].name;
  }
}

TEST(TraceSaver, HandBuiltTraceRoundTripsEveryField) {
  Trace t;
  Process p;
  p.stream_id = 0xABCDEF;
  p.pid = 77;
  p.ppid = 1;
  p.host = "node-3";
  p.command_line = "python3 train.py --epochs 1";
  p.trace_id = "0123456789abcdef0123456789abcdef";
  p.parent_span_id = "00f067aa0ba902b7";
  p.start_realtime_ns = 1700000000123456789;
  p.start_monotonic_ns = 987654321;
  p.level_gate = static_cast<uint8_t>(Level::kLayer);
  p.properties.set("writer", "test");
  p.properties.set("stats.buffers", "12");
  p.properties.set("end.end_monotonic_ns", "999");
  p.stats.set(stats::Stat::kCollectorBufferFull, 3);
  p.stats.set(stats::Stat::kImportMalformedTs, 1);
  p.stats.set(stats::Stat::kImportEventsRead, 12);             // a Process-chunk counter
  p.stats.set_unregistered("dropped.from_a_newer_writer", 5);  // kept, not understood
  p.thread_names[77] = "MainThread";
  p.thread_names[0xFFFF0001u] = "Spans/PyTorch Profiler";
  p.clock_snapshots.push_back({{{0, 100}, {1, 1700000000000000000}}});
  p.ended_cleanly = true;
  uint16_t proc = t.add_process(p);
  Process q;
  q.stream_id = 0x42;
  q.pid = 78;
  q.ended_cleanly = false;  // a process that was killed: no End chunk, and it must stay that way
  uint16_t proc2 = t.add_process(q);
  t.record.set("command", "python3 train.py");
  t.record.set_int("exit_status", 0);
  for (int i = 0; i < 40000; ++i) {  // more than one spans chunk
    SpanRecord s;
    s.span_id = static_cast<uint64_t>(i + 1);
    s.parent_id = i % 7 == 0 ? 0 : static_cast<uint64_t>(i);
    s.start_ns = i * 10;
    s.end_ns = i * 10 + 5 + i % 3;
    s.correlation_id = static_cast<uint64_t>(i % 11);
    s.name = t.strings.intern("op_" + std::to_string(i % 97));
    s.tid = 77;
    s.stream = i % 5 == 0 ? 3 : kNoStream;
    s.device = i % 5 == 0 ? 1 : kNoDevice;
    s.process = i % 9 == 0 ? proc2 : proc;
    s.level = static_cast<uint8_t>(i % 2 ? Level::kLayer : Level::kDevice);
    s.kind = static_cast<uint8_t>(i % 2 ? SpanKind::kSpan : SpanKind::kExecution);
    s.clock = static_cast<uint8_t>(ClockDomain::kImported);
    s.flags = static_cast<uint8_t>(i % 4);
    std::vector<AttrRecord> attrs;
    if (i % 3 == 0) attrs.push_back(t.int_attr("External id", i));
    if (i % 4 == 0) attrs.push_back(t.double_attr("ratio", i / 7.0));
    if (i % 5 == 0) attrs.push_back(t.string_attr("Input Dims", "[[" + std::to_string(i) + "]]"));
    if (i % 6 == 0) attrs.push_back(t.metric("flops", 1e9 + i));
    t.add_span(s, attrs);
    t.processes[s.process].span_count += 1;
  }
  strata::testing::TempDir dir;
  for (int level : {0, 3}) {
    const std::string path = dir.file("t" + std::to_string(level) + ".strata");
    std::string error;
    ASSERT_TRUE(save_trace(t, path, &error, level)) << error;
    Trace loaded;
    ASSERT_TRUE(load_trace(path, &loaded, &error)) << error;
    EXPECT_EQ(loaded.stats.get(stats::Stat::kLoadCorruptChunks), 0u);
    expect_same(t, loaded);
  }
}

TEST(TraceSaver, ImportedKinetoTraceRoundTrips) {
  Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(
      strata::testing::source_path("tests/data/kineto/a100_alexnet_train.json.gz"), &t, &error))
      << error;
  strata::testing::TempDir dir;
  ASSERT_TRUE(save_trace(t, dir.file("a100.strata"), &error, 3)) << error;
  Trace loaded;
  ASSERT_TRUE(load_trace(dir.file("a100.strata"), &loaded, &error)) << error;
  expect_same(t, loaded);
}

TEST(TraceSaver, UnwritablePathIsOneErrorLine) {
  Trace t;
  std::string error;
  EXPECT_FALSE(save_trace(t, "/nonexistent-dir/x.strata", &error));
  EXPECT_NE(error.find("/nonexistent-dir/x.strata"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::trace
