// The reader never crashes and always explains: corrupt, truncated, foreign and future-version input.
#include <gtest/gtest.h>

#include <cstring>

#include "../test_util.h"
#include "core/crc32c.h"
#include "format/chunk_reader.h"
#include "format/payloads.h"
#include "format/stream_writer.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

// A valid file of `chunks` span chunks with `per_chunk` spans each. Returns its bytes.
std::string make_file(const std::string& path, int chunks, int per_chunk) {
  format::ChunkWriter file;
  EXPECT_TRUE(file.open(path));
  format::StreamWriter w(&file, 7, 0, static_cast<size_t>(per_chunk));
  format::Properties p;
  p.set_int("pid", 1);
  w.write_properties(format::ChunkType::kProcess, p);
  for (int i = 0; i < chunks * per_chunk; ++i) {
    SpanRecord s;
    s.span_id = static_cast<uint64_t>(i + 1);
    s.start_ns = i;
    s.end_ns = i + 1;
    s.name = w.intern("n" + std::to_string(i % 3));
    s.level = 20;
    s.kind = 1;
    w.add_span(s);
  }
  w.flush();
  file.close();
  return testing::read_file(path);
}

// What a load said about damage: the load.* stats and the warnings.
struct LoadReport {
  std::vector<std::string> warnings;
  uint64_t corrupt_chunks = 0, skipped_bytes = 0, unknown_chunks = 0, truncated_files = 0;
};

LoadReport report_of(const trace::Trace& t) {
  using stats::Stat;
  return {t.warnings, t.stats.get(Stat::kLoadCorruptChunks), t.stats.get(Stat::kLoadSkippedBytes),
          t.stats.get(Stat::kLoadUnknownChunks), t.stats.get(Stat::kLoadTruncatedFiles)};
}

struct LoadOutcome {
  bool ok;
  std::string error;
  size_t spans;
  LoadReport report;
};

LoadOutcome load(const std::string& path) {
  trace::Trace t;
  std::string error;
  bool ok = trace::load_trace(path, &t, &error);
  return {ok, error, t.spans.size(), report_of(t)};
}

// The same from memory: the exhaustive corruption loops load thousands of variants.
LoadOutcome load_bytes(const std::string& bytes) {
  format::ChunkReader reader;
  trace::Trace t;
  std::string error;
  bool ok = reader.open(format::memory_source(bytes), "mem.strata");
  if (!ok) error = reader.error();
  if (ok) ok = trace::load_chunks(reader, &t, &error);
  return {ok, error, t.spans.size(), report_of(t)};
}

TEST(CorruptInput, EmptyFileIsNotATrace) {
  testing::TempDir dir;
  testing::write_file(dir.file("e.strata"), "");
  auto r = load(dir.file("e.strata"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find(dir.file("e.strata")), std::string::npos);
  EXPECT_NE(r.error.find("offset 0"), std::string::npos);
  EXPECT_NE(r.error.find("empty file (0 bytes)"), std::string::npos) << r.error;  // not "bad magic"
  EXPECT_EQ(r.error.find("bad magic"), std::string::npos) << r.error;
}

TEST(CorruptInput, ForeignJsonNamesImport) {
  testing::TempDir dir;
  testing::write_file(dir.file("k.json"), "{\"traceEvents\": []}");
  auto r = load(dir.file("k.json"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("not a Strata trace"), std::string::npos);
  EXPECT_NE(r.error.find("strata import"), std::string::npos);
}

TEST(CorruptInput, MissingFile) {
  auto r = load("/nonexistent/x.strata");
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("/nonexistent/x.strata"), std::string::npos);
}

TEST(CorruptInput, FutureMajorVersionAsksForUpgrade) {
  testing::TempDir dir;
  std::string bytes = make_file(dir.file("v.strata"), 1, 10);
  format::FileHeader h;
  std::memcpy(&h, bytes.data(), sizeof(h));
  h.version_major = format::kVersionMajor + 1;
  h.crc = crc32c(&h, offsetof(format::FileHeader, crc));
  std::memcpy(bytes.data(), &h, sizeof(h));
  testing::write_file(dir.file("v.strata"), bytes);
  auto r = load(dir.file("v.strata"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("newer than this reader"), std::string::npos);
  EXPECT_NE(r.error.find("upgrade"), std::string::npos);
}

TEST(CorruptInput, HeaderChecksumMismatch) {
  testing::TempDir dir;
  std::string bytes = make_file(dir.file("h.strata"), 1, 10);
  bytes[12] ^= 0x40;
  testing::write_file(dir.file("h.strata"), bytes);
  auto r = load(dir.file("h.strata"));
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.error.find("checksum"), std::string::npos);
}

TEST(CorruptInput, TruncationAtEveryOffsetLoadsEveryCompleteChunk) {
  testing::TempDir dir;
  const std::string full = make_file(dir.file("full.strata"), 4, 25);
  // Offsets where chunks end, found by reading the intact file.
  std::vector<std::pair<uint64_t, size_t>> chunk_ends;  // (end offset, spans loaded through it)
  {
    format::ChunkReader reader;
    ASSERT_TRUE(reader.open(dir.file("full.strata")));
    format::Chunk c;
    size_t spans = 0;
    while (reader.next(&c) == format::ChunkReader::Status::kChunk) {
      if (c.type == static_cast<uint16_t>(format::ChunkType::kSpans)) {
        format::DecodedSpans d;
        std::string e;
        ASSERT_TRUE(format::decode_spans(c.payload, &d, &e));
        spans += d.span_count;
      }
      chunk_ends.emplace_back(c.offset + c.framed.size(), spans);
    }
  }
  ASSERT_EQ(chunk_ends.back().second, 100u);
  for (size_t cut = 0; cut <= full.size(); ++cut) {
    auto r = load_bytes(full.substr(0, cut));
    if (cut < sizeof(format::FileHeader)) {
      EXPECT_FALSE(r.ok) << cut;
      EXPECT_FALSE(r.error.empty());
      continue;
    }
    ASSERT_TRUE(r.ok) << "cut at " << cut << ": " << r.error;
    size_t expected = 0;
    bool at_boundary = cut == sizeof(format::FileHeader);
    for (auto [end, spans] : chunk_ends) {
      if (end <= cut) expected = spans;
      if (end == cut) at_boundary = true;
    }
    EXPECT_EQ(r.spans, expected) << "cut at " << cut;
    EXPECT_EQ(r.report.truncated_files, at_boundary ? 0u : 1u) << "cut at " << cut;
    if (!at_boundary) {
      ASSERT_FALSE(r.report.warnings.empty());
      EXPECT_NE(r.report.warnings[0].find("truncated tail"), std::string::npos);
      EXPECT_NE(r.report.warnings[0].find("offset"), std::string::npos);
    }
  }
}

TEST(CorruptInput, EveryByteFlipIsDetectedOrHarmless) {
  testing::TempDir dir;
  const std::string full = make_file(dir.file("full.strata"), 3, 10);
  for (size_t i = 0; i < full.size(); ++i) {
    std::string bytes = full;
    bytes[i] ^= 0x5A;
    auto r = load_bytes(bytes);
    if (!r.ok) {
      EXPECT_FALSE(r.error.empty());
      continue;
    }
    // Checksums catch every flip after the header: the damaged chunk is dropped and reported.
    EXPECT_LE(r.spans, 30u);
    EXPECT_GE(r.report.corrupt_chunks, 1u) << "flip at " << i;
    EXPECT_FALSE(r.report.warnings.empty()) << "flip at " << i;
  }
}

TEST(CorruptInput, GarbageAfterTheLastChunkIsReported) {
  testing::TempDir dir;
  std::string bytes = make_file(dir.file("g.strata"), 2, 10);
  bytes += std::string(100, '\x77');
  testing::write_file(dir.file("g.strata"), bytes);
  auto r = load(dir.file("g.strata"));
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.spans, 20u);
  EXPECT_FALSE(r.report.warnings.empty());
}

TEST(CorruptInput, DamagedMiddleChunkIsSkippedAndLaterChunksLoad) {
  testing::TempDir dir;
  const std::string full = make_file(dir.file("m.strata"), 3, 10);
  // Corrupt the header of the second spans chunk so the reader must resynchronize.
  std::vector<uint64_t> span_chunk_offsets;
  {
    format::ChunkReader reader;
    ASSERT_TRUE(reader.open(dir.file("m.strata")));
    format::Chunk c;
    while (reader.next(&c) == format::ChunkReader::Status::kChunk)
      if (c.type == static_cast<uint16_t>(format::ChunkType::kSpans)) span_chunk_offsets.push_back(c.offset);
  }
  ASSERT_EQ(span_chunk_offsets.size(), 3u);
  std::string bytes = full;
  bytes[span_chunk_offsets[1] + 9] ^= 0x01;  // inside the chunk header: header checksum fails
  testing::write_file(dir.file("m.strata"), bytes);
  auto r = load(dir.file("m.strata"));
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.spans, 20u);
  EXPECT_GE(r.report.corrupt_chunks, 1u);
  EXPECT_GT(r.report.skipped_bytes, 0u);
}

TEST(CorruptInput, ImplausibleCountsAreRejectedWithoutAllocating) {
  testing::TempDir dir;
  const std::string path = dir.file("c.strata");
  format::ChunkWriter file;
  ASSERT_TRUE(file.open(path));
  // A strings chunk claiming 2^32-1 entries, a spans chunk whose counts disagree with its size, a
  // spans chunk whose per-span attribute counts exceed its attribute area, and an unknown chunk type.
  std::string strings(4, '\xff');
  ASSERT_TRUE(file.write_chunk(format::ChunkType::kStrings, 1, strings));
  format::SpansChunkHeader sh{1000000, 0};
  std::string spans(reinterpret_cast<const char*>(&sh), sizeof(sh));
  spans += std::string(64, '\0');
  ASSERT_TRUE(file.write_chunk(format::ChunkType::kSpans, 1, spans));
  SpanRecord rec;
  rec.attr_count = 5;
  std::string bad_attrs;
  format::encode_spans(std::span<const SpanRecord>(&rec, 1), {}, &bad_attrs);
  ASSERT_TRUE(file.write_chunk(format::ChunkType::kSpans, 1, bad_attrs));
  ASSERT_TRUE(file.write_chunk(static_cast<format::ChunkType>(999), 1, "future"));
  file.close();
  auto r = load(path);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.spans, 0u);
  EXPECT_EQ(r.report.unknown_chunks, 1u);
  ASSERT_GE(r.report.warnings.size(), 3u);
  EXPECT_NE(r.report.warnings[0].find("more than fit"), std::string::npos);
  EXPECT_NE(r.report.warnings[1].find("does not match"), std::string::npos);
  EXPECT_NE(r.report.warnings[2].find("attribute counts"), std::string::npos);
}

TEST(CorruptInput, UndefinedStringIdsAreCountedNotFatal) {
  testing::TempDir dir;
  const std::string path = dir.file("s.strata");
  format::ChunkWriter file;
  ASSERT_TRUE(file.open(path));
  SpanRecord rec;
  rec.name = 12345;  // never defined
  std::string payload;
  format::encode_spans(std::span<const SpanRecord>(&rec, 1), {}, &payload);
  ASSERT_TRUE(file.write_chunk(format::ChunkType::kSpans, 1, payload));
  file.close();
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(path, &t, &error));
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.stats.get(stats::Stat::kLoadUnknownStrings), 1u);
  EXPECT_EQ(t.name(t.spans[0]), "<unknown string 12345>");
}

}  // namespace
}  // namespace strata
