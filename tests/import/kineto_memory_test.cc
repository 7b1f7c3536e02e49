// Kineto "[memory]" events -> per-op memory attributes and the memory timeline (docs/memory.md):
// a hand-checked fixture, and generated traces (nested ops on several threads, allocations and
// frees on CPU and CUDA) against a brute-force pass over the same events.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "core/memory_keys.h"
#include "import/importer.h"
#include "import_test_util.h"

namespace strata::import {
namespace {

using strata::testing::source_path;
namespace mk = memory_keys;

int find_span(const trace::Trace& t, std::string_view name) {
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == name) return static_cast<int>(i);
  return -1;
}

int64_t attr(const trace::Trace& t, int span, std::string_view key) {
  auto a = t.find_attr(static_cast<size_t>(span), key);
  return a ? a->value.i : INT64_MIN;  // INT64_MIN: absent
}

std::string device_key(std::string_view key) { return std::string(mk::kDevicePrefix) + std::string(key); }

// tests/import/data/kineto_memory.json, by hand: on thread 10, aten::linear [100, 150] us holds
// aten::addmm [110, 130]; events +1000 CPU at 105 (total 1000), +4096 CPU at 115 (5096), +8192 CUDA
// at 120 (8192), -4096 CPU at 125 (1000), +256 CPU at 140 (1256), +64 at 205 in aten::relu (1320),
// +512 at 300 outside any op (1832); on thread 11, +32 at 105 in aten::empty (1864).
TEST(KinetoMemory, FixtureOpsGetNetSelfAndPeak) {
  trace::Trace t;
  std::string error;
  ImportStats stats;
  ASSERT_TRUE(
      import_trace_with_stats(source_path("tests/import/data/kineto_memory.json"), &t, &error, {}, &stats))
      << error;
  struct Want {
    const char* op;
    int64_t alloc, freed, net, self_net, peak, peak_live;
  };
  // linear: levels 1000, 5096, 13288, 9192, 9448; itself innermost for +1000 and +256.
  // addmm: levels 4096, 12288, 8192.
  for (const Want& w :
       {Want{"aten::linear", 13544, 4096, 9448, 1256, 13288, 8192},
        Want{"aten::addmm", 12288, 4096, 8192, 8192, 12288, 8192},
        Want{"aten::relu", 64, 0, 64, 64, 64, 1320}, Want{"aten::empty", 32, 0, 32, 32, 32, 1864}}) {
    int i = find_span(t, w.op);
    ASSERT_GE(i, 0) << w.op;
    EXPECT_EQ(attr(t, i, mk::kAllocBytes), w.alloc) << w.op;
    EXPECT_EQ(attr(t, i, mk::kFreedBytes), w.freed) << w.op;
    EXPECT_EQ(attr(t, i, mk::kNetAllocBytes), w.net) << w.op;
    EXPECT_EQ(attr(t, i, mk::kSelfNetAllocBytes), w.self_net) << w.op;
    EXPECT_EQ(attr(t, i, mk::kPeakAllocBytes), w.peak) << w.op;
    EXPECT_EQ(attr(t, i, mk::kPeakLiveBytes), w.peak_live) << w.op;
  }
  // The CUDA part: 8192 allocated inside addmm (and so inside linear), never freed.
  for (const char* op : {"aten::linear", "aten::addmm"}) {
    int i = find_span(t, op);
    EXPECT_EQ(attr(t, i, device_key(mk::kAllocBytes)), 8192) << op;
    EXPECT_EQ(attr(t, i, device_key(mk::kNetAllocBytes)), 8192) << op;
    EXPECT_EQ(attr(t, i, device_key(mk::kPeakLiveBytes)), 8192) << op;
  }
  EXPECT_EQ(attr(t, find_span(t, "aten::linear"), device_key(mk::kSelfNetAllocBytes)), 0);
  EXPECT_EQ(attr(t, find_span(t, "aten::relu"), device_key(mk::kAllocBytes)), INT64_MIN);
  // Timeline: every event with "Total Allocated" is a sample of its device's track.
  std::map<std::string, std::vector<double>> tracks;
  std::vector<std::pair<int64_t, size_t>> order;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].kind == static_cast<uint8_t>(SpanKind::kCounter))
      order.push_back({t.spans[i].start_ns, i});
  std::sort(order.begin(), order.end());
  for (auto [ts, i] : order)
    tracks[std::string(t.name(t.spans[i]))].push_back(t.find_attr(i, "value")->value.d);
  EXPECT_EQ(tracks[mk::counter_name("PyTorch CPU allocator", "cpu")],
            (std::vector<double>{1000, 1864, 5096, 1000, 1256, 1320, 1832}));
  EXPECT_EQ(tracks[mk::counter_name("PyTorch CUDA allocator", "cuda:0")], (std::vector<double>{8192}));
  EXPECT_EQ(tracks.size(), 2u);
  EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));
}

// --- Generated traces against brute force -----------------------------------------------------------

struct GenOp {
  std::string name;
  int64_t tid, start, end;  // ns
  int depth;
};
struct GenEvent {
  int64_t tid, ts, bytes, total;
  int device_type;
};

void gen_ops(std::mt19937_64& rng, int64_t tid, int64_t start, int64_t end, int depth,
             std::vector<GenOp>* ops) {
  // Children tile part of [start, end] in order; boundaries are multiples of 10 ns.
  int64_t at = start + 10;
  std::uniform_int_distribution<int> pick(0, 9);
  while (depth < 6 && end - at > 200) {
    int64_t len = 10 * std::uniform_int_distribution<int64_t>(2, std::max<int64_t>(2, (end - at) / 40))(rng);
    if (at + len >= end) break;
    ops->push_back({"op" + std::to_string(ops->size()), tid, at, at + len, depth + 1});
    if (pick(rng) < 6) gen_ops(rng, tid, at, at + len, depth + 1, ops);
    at += len + 10 * std::uniform_int_distribution<int64_t>(1, 20)(rng);
  }
}

std::string us(int64_t ns) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

struct Expected {
  int64_t alloc = 0, freed = 0, self_net = 0, peak = 0, peak_live = INT64_MIN;
  bool seen = false;
};

TEST(KinetoMemory, GeneratedTracesMatchBruteForce) {
  for (uint64_t seed = 1; seed <= 2; ++seed) {
    std::mt19937_64 rng(seed);
    std::vector<GenOp> ops;
    for (int64_t tid : {10, 11, 12}) gen_ops(rng, tid, 0, 10'000'000, 0, &ops);
    std::vector<GenEvent> events;
    std::map<int, int64_t> totals;  // device type -> running total
    for (int64_t tid : {10, 11, 12}) {
      std::vector<int64_t> slots(4000);
      for (auto& s : slots) s = std::uniform_int_distribution<int64_t>(0, 999'999)(rng);
      std::sort(slots.begin(), slots.end());
      slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
      for (int64_t s : slots) {
        int kind = std::uniform_int_distribution<int>(0, 19)(rng);
        int device = kind < 14 ? 0 : kind < 19 ? 1 : 2;  // CPU, CUDA, MKLDNN (host memory)
        int64_t bytes = 64 * std::uniform_int_distribution<int64_t>(1, 5000)(rng);
        if (std::uniform_int_distribution<int>(0, 9)(rng) < 4 && totals[device] >= bytes) bytes = -bytes;
        totals[device] += bytes;
        events.push_back({tid, 10 * s + 5, bytes, totals[device], device});
      }
    }
    // The file lists ops, then events shuffled (the importer orders by time).
    std::string json = "{\"traceEvents\":[\n";
    for (const GenOp& o : ops)
      json += "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"" + o.name +
              "\",\"pid\":7,\"tid\":" + std::to_string(o.tid) + ",\"ts\":" + us(o.start) +
              ",\"dur\":" + us(o.end - o.start) + "},\n";
    std::vector<GenEvent> shuffled = events;
    std::shuffle(shuffled.begin(), shuffled.end(), rng);
    for (const GenEvent& e : shuffled)
      json +=
          "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":7,\"tid\":" +
          std::to_string(e.tid) + ",\"ts\":" + us(e.ts) +
          ",\"args\":{\"Total Allocated\":" + std::to_string(e.total) +
          ",\"Bytes\":" + std::to_string(e.bytes) + ",\"Device Type\":" + std::to_string(e.device_type) +
          ",\"Device Id\":" + (e.device_type == 1 ? "0" : "-1") + "}},\n";
    json += "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":7,\"args\":{\"name\":\"gen\"}}]}";

    trace::Trace t;
    std::string error;
    ImportStats stats;
    ASSERT_TRUE(import_buffer_with_stats(json, "generated.json", &t, &error, {}, &stats)) << error;
    EXPECT_EQ(accounted_events(stats), stats.get(stats::Stat::kImportEventsRead));

    // Brute force: every op against every event of its thread (events are in time order per thread).
    std::map<std::string, int> span_of;
    for (size_t i = 0; i < t.spans.size(); ++i)
      span_of[std::string(t.name(t.spans[i]))] = static_cast<int>(i);
    std::vector<size_t> innermost(events.size(), SIZE_MAX);  // the deepest op holding each event
    for (size_t k = 0; k < events.size(); ++k)
      for (size_t j = 0; j < ops.size(); ++j)
        if (ops[j].tid == events[k].tid && ops[j].start <= events[k].ts && events[k].ts <= ops[j].end &&
            (innermost[k] == SIZE_MAX || ops[j].depth > ops[innermost[k]].depth))
          innermost[k] = j;
    size_t with_events = 0;
    for (size_t j = 0; j < ops.size(); ++j) {
      const GenOp& o = ops[j];
      Expected all, dev;
      for (size_t k = 0; k < events.size(); ++k) {
        const GenEvent& e = events[k];
        if (e.tid != o.tid || e.ts < o.start || e.ts > o.end) continue;
        for (Expected* x : {&all, e.device_type == 1 ? &dev : nullptr}) {
          if (x == nullptr) continue;
          x->seen = true;
          (e.bytes > 0 ? x->alloc : x->freed) += std::abs(e.bytes);
          x->peak = std::max(x->peak, x->alloc - x->freed);
          if (e.bytes > 0) x->peak_live = std::max(x->peak_live, e.total);
          if (innermost[k] == j) x->self_net += e.bytes;
        }
      }
      int i = span_of.at(o.name);
      if (!all.seen) {
        EXPECT_EQ(attr(t, i, mk::kAllocBytes), 0) << o.name;
        EXPECT_EQ(attr(t, i, mk::kNetAllocBytes), INT64_MIN) << o.name;
        continue;
      }
      ++with_events;
      for (auto [x, prefix] : {std::pair<const Expected*, std::string>{&all, ""}, {&dev, "device_"}}) {
        if (!x->seen) {
          EXPECT_EQ(attr(t, i, prefix + "alloc_bytes"), INT64_MIN) << o.name;
          continue;
        }
        ASSERT_EQ(attr(t, i, prefix + "alloc_bytes"), x->alloc)
            << o.name << " " << prefix << " seed " << seed;
        ASSERT_EQ(attr(t, i, prefix + "freed_bytes"), x->freed) << o.name << " " << prefix;
        ASSERT_EQ(attr(t, i, prefix + "net_alloc_bytes"), x->alloc - x->freed) << o.name << " " << prefix;
        ASSERT_EQ(attr(t, i, prefix + "self_net_alloc_bytes"), x->self_net) << o.name << " " << prefix;
        ASSERT_EQ(attr(t, i, prefix + "peak_alloc_bytes"), x->peak) << o.name << " " << prefix;
        ASSERT_EQ(attr(t, i, prefix + "peak_live_bytes"), x->peak_live) << o.name << " " << prefix;
      }
    }
    EXPECT_GT(ops.size(), 1000u);
    EXPECT_GT(with_events, ops.size() / 10);
    // Timeline: one sample per event, on the track of its device.
    size_t samples = 0;
    for (const SpanRecord& s : t.spans) samples += s.kind == static_cast<uint8_t>(SpanKind::kCounter);
    EXPECT_EQ(samples, events.size());
  }
}

}  // namespace
}  // namespace strata::import
