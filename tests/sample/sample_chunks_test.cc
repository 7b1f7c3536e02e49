// The sample chunks' codecs (generated inputs of realistic size, every truncation rejected with a
// line naming the field), the DCPI count table against a brute-force count, and the store's
// accounting: every sample is written as a count or counted as lost by cause.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <map>
#include <memory>
#include <random>
#include <thread>
#include <tuple>

#include "format/chunk_reader.h"
#include "format/chunk_writer.h"
#include "format/sample_payloads.h"
#include "format/stream_writer.h"
#include "sample/count_table.h"
#include "sample/mappings.h"
#include "sample/sample_store.h"
#include "sample_test_util.h"

namespace strata::testing {
namespace {

using format::SampleCount;

TEST(SampleChunks, GeneratedPayloadsRoundTrip) {
  std::mt19937_64 rng(15);
  std::vector<format::SampleMapping> mappings(500);
  for (uint32_t i = 0; i < mappings.size(); ++i) {
    auto& m = mappings[i];
    m.id = i + 1, m.start = rng(), m.end = m.start + (rng() % (1u << 30)),
    m.file_offset = rng() % (1ull << 40);
    m.time_ns = static_cast<int64_t>(rng() >> 2), m.path = static_cast<uint32_t>(rng()), m.flags = rng() % 4;
    m.build_id = std::string(rng() % 21, static_cast<char>(rng()));
  }
  std::string payload;
  format::encode_sample_mappings(mappings, &payload);
  std::vector<format::SampleMapping> mappings_back;
  std::string error;
  ASSERT_TRUE(format::decode_sample_mappings(payload, &mappings_back, &error)) << error;
  ASSERT_EQ(mappings_back.size(), mappings.size());
  for (size_t i = 0; i < mappings.size(); ++i) {
    EXPECT_EQ(mappings_back[i].start, mappings[i].start);
    EXPECT_EQ(mappings_back[i].build_id, mappings[i].build_id);
    EXPECT_EQ(mappings_back[i].flags, mappings[i].flags);
  }

  std::vector<format::SampleStack> stacks(2000);
  for (uint32_t i = 0; i < stacks.size(); ++i) {
    stacks[i].id = i + 1;
    stacks[i].frames.resize(rng() % 200);
    for (uint32_t& f : stacks[i].frames) f = static_cast<uint32_t>(rng() % 100000);
  }
  payload.clear();
  format::encode_sample_stacks(stacks, &payload);
  std::vector<format::SampleStack> stacks_back;
  ASSERT_TRUE(format::decode_sample_stacks(payload, &stacks_back, &error)) << error;
  ASSERT_EQ(stacks_back.size(), stacks.size());
  for (size_t i = 0; i < stacks.size(); ++i) EXPECT_EQ(stacks_back[i].frames, stacks[i].frames);

  // A timeline of 100k samples with span ids going up and down (zigzag deltas).
  std::vector<format::SamplePoint> points(100000);
  int64_t t = 123456789;
  for (auto& p : points) {
    t += static_cast<int64_t>(rng() % 2'000'000);
    p = {t, static_cast<uint32_t>(rng() % 5000), static_cast<uint32_t>(rng() % 3),
         static_cast<uint32_t>(1 + rng() % 4), rng() % 3 == 0 ? 0 : rng()};
  }
  payload.clear();
  format::encode_sample_timeline(4242, points, &payload);
  uint32_t tid = 0;
  std::vector<format::SamplePoint> points_back;
  ASSERT_TRUE(format::decode_sample_timeline(payload, &tid, &points_back, &error)) << error;
  EXPECT_EQ(tid, 4242u);
  ASSERT_EQ(points_back.size(), points.size());
  for (size_t i = 0; i < points.size(); ++i) {
    ASSERT_EQ(points_back[i].time_ns, points[i].time_ns) << i;
    ASSERT_EQ(points_back[i].span_id, points[i].span_id) << i;
    ASSERT_EQ(points_back[i].weight, points[i].weight) << i;
  }
}

// Every proper prefix of a payload is damage: rejected with a message, never a crash or a success
// that invents entries.
TEST(SampleChunks, EveryTruncationIsRejectedWithAMessage) {
  std::vector<SampleCount> counts = {{1, 2, 3, 0, 4}, {5, 6, 0, 1, 7}};
  std::string payload;
  format::encode_sample_counts({3, 100, 200}, counts, &payload);
  std::vector<format::SampleFrame> frames(3);
  frames[0] = {1, format::SampleFrameKind::kNative, 2, 0x1234, 0, 0, 0};
  frames[1] = {2, format::SampleFrameKind::kPython, 0, 0, 7, 8, 42};
  frames[2] = {3, format::SampleFrameKind::kKernel, 0, 0xffffffff81000000ull, 0, 0, 0};
  std::string frame_payload;
  format::encode_sample_frames(frames, &frame_payload);
  std::string timeline;
  format::encode_sample_timeline(9, {{10, 1, 0, 1, 5}, {20, 2, 0, 1, 0}}, &timeline);
  for (size_t n = 0; n < payload.size(); ++n) {
    format::SampleCountsHeader h;
    std::vector<SampleCount> back;
    std::string error;
    EXPECT_FALSE(format::decode_sample_counts(std::string_view(payload).substr(0, n), &h, &back, &error))
        << n;
    EXPECT_FALSE(error.empty()) << n;
  }
  for (size_t n = 0; n < frame_payload.size(); ++n) {
    std::vector<format::SampleFrame> back;
    std::string error;
    EXPECT_FALSE(format::decode_sample_frames(std::string_view(frame_payload).substr(0, n), &back, &error))
        << n;
    EXPECT_FALSE(error.empty()) << n;
  }
  for (size_t n = 0; n < timeline.size(); ++n) {
    uint32_t tid;
    std::vector<format::SamplePoint> back;
    std::string error;
    EXPECT_FALSE(format::decode_sample_timeline(std::string_view(timeline).substr(0, n), &tid, &back, &error))
        << n;
    EXPECT_FALSE(error.empty()) << n;
  }
}

// The table never grows and never loses a count: what it drains plus what it evicted equals a
// brute-force count per key, for a skewed key stream far larger than the table.
TEST(SampleChunks, CountTableMatchesBruteForceUnderEviction) {
  std::mt19937_64 rng(7);
  sample::CountTable table(16);  // 64 entries
  std::map<std::tuple<uint32_t, uint64_t, uint32_t>, uint64_t> reference, got;
  for (int i = 0; i < 200000; ++i) {
    // Zipf-like: a few hot stacks, a long tail.
    const uint32_t stack = static_cast<uint32_t>(1 + (rng() % 1000) * (rng() % 1000) / 1000);
    const uint64_t span = rng() % 4;
    const uint32_t event = 0, weight = 1 + rng() % 3;
    reference[{stack, span, event}] += weight;
    SampleCount evicted;
    if (table.add(stack, span, event, weight, &evicted))
      got[{evicted.stack, evicted.span_id, evicted.event}] += evicted.count;
  }
  EXPECT_GT(table.evictions(), 0u);
  EXPECT_LE(table.used(), table.capacity());
  std::vector<SampleCount> drained;
  table.drain(1, &drained);
  for (const SampleCount& c : drained) got[{c.stack, c.span_id, c.event}] += c.count;
  EXPECT_EQ(got, reference);
}

// The store with a tiny table and overflow: samples beyond both are lost and counted as eviction
// overflow; every other sample is in the counts written.
TEST(SampleChunks, StoreWritesOrCountsEverySample) {
  TempDir dir;
  sample::StoreOptions options;
  options.table_sets = 1;
  options.overflow_capacity = 8;
  options.attribute = false;
  options.timeline = false;
  sample::SampleStore store(options);
  format::ChunkWriter file;
  ASSERT_TRUE(file.open_new(dir.file("s.strata")));
  format::StreamWriter stream(&file, 99);
  sample::SampleBatch batch;
  uint64_t added = 0;
  for (uint32_t i = 0; i < 5000; ++i) {
    batch.samples.push_back({1 + i % 3, int64_t{1000} + i, 1 + (i * 7919) % 97, 0, 1});
    ++added;
  }
  store.add_batch(std::move(batch));
  store.aggregate(false);
  ASSERT_TRUE(store.write(stream, 2000, true));
  stream.flush();
  file.close();
  EXPECT_GT(store.lost_eviction_overflow(), 0u);

  format::ChunkReader reader;
  ASSERT_TRUE(reader.open(dir.file("s.strata"))) << reader.error();
  format::Chunk chunk;
  uint64_t written = 0;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk) {
    if (chunk.type != static_cast<uint16_t>(format::ChunkType::kSampleCounts)) continue;
    format::SampleCountsHeader h;
    std::vector<SampleCount> counts;
    std::string error;
    ASSERT_TRUE(format::decode_sample_counts(chunk.payload, &h, &counts, &error)) << error;
    for (const SampleCount& c : counts) written += c.count;
  }
  EXPECT_EQ(written + store.lost_eviction_overflow(), added);
}

// Closed spans are forgotten 2 s (span_retention_ns) after everything before them was read, but not
// at the end: the last add_spans (complete_before INT64_MAX) once erased every closed span, so the
// samples read from the rings after it (the in-thread mode reads at a watermark) lost their span.
TEST(SampleChunks, ClosedSpansOutliveTheLastDrainButNotTheirRetention) {
  sample::StoreOptions options;
  sample::SampleStore store(options);
  const sample::SpanInterval span{7, 1'000, 2'000, 42};
  store.add_spans({&span, 1}, {}, 1'500);
  EXPECT_EQ(store.span_at(7, 1'500), 42u);
  store.add_spans({}, {}, INT64_MAX);  // the final drain
  EXPECT_EQ(store.span_at(7, 1'500), 42u);
  EXPECT_EQ(store.span_at(7, 2'500), 0u);

  sample::SampleStore later(options);
  later.add_spans({&span, 1}, {}, 1'500);
  later.add_spans({}, {}, 2'000 + options.span_retention_ns + 1);  // long over
  EXPECT_EQ(later.span_at(7, 1'500), 0u);
}

// Misses on addresses no mapping holds (garbage return addresses from frame-pointer walks through
// code without frame pointers) must not re-read /proc/PID/maps at every chance: on PyTorch that
// cost more CPU than the sampling (113 re-reads of a ~2,000-line file in an 8 s run at 99 Hz).
// 40 misses over >= 800 ms: the first read and at most 5 re-reads with the back-off (50, 100, 200,
// 400 ms), 16 re-reads without.
TEST(SampleMappings, MissesOnUnmappedAddressesBackOff) {
  sample::MappingTable table(getpid(), "");
  std::string error;
  ASSERT_TRUE(table.load_proc_maps(&error)) << error;
  const auto start = std::chrono::steady_clock::now();
  int misses = 0;
  while (std::chrono::steady_clock::now() - start < std::chrono::milliseconds(800)) {
    EXPECT_EQ(table.find(0x10), nullptr);  // page zero: never mapped
    ++misses;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GE(misses, 20);
  EXPECT_LE(table.maps_reads(), 6u) << misses << " misses";
  // A real address is still found (and resets the wait).
  EXPECT_NE(table.find(reinterpret_cast<uint64_t>(&getpid)), nullptr);
}

// Misses that no re-read can cure do not re-read at all: a heap pointer (inside a mapping without
// execute permission at the last read), text read as an address (above user space), a small
// integer (below vm.mmap_min_addr). With every executable mapping reported by records
// (perf_event MMAP2), no miss re-reads; without, an address in a gap still does (with back-off).
TEST(SampleMappings, MissesThatCannotBeCodeDoNotRereadTheMaps) {
  // Allocated before the maps are read: a heap that grows after the read (brk) is a gap to it.
  const auto heap = std::make_unique<std::array<char, 4096>>();
  sample::MappingTable table(getpid(), "");
  std::string error;
  ASSERT_TRUE(table.load_proc_maps(&error)) << error;
  void* gap = mmap(nullptr, 1 << 16, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(gap, MAP_FAILED);
  ASSERT_EQ(munmap(gap, 1 << 16), 0);  // a hole now, and at the read above (made after it)
  std::this_thread::sleep_for(std::chrono::milliseconds(60));  // past the 50 ms between re-reads
  const uint64_t reads = table.maps_reads();
  EXPECT_FALSE(table.may_be_code(reinterpret_cast<uint64_t>(heap->data())));
  EXPECT_EQ(table.find(reinterpret_cast<uint64_t>(heap->data())), nullptr);
  EXPECT_EQ(table.find(0x696772616d5f6c64ull), nullptr);  // "dl_margi" read as an address
  EXPECT_EQ(table.find(0x70), nullptr);
  EXPECT_EQ(table.maps_reads(), reads);
  table.set_complete_by_records(true);
  EXPECT_EQ(table.find(reinterpret_cast<uint64_t>(gap) + 8), nullptr);
  EXPECT_EQ(table.maps_reads(), reads);
  table.set_complete_by_records(false);
  EXPECT_TRUE(table.may_be_code(reinterpret_cast<uint64_t>(gap) + 8));
  EXPECT_EQ(table.find(reinterpret_cast<uint64_t>(gap) + 8), nullptr);
  EXPECT_EQ(table.maps_reads(), reads + 1);
  // Code is still found without a re-read.
  EXPECT_NE(table.find(reinterpret_cast<uint64_t>(&getpid)), nullptr);
}

}  // namespace
}  // namespace strata::testing
