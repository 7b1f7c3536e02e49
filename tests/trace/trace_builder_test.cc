// The TraceBuilder and open_trace: one sort (in place, checked against a brute-force sort at
// realistic sizes), span numbering for importers, merging several inputs of different formats into
// one trace, the reader registry, and one clear line for every input that cannot be opened.
#include "trace/trace_builder.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <numeric>
#include <random>
#include <tuple>

#include "../test_util.h"
#include "format/chunk_writer.h"
#include "format/stream_writer.h"
#include "import/importer.h"
#include "trace/span_tree.h"
#include "trace/trace_loader.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"

namespace strata::trace {
namespace {

using stats::Stat;
using strata::testing::TempDir;

const std::string kKineto =
    std::string(STRATA_SOURCE_DIR) + "/tests/golden/inputs/a100_alexnet_train.json.gz";
const std::string kNative = std::string(STRATA_SOURCE_DIR) + "/tests/golden/inputs/gpu_model.trace";

// Spans with random times (many ties, nested and not) and a random number of attributes each, whose
// values identify the span they belong to.
Trace random_trace(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Trace t;
  t.add_process(Process{});
  const uint32_t key = t.strings.intern("owner");
  for (size_t i = 0; i < n; ++i) {
    SpanRecord s;
    s.span_id = i + 1;
    s.start_ns = static_cast<int64_t>(rng() % (n / 4 + 1));  // ties are frequent
    s.end_ns = s.start_ns + static_cast<int64_t>(rng() % 3);
    s.level = static_cast<uint8_t>(10 * (1 + rng() % 6));
    std::vector<AttrRecord> attrs(rng() % 4);
    for (size_t k = 0; k < attrs.size(); ++k) {
      attrs[k].key = key;
      attrs[k].type = static_cast<uint8_t>(AttrType::kInt);
      attrs[k].value.i = static_cast<int64_t>(i * 10 + k);
    }
    t.add_span(s, attrs);
  }
  return t;
}

TEST(TraceBuilder, SortInPlaceEqualsAStableSortByStartLongerFirstShallowerFirst) {
  for (uint32_t seed : {1u, 2u, 3u}) {
    Trace t = random_trace(seed == 3 ? 400'000 : 50'000, seed);
    // Brute force: a stable sort of copies, attributes carried along.
    std::vector<uint32_t> order(t.spans.size());
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](uint32_t a, uint32_t b) { return span_before(t.spans[a], t.spans[b]); });
    std::vector<SpanRecord> expect_spans;
    std::vector<std::vector<int64_t>> expect_attrs;
    for (uint32_t i : order) {
      expect_spans.push_back(t.spans[i]);
      std::vector<int64_t> values;
      for (const AttrRecord& a : t.attributes(i)) values.push_back(a.value.i);
      expect_attrs.push_back(values);
    }
    const size_t attrs_before = t.attrs.size();
    sort_spans(&t);
    ASSERT_EQ(t.spans.size(), expect_spans.size());
    EXPECT_EQ(t.attrs.size(), attrs_before) << "attributes never move";
    for (size_t i = 0; i < t.spans.size(); ++i) {
      ASSERT_EQ(t.spans[i].span_id, expect_spans[i].span_id) << "seed " << seed << " position " << i;
      std::vector<int64_t> values;
      for (const AttrRecord& a : t.attributes(i)) values.push_back(a.value.i);
      ASSERT_EQ(values, expect_attrs[i]) << "position " << i;
    }
    // A trace appended to after sorting keeps its attributes right (the offsets' end entry).
    AttrRecord extra = t.int_attr("late", 7);
    size_t added = t.add_span(SpanRecord{}, std::span<const AttrRecord>(&extra, 1));
    ASSERT_EQ(t.attributes(added).size(), 1u);
    EXPECT_EQ(t.attributes(added)[0].value.i, 7);
  }
}

// Spans as importers hand them over: `tracks` sequences each in time order (nested slices, equal
// starts, equal spans), interleaved at random, and optionally a few spans out of place. Up to 64
// sequences are merged as runs, more go to the full sort: both must give the stable sort's order.
Trace interleaved_trace(size_t n, size_t tracks, size_t misplaced, uint32_t seed) {
  std::mt19937_64 rng(seed);
  Trace t;
  t.add_process(Process{});
  const uint32_t key = t.strings.intern("owner");
  std::vector<SpanRecord> last(tracks);  // each track's previous span: the next sorts after it
  for (size_t i = 0; i < n; ++i) {
    SpanRecord& prev = last[rng() % tracks];
    SpanRecord s;
    s.span_id = i + 1;
    if (i >= tracks && rng() % 3 == 0) {  // an equal start: not longer, not shallower if as long
      s.start_ns = prev.start_ns;
      s.end_ns = std::max(s.start_ns, prev.end_ns - static_cast<int64_t>(rng() % 2));
      s.level = static_cast<uint8_t>(s.end_ns == prev.end_ns ? prev.level + 10 * (rng() % 2) : 10);
    } else {
      s.start_ns = prev.start_ns + 1 + static_cast<int64_t>(rng() % 2);
      s.end_ns = s.start_ns + static_cast<int64_t>(rng() % 4);
      s.level = static_cast<uint8_t>(10 * (1 + rng() % 3));
    }
    prev = s;
    if (misplaced != 0 && rng() % (n / misplaced + 1) == 0)
      s.start_ns = static_cast<int64_t>(rng() % (i + 1));
    AttrRecord a;
    a.key = key;
    a.type = static_cast<uint8_t>(AttrType::kInt);
    a.value.i = static_cast<int64_t>(i);
    t.add_span(s, std::span<const AttrRecord>(&a, 1));
  }
  return t;
}

TEST(TraceBuilder, SortOfInterleavedSortedSequencesEqualsTheStableSort) {
  uint32_t seed = 10;
  for (size_t tracks : {1, 2, 3, 14, 63, 64, 65, 200})
    for (size_t misplaced : {0, 5, 200}) {
      Trace t = interleaved_trace(tracks == 1 ? 5'000 : 30'000, tracks, misplaced, ++seed);
      std::vector<uint32_t> order(t.spans.size());
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(),
                       [&](uint32_t a, uint32_t b) { return span_before(t.spans[a], t.spans[b]); });
      std::vector<uint64_t> expect;
      for (uint32_t i : order) expect.push_back(t.spans[i].span_id);
      sort_spans(&t);
      ASSERT_EQ(t.spans.size(), expect.size());
      for (size_t i = 0; i < t.spans.size(); ++i) {
        ASSERT_EQ(t.spans[i].span_id, expect[i])
            << tracks << " tracks, " << misplaced << " misplaced, at " << i;
        ASSERT_EQ(t.attributes(i).size(), 1u);
        ASSERT_EQ(t.attributes(i)[0].value.i, static_cast<int64_t>(expect[i] - 1)) << "attributes follow";
      }
    }
}

TEST(TraceBuilder, NumbersSpansWithoutIdsInTimeOrderPerProcess) {
  Trace t;
  TraceBuilder b(&t);
  uint16_t p = t.add_process(Process{});
  uint16_t q = t.add_process(Process{});
  for (int64_t start : {50, 10, 30, 20, 40}) {
    SpanRecord s;
    s.start_ns = start;
    s.end_ns = start + 1;
    s.process = start == 30 ? q : p;
    t.add_span(s);
  }
  b.number_spans_of(p);
  b.number_spans_of(q);
  b.finish();
  std::vector<std::tuple<int64_t, uint16_t, uint64_t>> got;
  for (const SpanRecord& s : t.spans) got.emplace_back(s.start_ns, s.process, s.span_id);
  const std::vector<std::tuple<int64_t, uint16_t, uint64_t>> expect = {
      {10, p, 1}, {20, p, 2}, {30, q, 1}, {40, p, 3}, {50, p, 4}};
  EXPECT_EQ(got, expect);
  EXPECT_TRUE(t.has_structure()) << "finish() builds the tracks and the tree once";
  EXPECT_EQ(t.stats.get(Stat::kTreeRoots), 5u);
}

// Files written before the stats registry (and by collectors that name causes it does not know yet):
// their counters read as stats under the same names, nothing is lost, and they are written back
// under the same keys.
TEST(OpenTrace, CountersOfOlderAndNewerWritersReadAsStats) {
  TempDir dir;
  {
    format::ChunkWriter file;
    ASSERT_TRUE(file.open(dir.file("old.strata")));
    format::StreamWriter w(&file, 9);
    format::Properties process;
    process.set_int("pid", 77);
    process.set_int("import.events_read", 12);  // an importer's count, stored as a Process property
    process.set("import.format", "kineto");
    // Damaged: above 2^48, more events than any recording holds (sums over processes could wrap).
    process.set_int("import.spans_written", (int64_t{1} << 48) + 1);
    w.write_properties(format::ChunkType::kProcess, process);
    SpanRecord s;
    s.span_id = 1;
    s.end_ns = 5;
    s.name = w.intern("step");
    s.level = 20;
    s.kind = 1;
    w.add_span(s);
    w.flush();
    format::Properties counters;
    counters.set_int("dropped.buffer_full", 3);                    // the collector's DropCause
    counters.set_int("dropped.cupti_records", 2);                  // a GPU collector's free string
    counters.set_int("dropped.import.malformed_ts", 1);            // an importer's drop
    counters.set_int("dropped.ring_overflow_from_the_future", 4);  // not registered (a newer collector)
    counters.set_int("dropped.end_lost", -5);                      // damaged: negative
    w.write_properties(format::ChunkType::kStats, counters);
    file.close();
  }
  Trace t;
  std::string error;
  ASSERT_TRUE(open_trace(dir.file("old.strata"), &t, &error)) << error;
  ASSERT_EQ(t.processes.size(), 1u);
  const Process& p = t.processes[0];
  EXPECT_EQ(p.stats.get(Stat::kCollectorBufferFull), 3u);
  EXPECT_EQ(p.stats.get(Stat::kCollectorCuptiRecords), 2u);
  EXPECT_EQ(p.stats.get(Stat::kImportMalformedTs), 1u);
  EXPECT_EQ(p.stats.get(Stat::kImportEventsRead), 12u);
  EXPECT_FALSE(p.properties.get("import.events_read")) << "a stat, not also a property";
  EXPECT_EQ(p.properties.get("import.format"), "kineto");
  EXPECT_EQ(p.stats.get("dropped.ring_overflow_from_the_future"), 4u);
  EXPECT_EQ(p.stats.get(Stat::kCollectorEndLost), 0u) << "a negative counter is not believed";
  EXPECT_EQ(p.stats.get(Stat::kImportSpansWritten), 0u) << "nor one above 2^48";
  EXPECT_EQ(t.stats.get(Stat::kLoadBadCounters), 2u) << "each counter left out is counted";
  EXPECT_FALSE(t.warnings.empty());
  EXPECT_EQ(t.total_drops(), 3u + 2u + 1u + 4u);
  // Saved and read again: the same counters under the same keys.
  ASSERT_TRUE(save_trace(t, dir.file("again.strata"), &error)) << error;
  Trace again;
  ASSERT_TRUE(open_trace(dir.file("again.strata"), &again, &error)) << error;
  EXPECT_EQ(again.processes[0].stats.nonzero(), p.stats.nonzero());
  EXPECT_EQ(again.processes[0].stats.unregistered(), p.stats.unregistered());
}

TEST(OpenTrace, MergesNativeAndImportedInputsIntoOneSortedTraceWithOneTree) {
  import::register_readers();
  Trace native, imported, merged;
  std::string error;
  ASSERT_TRUE(open_trace(kNative, &native, &error)) << error;
  ASSERT_TRUE(open_trace(kKineto, &imported, &error)) << error;
  const std::vector<std::string> both = {kNative, kKineto};
  ASSERT_TRUE(open_traces(both, &merged, &error)) << error;
  EXPECT_EQ(merged.spans.size(), native.spans.size() + imported.spans.size());
  EXPECT_EQ(merged.processes.size(), native.processes.size() + imported.processes.size());
  EXPECT_TRUE(std::is_sorted(merged.spans.begin(), merged.spans.end(), span_before));
  EXPECT_TRUE(merged.has_structure());
  EXPECT_EQ(merged.tree().size(), merged.spans.size());
  // The tree of the merge is the two trees side by side: the same links, counted once each.
  for (Stat s : {Stat::kTreeCorrelationLinks, Stat::kTreeExternalLinks, Stat::kTreeExplicitLinks,
                 Stat::kTreeReconstructed, Stat::kTreeRoots})
    EXPECT_EQ(merged.stats.get(s), native.stats.get(s) + imported.stats.get(s)) << stats::info(s).name;
  EXPECT_EQ(merged.stats.get(Stat::kLoadFiles), 2u);
  // The importer's stats stay on its main process.
  uint64_t events = 0;
  for (const Process& p : merged.processes) events += p.stats.get(Stat::kImportEventsRead);
  EXPECT_GT(events, 0u);
}

TEST(OpenTrace, PicksTheReaderByContentAndByFormatName) {
  import::register_readers();
  EXPECT_NE(find_reader("native"), nullptr);
  EXPECT_EQ(find_reader("kineto"), find_reader("json"));
  EXPECT_EQ(find_reader("onnxruntime"), find_reader("json"));
  EXPECT_NE(find_reader("nsys"), nullptr);
  EXPECT_NE(find_reader("ncu"), nullptr);
  EXPECT_EQ(find_reader("perfetto"), nullptr);
  const size_t readers = registered_readers().size();
  EXPECT_EQ(readers, 4u);      // native, json, nsys, ncu
  import::register_readers();  // idempotent
  EXPECT_EQ(registered_readers().size(), readers);
  Trace t;
  std::string error;
  OpenOptions o;
  o.format = "perfetto";
  EXPECT_FALSE(open_trace(kKineto, &t, &error, o));
  EXPECT_NE(error.find("unknown format 'perfetto'"), std::string::npos) << error;
  EXPECT_NE(error.find("kineto"), std::string::npos) << error;
  o.format = "kineto";
  EXPECT_TRUE(open_trace(kKineto, &t, &error, o)) << error;
}

TEST(OpenTrace, OneClearLineForInputsNoReaderCanOpen) {
  import::register_readers();
  TempDir dir;
  struct Case {
    std::string path;
    std::string expect;
  };
  strata::testing::write_file(dir.file("empty.strata"), "");
  strata::testing::write_file(dir.file("garbage.bin"), std::string("\x01\x02\x03\x04garbage", 11));
  strata::testing::write_file(dir.file("db.sqlite"), std::string("SQLite format 3\0rest", 20));
  std::filesystem::create_directory(dir.file("no_traces"));
  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  const std::vector<Case> cases = {
      {dir.file("missing.strata"), "no such file or directory"},
      {dir.file("empty.strata"), "empty file (0 bytes)"},
      {dir.file("garbage.bin"), "starts with bytes 01 02 03 04"},
      {dir.file("db.sqlite"), "not a readable SQLite database"},  // the nsys reader's line
      {dir.file("no_traces"), "directory holds no .strata files"},
      {dir.file("fifo"), "a FIFO, not a trace file"},
  };
  for (const Case& c : cases) {
    Trace t;
    std::string error;
    EXPECT_FALSE(open_trace(c.path, &t, &error)) << c.path;
    EXPECT_NE(error.find(c.expect), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos) << "one line: " << error;
    EXPECT_EQ(error.rfind(c.path, 0), 0u) << "names the input: " << error;
  }
}

// In a child whose address space is capped below what the trace needs: one line, no crash.
TEST(OpenTrace, SaysWhenTheTraceWillNotFitInMemory) {
  TempDir dir;
  Trace big = random_trace(400'000, 5);
  std::string error;
  ASSERT_TRUE(save_trace(big, dir.file("big.strata"), &error)) << error;
  const std::string out = dir.file("child.txt");
  pid_t pid = fork();
  if (pid == 0) {
    struct rlimit rl {};
    getrlimit(RLIMIT_AS, &rl);
    std::ifstream statm("/proc/self/statm");
    uint64_t pages = 0;
    statm >> pages;
    // What the process uses now plus a quarter of the file: far less than loading it needs.
    rl.rlim_cur = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) +
                  std::filesystem::file_size(dir.file("big.strata")) / 4;
    setrlimit(RLIMIT_AS, &rl);
    Trace t;
    std::string e;
    const bool ok = open_trace(dir.file("big.strata"), &t, &e);
    strata::testing::write_file(out, ok ? "opened" : e);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status)) << "the child crashed instead of refusing";
  const std::string said = strata::testing::read_file(out);
  EXPECT_NE(said.find("needs about"), std::string::npos) << said;
  EXPECT_NE(said.find("STRATA_MEMORY_CHECK=0"), std::string::npos) << said;
}

// Parallel reads need half again the estimate (measured on Kineto ranks); one by one, the estimate.
TEST(OpenTrace, ParallelReadsOnlyWhereHalfAgainTheEstimateFits) {
  EXPECT_TRUE(parallel_read_fits(1000, 1500));
  EXPECT_TRUE(parallel_read_fits(1000, UINT64_MAX));
  EXPECT_FALSE(parallel_read_fits(1000, 1499));
  EXPECT_FALSE(parallel_read_fits(1000, 1000));
  EXPECT_FALSE(parallel_read_fits(1000, 10));
  EXPECT_TRUE(parallel_read_fits(UINT64_MAX / 2, UINT64_MAX));  // no overflow near the top
  EXPECT_FALSE(parallel_read_fits(UINT64_MAX, UINT64_MAX));
}

// Runs appended one after another (run_set, several files into one trace) reserve the sum each
// time: the columns grow geometrically, not by a reallocation and a full copy per run.
TEST(TraceReserve, AppendingRunAfterRunReallocatesLogarithmicallyOften) {
  Trace t;
  int span_moves = 0, attr_moves = 0, begin_moves = 0;
  for (int run = 0; run < 2000; ++run) {
    const size_t spans = t.spans.capacity(), attrs = t.attrs.capacity(), begins = t.attr_begin.capacity();
    t.reserve(t.spans.size() + 10, t.attrs.size() + 30);
    span_moves += t.spans.capacity() != spans;
    attr_moves += t.attrs.capacity() != attrs;
    begin_moves += t.attr_begin.capacity() != begins;
    ASSERT_GE(t.spans.capacity(), t.spans.size() + 10);
    ASSERT_GE(t.attrs.capacity(), t.attrs.size() + 30);
    t.spans.resize(t.spans.size() + 10);
    t.attrs.resize(t.attrs.size() + 30);
    t.attr_begin.resize(t.spans.size() + 1);
  }
  EXPECT_LE(span_moves, 20);
  EXPECT_LE(attr_moves, 20);
  EXPECT_LE(begin_moves, 20);
}

}  // namespace
}  // namespace strata::trace
