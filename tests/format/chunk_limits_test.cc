// The zstd expansion limit is one limit, shared by the writers and the reader (format/file_format.h:
// kDefaultInflateRatio): no writer makes a chunk that the reader then skips as a compression bomb.
// Before, names of 100 KB of repeated text compressed past 128:1 and every name of their chunk was
// lost on loading (`strata import` exited 0; 7,753 undefined strings on one trace).
#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "../test_util.h"
#include "format/chunk_reader.h"
#include "format/chunk_writer.h"
#include "format/payloads.h"
#include "format/stream_writer.h"
#include "format/trace_merge.h"
#include "trace/trace_loader.h"
#include "trace/trace_saver.h"

namespace strata {
namespace {

// Names built to defeat the limit: many small random ones, one short random unit repeated to a
// length drawn log-uniformly from 1 B to 1 MB, and a few of 1 MB of a single byte.
std::vector<std::string> adversarial_names(uint32_t seed) {
  std::mt19937 rng(seed);
  auto text = [&](size_t n) {
    std::string s(n, ' ');
    for (char& c : s) c = static_cast<char>(0x20 + rng() % 95);
    return s;
  };
  std::vector<std::string> names;
  for (int i = 0; i < 2000; ++i) names.push_back(text(1 + rng() % 64));
  std::uniform_real_distribution<double> log_length(0, std::log(double{1 << 20}));
  for (int i = 0; i < 60; ++i) {
    const std::string unit = text(1 + rng() % 16);
    const auto length = static_cast<size_t>(std::exp(log_length(rng)));
    std::string name;
    while (name.size() < length) name += unit;
    name.resize(std::max<size_t>(1, length));
    names.push_back(name + std::to_string(i));  // distinct, so each is its own string entry
  }
  for (int i = 0; i < 3; ++i) names.push_back(std::string(size_t{1} << 20, static_cast<char>('a' + i)));
  std::shuffle(names.begin(), names.end(), rng);
  return names;
}

// Every chunk of the file is one the default reader takes: nothing corrupt, no zstd chunk past the
// ratio.
void expect_every_chunk_readable(const std::string& path) {
  format::ChunkReader reader;
  ASSERT_TRUE(reader.open(path)) << reader.error();
  format::Chunk chunk;
  size_t chunks = 0;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk) {
    ++chunks;
    if ((chunk.flags & format::kChunkZstd) == 0) continue;
    const uint64_t stored = chunk.framed.size() - sizeof(format::ChunkHeader);
    EXPECT_TRUE(format::inflate_within(chunk.payload.size(), stored, format::kDefaultInflateRatio))
        << "chunk at offset " << chunk.offset << ": " << chunk.payload.size() << " bytes from " << stored;
  }
  EXPECT_GT(chunks, 0u);
  EXPECT_EQ(reader.corrupt_chunks(), 0u);
  for (const std::string& w : reader.warnings()) ADD_FAILURE() << w;
}

// Span i is named names[i] and starts at i: loaded back, every name is the one written.
void expect_names_load_back(const std::string& path, const std::vector<std::string>& names) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error)) << error;
  EXPECT_EQ(t.stat(stats::Stat::kLoadUnknownStrings), 0u);
  EXPECT_EQ(t.stat(stats::Stat::kLoadCorruptChunks), 0u);
  ASSERT_EQ(t.spans.size(), names.size());
  size_t wrong = 0;
  for (const SpanRecord& s : t.spans) {
    ASSERT_LT(static_cast<size_t>(s.start_ns), names.size());
    if (t.name(s) != names[static_cast<size_t>(s.start_ns)]) ++wrong;
  }
  EXPECT_EQ(wrong, 0u) << "of " << names.size() << " names";
}

SpanRecord span_at(size_t i, uint32_t name) {
  SpanRecord s;
  s.span_id = i + 1;
  s.start_ns = static_cast<int64_t>(i);
  s.end_ns = s.start_ns + 1;
  s.name = name;
  s.level = 30;
  return s;
}

void write_stream(const std::string& path, const std::vector<std::string>& names, int level) {
  format::ChunkWriter file;
  ASSERT_TRUE(file.open(path)) << file.error();
  format::StreamWriter w(&file, 0x1234, level);
  format::Properties p;
  p.set_int("pid", 7);
  ASSERT_TRUE(w.write_properties(format::ChunkType::kProcess, p));
  for (size_t i = 0; i < names.size(); ++i) {
    w.add_span(span_at(i, w.intern(names[i])));
    if (i % 500 == 499) {
      ASSERT_TRUE(w.flush()) << w.error();  // strings chunks of several sizes
    }
  }
  ASSERT_TRUE(w.write_properties(format::ChunkType::kEnd, {})) << w.error();
}

TEST(InflateLimit, TheLimitIsExactAndCannotWrapAround) {
  EXPECT_TRUE(format::inflate_within(128 * 1000 + 4096, 1000, 128));
  EXPECT_FALSE(format::inflate_within(128 * 1000 + 4097, 1000, 128));
  // A ratio raised through STRATA_MAX_INFLATE_RATIO: 2^40 x 2^28 does not wrap to 16.
  EXPECT_TRUE(format::inflate_within(uint64_t{1} << 30, uint64_t{1} << 28, uint64_t{1} << 40));
}

TEST(InflateLimit, AdversarialStringTablesLoadBackIdenticalAtEveryLevel) {
  ::unsetenv(format::kInflateRatioEnv);
  testing::TempDir dir;
  for (uint32_t seed : {1u, 2u, 3u}) {
    const std::vector<std::string> names = adversarial_names(seed);
    for (int level : {1, 3, 9}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + ", zstd level " + std::to_string(level));
      const std::string path = dir.file("s" + std::to_string(seed) + "-" + std::to_string(level) + ".strata");
      write_stream(path, names, level);
      expect_every_chunk_readable(path);
      expect_names_load_back(path, names);
    }
  }
}

// What `strata import` (and every command that saves a trace) writes: trace::save_trace at the
// import's default level.
TEST(InflateLimit, SavedTracesKeepTheirHugeRepetitiveNames) {
  ::unsetenv(format::kInflateRatioEnv);
  testing::TempDir dir;
  std::vector<std::string> names;  // op names of 100 KB and more of repeated text, as in the report
  for (int i = 0; i < 40; ++i) {
    const std::string unit = "aten::conv2d_" + std::to_string(i) + "_";
    std::string name;
    while (name.size() < size_t{100'000} + 5'000 * i) name += unit;
    names.push_back(name);
  }
  trace::Trace t;
  t.add_process(trace::Process{});
  for (size_t i = 0; i < names.size(); ++i) t.add_span(span_at(i, t.strings.intern(names[i])));
  const std::string path = dir.file("saved.strata");
  std::string error;
  ASSERT_TRUE(trace::save_trace(t, path, &error, 3)) << error;
  expect_every_chunk_readable(path);
  expect_names_load_back(path, names);
}

// A part whose strings chunk is past the default ratio (an older writer) is read by the merge only
// when STRATA_MAX_INFLATE_RATIO allows it; the merged file then stores it uncompressed, so it loads
// with the default limit (before: copied verbatim, and skipped by every default reader).
TEST(InflateLimit, MergeStoresAChunkPastTheDefaultRatioUncompressed) {
  testing::TempDir dir;
  const std::string name(size_t{1} << 20, 'x');
  std::string strings;
  const std::pair<uint32_t, std::string_view> entry{1, name};
  format::encode_strings(std::span(&entry, 1), &strings);
  std::string stored(ZSTD_compressBound(strings.size()), '\0');
  stored.resize(ZSTD_compress(stored.data(), stored.size(), strings.data(), strings.size(), 3));
  ASSERT_FALSE(format::inflate_within(strings.size(), stored.size(), format::kDefaultInflateRatio));
  const std::string part = dir.file("part.strata");
  {
    format::ChunkWriter file;
    ASSERT_TRUE(file.open(part));
    format::Properties p;
    p.set_int("pid", 9);
    ASSERT_TRUE(file.write_chunk(format::ChunkType::kProcess, 5, p.encode()));
    format::ChunkHeader h = format::make_chunk_header(format::ChunkType::kStrings, format::kChunkZstd, 5,
                                                      stored, static_cast<uint32_t>(strings.size()));
    ASSERT_TRUE(file.write_raw(std::string(reinterpret_cast<const char*>(&h), sizeof(h)) + stored));
    std::string spans;
    const SpanRecord s = span_at(0, 1);
    format::encode_spans(std::span(&s, 1), {}, &spans);
    ASSERT_TRUE(file.write_chunk(format::ChunkType::kSpans, 5, spans));
  }
  ::setenv(format::kInflateRatioEnv, "1000000", 1);
  const format::MergeResult merged = format::merge_trace_files({part}, dir.file("merged.strata"), {});
  ::unsetenv(format::kInflateRatioEnv);
  ASSERT_TRUE(merged.ok) << merged.error;
  expect_every_chunk_readable(dir.file("merged.strata"));
  expect_names_load_back(dir.file("merged.strata"), {name});
}

}  // namespace
}  // namespace strata
