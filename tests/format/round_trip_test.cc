// Model and file round trip: every field of spans, attributes, processes, stats and clocks survives
// write -> read, through both the uncompressed and the zstd path.
#include <gtest/gtest.h>

#include <cstring>

#include "../test_util.h"
#include "format/chunk_reader.h"
#include "format/payloads.h"
#include "format/stream_writer.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

struct Written {
  std::vector<SpanRecord> spans;
  std::vector<std::vector<std::tuple<std::string, AttrType, std::string>>> attrs;  // key, type, value text
  std::vector<std::string> names;
};

Written write_sample(const std::string& path, int compression, size_t count) {
  format::ChunkWriter file;
  EXPECT_TRUE(file.open(path)) << file.error();
  format::StreamWriter w(&file, 0xABCDEF0123456789ull, compression, 1000);
  format::Properties p;
  p.set_int("pid", 4242);
  p.set_int("ppid", 1);
  p.set("host", "testhost");
  p.set("argv", std::string("python3\0train.py", 16));
  p.set("trace_id", "0123456789abcdef0123456789abcdef");
  p.set("parent_span_id", "00000000000000aa");
  p.set_int("start_realtime_ns", 1700000000000000000);
  p.set_int("start_monotonic_ns", 5000);
  p.set_int("level", 30);
  p.set("custom.key", "kept");
  EXPECT_TRUE(w.write_properties(format::ChunkType::kProcess, p));
  format::ClockReading r[2] = {{0, 0, 5000}, {1, 0, 1700000000000005000}};
  EXPECT_TRUE(w.write_clock_snapshot(r));

  Written out;
  const uint8_t levels[] = {10, 20, 30, 40, 50, 60, 70, 37 /* unknown to this reader: kept */};
  for (size_t i = 0; i < count; ++i) {
    SpanRecord s;
    s.span_id = 1000 + i;
    s.parent_id = i % 3 == 0 ? 0 : 1000 + i - 1;
    s.start_ns = static_cast<int64_t>(10 * i) - 5;  // a negative timestamp too
    s.end_ns = s.start_ns + static_cast<int64_t>(i % 17);
    s.correlation_id = i % 5 == 0 ? 0 : 77 + i;
    std::string name = "op_" + std::to_string(i % 13) + (i % 7 == 0 ? "_ünïcödé" : "");
    s.name = w.intern(name);
    s.tid = static_cast<uint32_t>(100 + i % 4);
    s.stream = i % 2 ? kNoStream : static_cast<uint32_t>(i % 9);
    s.device = i % 2 ? kNoDevice : static_cast<uint16_t>(i % 3);
    s.level = levels[i % 8];
    s.kind = static_cast<uint8_t>(1 + i % 6);
    s.clock = static_cast<uint8_t>(i % 4);
    s.flags = static_cast<uint8_t>(i % 3);
    std::vector<AttrRecord> attrs;
    std::vector<std::tuple<std::string, AttrType, std::string>> expect;
    for (size_t k = 0; k < i % 4; ++k) {
      AttrRecord a;
      std::string key = "k" + std::to_string(k);
      a.key = w.intern(key);
      switch (k) {
        case 0:
          a.type = static_cast<uint8_t>(AttrType::kInt);
          a.value.i = -static_cast<int64_t>(i);
          expect.emplace_back(key, AttrType::kInt, std::to_string(-static_cast<int64_t>(i)));
          break;
        case 1:
          a.type = static_cast<uint8_t>(AttrType::kDouble);
          a.value.d = 0.5 + static_cast<double>(i);
          expect.emplace_back(key, AttrType::kDouble, std::to_string(0.5 + static_cast<double>(i)));
          break;
        case 2: {
          a.type = static_cast<uint8_t>(AttrType::kString);
          std::string v = "[[1,3,224,224]] #" + std::to_string(i);
          a.value.u = w.intern(v);
          expect.emplace_back(key, AttrType::kString, v);
          break;
        }
        default:
          a.type = static_cast<uint8_t>(AttrType::kMetric);
          a.value.d = 1e9 * static_cast<double>(i);
          expect.emplace_back(key, AttrType::kMetric, std::to_string(1e9 * static_cast<double>(i)));
      }
      attrs.push_back(a);
    }
    w.add_span(s, attrs);
    out.spans.push_back(s);
    out.attrs.push_back(expect);
    out.names.push_back(name);
  }
  format::Properties stats;
  stats.set_int("dropped.buffer_full", 3);
  stats.set_int("dropped.end_lost", 1);
  stats.set("thread_name.101", "worker");
  EXPECT_TRUE(w.write_properties(format::ChunkType::kStats, stats));
  format::Properties end;
  end.set_int("end_monotonic_ns", 99999);
  EXPECT_TRUE(w.write_properties(format::ChunkType::kEnd, end));
  file.close();
  return out;
}

std::string attr_text(const trace::Trace& t, const AttrRecord& a) {
  switch (static_cast<AttrType>(a.type)) {
    case AttrType::kInt: return std::to_string(a.value.i);
    case AttrType::kDouble:
    case AttrType::kMetric: return std::to_string(a.value.d);
    case AttrType::kString: return std::string(t.strings.get(static_cast<uint32_t>(a.value.u)));
  }
  return "";
}

void check_round_trip(int compression) {
  testing::TempDir dir;
  const std::string path = dir.file("t.strata");
  Written w = write_sample(path, compression, 5000);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error, {.sort_by_start = false})) << error;
  ASSERT_EQ(t.spans.size(), w.spans.size());
  EXPECT_TRUE(t.warnings.empty());
  ASSERT_EQ(t.processes.size(), 1u);
  const trace::Process& p = t.processes[0];
  EXPECT_EQ(p.pid, 4242);
  EXPECT_EQ(p.ppid, 1);
  EXPECT_EQ(p.host, "testhost");
  EXPECT_EQ(p.command_line, "python3 train.py");
  EXPECT_EQ(p.trace_id, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(p.parent_span_id, "00000000000000aa");
  EXPECT_EQ(p.start_realtime_ns, 1700000000000000000);
  EXPECT_EQ(p.start_monotonic_ns, 5000);
  ASSERT_TRUE(p.level_gate.has_value());
  EXPECT_EQ(*p.level_gate, 30);
  EXPECT_EQ(p.properties.get("custom.key").value_or(""), "kept");
  EXPECT_EQ(p.stream_id, 0xABCDEF0123456789ull);
  EXPECT_TRUE(p.ended_cleanly);
  EXPECT_EQ(p.stats.get(stats::Stat::kCollectorBufferFull), 3u);
  EXPECT_EQ(p.stats.get(stats::Stat::kCollectorEndLost), 1u);
  EXPECT_EQ(p.thread_names.at(101), "worker");
  ASSERT_EQ(p.clock_snapshots.size(), 1u);
  EXPECT_EQ(p.clock_snapshots[0].readings[1].second, 1700000000000005000);
  EXPECT_EQ(t.stats.get(stats::Stat::kLoadUnknownLevels), w.spans.size() / 8);
  for (size_t i = 0; i < w.spans.size(); ++i) {
    const SpanRecord& a = w.spans[i];
    const SpanRecord& b = t.spans[i];
    EXPECT_EQ(a.span_id, b.span_id);
    EXPECT_EQ(a.parent_id, b.parent_id);
    EXPECT_EQ(a.start_ns, b.start_ns);
    EXPECT_EQ(a.end_ns, b.end_ns);
    EXPECT_EQ(a.correlation_id, b.correlation_id);
    EXPECT_EQ(t.name(b), w.names[i]);
    EXPECT_EQ(a.tid, b.tid);
    EXPECT_EQ(a.stream, b.stream);
    EXPECT_EQ(a.device, b.device);
    EXPECT_EQ(a.level, b.level);
    EXPECT_EQ(a.kind, b.kind);
    EXPECT_EQ(a.clock, b.clock);
    EXPECT_EQ(a.flags, b.flags);
    EXPECT_EQ(b.process, 0);
    auto attrs = t.attributes(i);
    ASSERT_EQ(attrs.size(), w.attrs[i].size());
    for (size_t k = 0; k < attrs.size(); ++k) {
      EXPECT_EQ(t.strings.get(attrs[k].key), std::get<0>(w.attrs[i][k]));
      EXPECT_EQ(attrs[k].type, static_cast<uint8_t>(std::get<1>(w.attrs[i][k])));
      EXPECT_EQ(attr_text(t, attrs[k]), std::get<2>(w.attrs[i][k]));
    }
  }
}

TEST(RoundTrip, EveryFieldUncompressed) { check_round_trip(0); }
TEST(RoundTrip, EveryFieldZstd) { check_round_trip(3); }

TEST(RoundTrip, ZstdMakesFileSmaller) {
  testing::TempDir dir;
  write_sample(dir.file("a.strata"), 0, 5000);
  write_sample(dir.file("b.strata"), 3, 5000);
  EXPECT_LT(testing::read_file(dir.file("b.strata")).size(), testing::read_file(dir.file("a.strata")).size() / 2);
}

TEST(RoundTrip, SortKeepsAttributesWithTheirSpans) {
  testing::TempDir dir;
  const std::string path = dir.file("t.strata");
  write_sample(path, 0, 300);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error)) << error;
  for (size_t i = 1; i < t.spans.size(); ++i) EXPECT_LE(t.spans[i - 1].start_ns, t.spans[i].start_ns);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    // Spans were written with (span_id - 1000) % 4 attributes.
    EXPECT_EQ(t.attributes(i).size(), (t.spans[i].span_id - 1000) % 4);
    if (auto a = t.find_attr(i, "k0")) {
      EXPECT_EQ(a->value.i, -static_cast<int64_t>(t.spans[i].span_id - 1000));
    }
  }
}

TEST(RoundTrip, DirectoryOfProcessFilesLoadsAsOneTrace) {
  testing::TempDir dir;
  write_sample(dir.file("1.strata"), 0, 100);
  write_sample(dir.file("2.strata"), 0, 50);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(dir.path(), &t, &error)) << error;
  EXPECT_EQ(t.spans.size(), 150u);
  EXPECT_EQ(t.stats.get(stats::Stat::kLoadFiles), 2u);
}

TEST(Properties, RejectsCutLists) {
  format::Properties p;
  p.set("a", "b");
  std::string bytes = p.encode();
  format::Properties out;
  std::string error;
  EXPECT_FALSE(format::Properties::decode(bytes.substr(0, bytes.size() - 1), &out, &error));
  EXPECT_NE(error.find("cut short"), std::string::npos);
}

}  // namespace
}  // namespace strata

namespace strata {
namespace {

TEST(ClockRefinement, TickDerivedTimesFollowTheRunLongCalibration) {
  testing::TempDir dir;
  const std::string path = dir.file("clock.strata");
  format::ChunkWriter file;
  ASSERT_TRUE(file.open(path));
  format::StreamWriter w(&file, 5);
  format::Properties p;
  p.set_int("pid", 1);
  p.set("tsc_ns_per_tick", "1");  // the start-up calibration said 1 ns per tick...
  p.set_int("tsc_anchor_ticks", 1000);
  p.set_int("tsc_anchor_ns", 5000);
  ASSERT_TRUE(w.write_properties(format::ChunkType::kProcess, p));
  // ...but over 100 ms the clocks show 1.0001 ns per tick (100 ppm off).
  format::ClockReading start[2] = {{0, 0, 5000}, {2, 0, 1000}};
  format::ClockReading end[2] = {{0, 0, 5000 + 100'010'000}, {2, 0, 1000 + 100'000'000}};
  ASSERT_TRUE(w.write_clock_snapshot(start));
  SpanRecord ticked;
  ticked.span_id = 1;
  ticked.start_ns = 5000 + 50'000'000;
  ticked.end_ns = 5000 + 60'000'000;
  ticked.flags = kSpanFlagFromTicks;
  SpanRecord foreign = ticked;  // e.g. a GPU record already on its own clock: left alone
  foreign.span_id = 2;
  foreign.flags = 0;
  w.add_span(ticked);
  w.add_span(foreign);
  ASSERT_TRUE(w.flush());
  ASSERT_TRUE(w.write_clock_snapshot(end));
  file.close();
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error)) << error;
  ASSERT_EQ(t.spans.size(), 2u);
  const SpanRecord& a = t.spans[0].span_id == 1 ? t.spans[0] : t.spans[1];
  const SpanRecord& b = t.spans[0].span_id == 1 ? t.spans[1] : t.spans[0];
  EXPECT_NEAR(static_cast<double>(a.start_ns), 5000 + 50'005'000.0, 2.0);
  EXPECT_NEAR(static_cast<double>(a.end_ns), 5000 + 60'006'000.0, 2.0);
  EXPECT_EQ(b.start_ns, 5000 + 50'000'000);
  EXPECT_EQ(t.processes[0].properties.get("tsc_correction_ppm").value_or(""), "100.000");
}

}  // namespace
}  // namespace strata
