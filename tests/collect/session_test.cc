// The in-process recorder: level gating, many threads, buffer exhaustion, attributes, unfinished spans.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "../test_util.h"
#include "collect/runtime.h"
#include "strata/strata.hpp"
#include "trace/trace_loader.h"

namespace strata {
namespace {

trace::Trace load_or_die(const std::string& path) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(path, &t, &error)) << error;
  return t;
}

uint64_t drops(const trace::Trace& t, const std::string& cause) {
  uint64_t n = 0;
  for (const auto& p : t.processes) {
    n += p.stats.get("dropped." + cause);  // the collector's cause, as written in the file
  }
  return n;
}

collect::SessionConfig config(const std::string& path, int level) {
  collect::SessionConfig c;
  c.path = path;
  c.level = level;
  return c;
}

void layer_work() { STRATA_SPAN("layer_fn", layer); }

TEST(Session, LevelGatingDropsDeeperSpansAtTheSite) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("g.strata"), STRATA_LEVEL_MODEL)));
  EXPECT_EQ(strata_level_enabled(STRATA_LEVEL_MODEL), 1);
  EXPECT_EQ(strata_level_enabled(STRATA_LEVEL_LAYER), 0);
  for (int i = 0; i < 10; ++i) {
    STRATA_SPAN("model_step", model);
    layer_work();  // gated: never reaches the buffer
    EXPECT_EQ(strata_span_begin("api_layer", STRATA_LEVEL_LAYER), 0u);
  }
  // Raising the level at run time takes effect at once.
  strata_set_level(STRATA_LEVEL_LAYER);
  layer_work();
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("g.strata"));
  std::map<std::string, int> names;
  for (const auto& s : t.spans) names[std::string(t.name(s))]++;
  EXPECT_EQ(names["model_step"], 10);
  EXPECT_EQ(names["layer_fn"], 1);
  EXPECT_EQ(names.count("api_layer"), 0u);
  EXPECT_EQ(t.total_drops(), 0u);
}

TEST(Session, NotRecordingCostsNothingAndRecordsNothing) {
  EXPECT_EQ(strata_is_recording(), 0);
  EXPECT_EQ(strata_span_begin("x", STRATA_LEVEL_APPLICATION), 0u);
  strata_span_end(0);
  strata_span_set_int(0, "k", 1);
  char buf[64];
  EXPECT_EQ(strata_current_traceparent(buf, sizeof(buf)), 0);
}

TEST(Session, SixteenThreadsMillionSpansZeroLossCorrectNesting) {
  testing::TempDir dir;
  auto c = config(dir.file("mt.strata"), STRATA_LEVEL_LAYER);
  c.buffer_bytes = 256u << 20;
  ASSERT_TRUE(collect::start_recording(c));
  constexpr int kThreads = 16;
  constexpr int kOuterPerThread = 62500 / 5 + 1;  // each outer span holds 4 nested: 5 spans per outer
  std::vector<std::thread> threads;
  for (int k = 0; k < kThreads; ++k) {
    threads.emplace_back([] {
      for (int i = 0; i < kOuterPerThread; ++i) {
        STRATA_SPAN("outer", model);
        for (int j = 0; j < 2; ++j) {
          STRATA_SPAN("middle", layer);
          STRATA_SPAN("inner", layer);
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("mt.strata"));
  const size_t expected = size_t{kThreads} * kOuterPerThread * 5;
  ASSERT_GE(expected, 1'000'000u);
  EXPECT_EQ(t.spans.size(), expected);
  EXPECT_EQ(t.total_drops(), 0u);
  // Nesting per thread: every parent is on the same thread and contains its child; names follow
  // the static structure (outer > middle > inner).
  std::unordered_map<uint64_t, size_t> by_id;
  for (size_t i = 0; i < t.spans.size(); ++i) by_id[t.spans[i].span_id] = i;
  EXPECT_EQ(by_id.size(), expected) << "span ids must be unique";
  std::map<uint32_t, int> per_thread;
  size_t checked = 0;
  for (const auto& s : t.spans) {
    per_thread[s.tid]++;
    std::string_view name = t.name(s);
    if (name == "outer") {
      EXPECT_EQ(s.parent_id, 0u);
      continue;
    }
    auto it = by_id.find(s.parent_id);
    ASSERT_NE(it, by_id.end());
    const SpanRecord& p = t.spans[it->second];
    EXPECT_EQ(p.tid, s.tid);
    EXPECT_LE(p.start_ns, s.start_ns);
    EXPECT_GE(p.end_ns, s.end_ns);
    EXPECT_EQ(t.name(p), name == "middle" ? "outer" : "middle");
    ++checked;
  }
  EXPECT_EQ(checked, size_t{kThreads} * kOuterPerThread * 4);
  EXPECT_EQ(per_thread.size(), size_t{kThreads});
  for (auto [tid, n] : per_thread) EXPECT_EQ(n, kOuterPerThread * 5);
}

TEST(Session, BufferExhaustionDropsAreCountedExactly) {
  testing::TempDir dir;
  auto c = config(dir.file("x.strata"), STRATA_LEVEL_LAYER);
  c.buffer_bytes = 2 * collect::kBlockBytes;  // two blocks for the whole process
  ASSERT_TRUE(collect::start_recording(c));
  collect::current_session()->pause_writer_for_testing(true);
  constexpr int kSpans = 20000;  // 2 slots each: far more than two blocks hold
  for (int i = 0; i < kSpans; ++i) {
    STRATA_SPAN("s", layer);
  }
  collect::current_session()->pause_writer_for_testing(false);
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("x.strata"));
  uint64_t full = drops(t, "buffer_full");
  uint64_t end_lost = drops(t, "end_lost");
  EXPECT_GT(full, 0u);
  // Every span is either in the trace (finished or flagged unfinished) or counted as dropped.
  uint64_t unfinished = 0;
  for (const auto& s : t.spans) unfinished += (s.flags & kSpanFlagUnfinished) ? 1 : 0;
  EXPECT_EQ(t.spans.size() + full, static_cast<uint64_t>(kSpans));
  EXPECT_EQ(unfinished, end_lost);
  EXPECT_EQ(t.spans.size() - unfinished, 2 * (collect::BlockPool::slots_per_block() / 2) - end_lost);
}

TEST(Session, ApiSpansAttributesAndCrossThreadEnd) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("a.strata"), STRATA_LEVEL_LAYER)));
  strata_span_id outer = strata_span_begin("predict", STRATA_LEVEL_MODEL);
  ASSERT_NE(outer, 0u);
  strata_span_set_int(outer, "batch", 8);
  strata_span_set_double(outer, "lr", 0.25);
  strata_span_set_string(outer, "model", "resnet50");
  strata_span_set_metric(outer, "flops", 4.1e9);
  strata_span_id inner = strata_span_begin("conv", STRATA_LEVEL_LAYER);
  std::thread([inner] { strata_span_end(inner); }).join();  // ended on another thread
  strata_flush();  // the writer must see that end before the instant below picks its parent (see docs)
  strata_instant("checkpoint", STRATA_LEVEL_MODEL);
  strata_counter("loss", 0.5);
  strata_set_thread_name("main-loop");
  strata_span_end(outer);
  strata_span_end(outer);  // a second end is counted, not fatal
  strata_span_id open = strata_span_begin("never_ended", STRATA_LEVEL_MODEL);
  (void)open;
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("a.strata"));
  std::map<std::string, size_t> idx;
  for (size_t i = 0; i < t.spans.size(); ++i) idx[std::string(t.name(t.spans[i]))] = i;
  ASSERT_EQ(t.spans.size(), 5u);
  const size_t p = idx.at("predict");
  EXPECT_EQ(t.find_attr(p, "batch")->value.i, 8);
  EXPECT_EQ(t.find_attr(p, "lr")->value.d, 0.25);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(p, "model")), "resnet50");
  EXPECT_EQ(t.find_attr(p, "flops")->type, static_cast<uint8_t>(AttrType::kMetric));
  const SpanRecord& conv = t.spans[idx.at("conv")];
  EXPECT_EQ(conv.parent_id, t.spans[p].span_id);
  EXPECT_EQ(conv.tid, t.spans[p].tid) << "a span belongs to the thread that began it";
  EXPECT_EQ(t.spans[idx.at("checkpoint")].kind, static_cast<uint8_t>(SpanKind::kInstant));
  EXPECT_EQ(t.spans[idx.at("checkpoint")].parent_id, t.spans[p].span_id);
  EXPECT_EQ(t.spans[idx.at("loss")].kind, static_cast<uint8_t>(SpanKind::kCounter));
  EXPECT_TRUE(t.spans[idx.at("never_ended")].flags & kSpanFlagUnfinished);
  EXPECT_EQ(drops(t, "unmatched_end"), 1u);
  EXPECT_EQ(t.processes[0].thread_names.at(t.spans[p].tid), "main-loop");
}

TEST(Session, CollectorsEmitCompleteSpans) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("c.strata"), STRATA_LEVEL_DEVICE)));
  SpanRecord r;
  r.start_ns = 1000;
  r.end_ns = 5000;
  r.level = static_cast<uint8_t>(Level::kDevice);
  r.kind = static_cast<uint8_t>(SpanKind::kExecution);
  r.correlation_id = 42;
  r.device = 0;
  r.stream = 7;
  r.clock = static_cast<uint8_t>(ClockDomain::kGpu);
  collect::AttrDraft attrs[3];
  attrs[0].key = "grid";
  attrs[0].type = AttrType::kString;
  attrs[0].s = "[128,1,1]";
  attrs[1].key = "registers";
  attrs[1].i = 64;
  attrs[2].key = "bytes";
  attrs[2].type = AttrType::kMetric;
  attrs[2].d = 1024.0;
  collect::current_session()->emit_complete(r, "volta_sgemm_128x64_nn", attrs);
  collect::current_session()->set_collector_drops("cupti_records", 3);
  collect::current_session()->set_collector_drops("cupti_records", 7);  // cumulative: the last one counts
  collect::current_session()->set_collector_property("cupti.clock_source", "CLOCK_MONOTONIC");
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("c.strata"));
  ASSERT_EQ(t.spans.size(), 1u);
  const SpanRecord& s = t.spans[0];
  EXPECT_EQ(t.name(s), "volta_sgemm_128x64_nn");
  EXPECT_EQ(s.correlation_id, 42u);
  EXPECT_EQ(s.stream, 7u);
  EXPECT_EQ(s.device, 0u);
  EXPECT_EQ(s.end_ns - s.start_ns, 4000);
  EXPECT_NE(s.span_id, 0u);
  EXPECT_EQ(t.attr_value_string(*t.find_attr(0, "grid")), "[128,1,1]");
  EXPECT_EQ(t.find_attr(0, "registers")->value.i, 64);
  EXPECT_EQ(t.find_attr(0, "bytes")->value.d, 1024.0);
  EXPECT_EQ(drops(t, "cupti_records"), 7u);
  EXPECT_EQ(t.processes[0].properties.get("stats.collector.cupti.clock_source").value_or(""), "CLOCK_MONOTONIC");
}

TEST(Session, LongNamesAreCutAndCounted) {
  testing::TempDir dir;
  ASSERT_TRUE(collect::start_recording(config(dir.file("l.strata"), STRATA_LEVEL_MODEL)));
  std::string name(10000, 'n');
  strata_span_end(strata_span_begin(name.c_str(), STRATA_LEVEL_MODEL));
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("l.strata"));
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.name(t.spans[0]).size(), 4096u);
  EXPECT_EQ(drops(t, "string_truncated"), 1u);
}

// Record's stream writer with --compress: names of repeated text (cut to 4 KiB each) compress past
// the reader's 128:1 limit; the writer stores such a chunk uncompressed, so every name loads back
// (before: the strings chunk was skipped as a compression bomb and its names were undefined).
TEST(Session, CompressedStreamsOfRepetitiveNamesLoadBack) {
  testing::TempDir dir;
  collect::SessionConfig c = config(dir.file("z.strata"), STRATA_LEVEL_MODEL);
  c.compression_level = 3;
  ASSERT_TRUE(collect::start_recording(c));
  std::multiset<std::string> names;
  for (int i = 0; i < 2000; ++i) {
    const std::string name = std::string(4000, 'n') + std::to_string(i);
    strata_span_end(strata_span_begin(name.c_str(), STRATA_LEVEL_MODEL));
    names.insert(name);
  }
  collect::stop_recording();
  trace::Trace t = load_or_die(dir.file("z.strata"));
  EXPECT_EQ(t.stat(stats::Stat::kLoadUnknownStrings), 0u);
  EXPECT_EQ(t.stat(stats::Stat::kLoadCorruptChunks), 0u);
  std::multiset<std::string> loaded;
  for (const auto& s : t.spans) loaded.insert(std::string(t.name(s)));
  EXPECT_TRUE(loaded == names) << loaded.size() << " names loaded of " << names.size();
}

TEST(Session, RestartingInOneProcessWorks) {
  testing::TempDir dir;
  for (int round = 0; round < 3; ++round) {
    const std::string path = dir.file("r" + std::to_string(round) + ".strata");
    ASSERT_TRUE(collect::start_recording(config(path, STRATA_LEVEL_MODEL)));
    std::thread([] { STRATA_SPAN("thread_span", model); }).join();
    { STRATA_SPAN("main_span", model); }
    collect::stop_recording();
    trace::Trace t = load_or_die(path);
    EXPECT_EQ(t.spans.size(), 2u) << "round " << round;
  }
}

TEST(Session, FlushMakesSpansDurableWhileRunning) {
  testing::TempDir dir;
  const std::string path = dir.file("f.strata");
  ASSERT_TRUE(collect::start_recording(config(path, STRATA_LEVEL_MODEL)));
  for (int i = 0; i < 100; ++i) {
    STRATA_SPAN("step", model);
  }
  strata_flush();
  trace::Trace t = load_or_die(path);  // the file is read while the session still runs
  EXPECT_EQ(t.spans.size(), 100u);
  EXPECT_FALSE(t.processes[0].ended_cleanly);
  collect::stop_recording();
}

TEST(Session, StartWhileRecordingSaysWhyInOneLine) {
  testing::TempDir dir;
  ASSERT_EQ(strata_start(dir.file("first.strata").c_str(), STRATA_LEVEL_MODEL), 1);
  ::testing::internal::CaptureStderr();
  const int second = strata_start(dir.file("second.strata").c_str(), STRATA_LEVEL_MODEL);
  const std::string said = ::testing::internal::GetCapturedStderr();
  strata_stop();
  EXPECT_EQ(second, 0);
  EXPECT_NE(said.find("already recording"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << said;
  EXPECT_FALSE(std::filesystem::exists(dir.file("second.strata")));
}

}  // namespace
}  // namespace strata
