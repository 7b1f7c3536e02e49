// A trace cut short (killed writer, full disk, partial copy) loses little: chunks are bounded in
// bytes, and a cut that leaves nothing to recover is an error, never an empty success.
#include <gtest/gtest.h>

#include <string>

#include "../test_util.h"
#include "collect/runtime.h"
#include "format/chunk_reader.h"
#include "strata/strata.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

// Records `spans` API spans with an attribute each; only size bounds end a chunk (no timed flush).
std::string record_one_burst(const testing::TempDir& dir, int spans) {
  collect::SessionConfig c;
  c.path = dir.file("burst.strata");
  c.level = STRATA_LEVEL_MODEL;
  c.flush_interval_ms = 600'000;
  EXPECT_TRUE(collect::start_recording(c));
  for (int i = 0; i < spans; ++i) {
    strata_span_id id = strata_span_begin("item", STRATA_LEVEL_MODEL);
    strata_span_set_int(id, "index", i);
    strata_span_end(id);
  }
  collect::stop_recording();
  return c.path;
}

std::string cut_copy(const testing::TempDir& dir, const std::string& path, size_t keep) {
  std::string bytes = testing::read_file(path);
  std::string out = dir.file("cut-" + std::to_string(keep) + ".strata");
  testing::write_file(out, bytes.substr(0, std::min(keep, bytes.size())));
  return out;
}

TEST(Truncation, SpansChunksAreBoundedInBytes) {
  testing::TempDir dir;
  const int kSpans = 16000;  // fewer than the old 16,384-span chunk: one 1.3 MB chunk before
  std::string path = record_one_burst(dir, kSpans);
  format::ChunkReader reader;
  ASSERT_TRUE(reader.open(path));
  format::Chunk chunk;
  size_t spans_chunks = 0, largest = 0;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk) {
    if (chunk.type != static_cast<uint16_t>(format::ChunkType::kSpans)) continue;
    ++spans_chunks;
    largest = std::max(largest, chunk.payload.size());
  }
  EXPECT_GE(spans_chunks, 4u);
  EXPECT_LE(largest, 256u * 1024 + 64 + 16) << "one span and its attribute past the bound at most";

  // Cut in the middle: about half of the spans come back.
  const std::string whole = testing::read_file(path);
  trace::Trace half;
  std::string error;
  ASSERT_TRUE(trace::load_trace(cut_copy(dir, path, whole.size() / 2), &half, &error)) << error;
  EXPECT_GE(half.spans.size(), static_cast<size_t>(kSpans) * 3 / 10);
  EXPECT_EQ(half.stats.get(stats::Stat::kLoadTruncatedFiles), 1u);
}

TEST(Truncation, CutInsideTheOnlySpansChunkIsAnError) {
  testing::TempDir dir;
  std::string path = record_one_burst(dir, 2000);  // one spans chunk
  format::ChunkReader reader;
  ASSERT_TRUE(reader.open(path));
  format::Chunk chunk;
  uint64_t spans_offset = 0;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk)
    if (chunk.type == static_cast<uint16_t>(format::ChunkType::kSpans) && spans_offset == 0) spans_offset = chunk.offset;
  ASSERT_GT(spans_offset, 0u);
  std::string cut = cut_copy(dir, path, spans_offset + 5000);
  trace::Trace t;
  std::string error;
  EXPECT_FALSE(trace::load_trace(cut, &t, &error)) << "0 spans recovered must not load as an empty trace";
  EXPECT_NE(error.find(cut), std::string::npos) << error;
  EXPECT_NE(error.find("cut at offset " + std::to_string(spans_offset)), std::string::npos) << error;

  std::string output;
  std::string strata = std::string(STRATA_BINARY_DIR) + "/bin/strata";
  EXPECT_NE(testing::run_command(strata + " info " + cut, &output), 0) << output;
  EXPECT_NE(output.find("no span could be recovered"), std::string::npos) << output;
}

TEST(Truncation, AnUndamagedTraceWithoutSpansStillLoads) {
  testing::TempDir dir;
  std::string path = record_one_burst(dir, 0);
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(path, &t, &error)) << error;
  EXPECT_EQ(t.spans.size(), 0u);
}

}  // namespace
}  // namespace strata
