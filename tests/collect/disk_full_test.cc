// A recording that fills its disk, for real: a 2 MiB tmpfs (mount(2) needs root; skipped with the
// reason otherwise). Before, such a trace loaded 13,795 of 200,000 spans, said "lost events: 0" and
// blamed a killed writer for its cut last chunk.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "../test_util.h"
#include "collect/session.h"
#include "format/chunk_reader.h"
#include "format/chunk_writer.h"
#include "strata/strata.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

// A tmpfs of `size` mounted at `path` for the test's lifetime.
class SmallDisk {
 public:
  SmallDisk(std::string path, const std::string& size) : path_(std::move(path)) {
    ::mkdir(path_.c_str(), 0700);
    mounted_ = ::mount("none", path_.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
    if (!mounted_) error_ = std::strerror(errno);
  }
  ~SmallDisk() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  SmallDisk(const SmallDisk&) = delete;
  SmallDisk& operator=(const SmallDisk&) = delete;
  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
  bool mounted_ = false;
  std::string error_;
};

TEST(DiskFull, ARecordingThatFillsItsDiskCountsEveryLostSpanAndEndsCleanly) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  testing::TempDir dir;
  SmallDisk disk(dir.file("disk"), "2m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.error();
  collect::SessionConfig config;
  config.path = disk.file("full.strata");
  config.level = STRATA_LEVEL_MODEL;
  collect::Session session(config);
  ASSERT_TRUE(session.start()) << session.error();
  constexpr uint64_t kSpans = 200'000;  // 12.8 MB of span records
  for (uint64_t i = 0; i < kSpans; ++i) session.end(session.begin("step", STRATA_LEVEL_MODEL));
  session.stop();
  EXPECT_NE(session.error().find("No space left on device"), std::string::npos) << session.error();

  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(config.path, &t, &error)) << error;
  // Every chunk whole: no cut one that would read as a writer killed in the middle of it.
  EXPECT_EQ(t.stat(stats::Stat::kLoadTruncatedFiles), 0u);
  EXPECT_EQ(t.stat(stats::Stat::kLoadCorruptChunks), 0u);
  ASSERT_EQ(t.processes.size(), 1u);
  const trace::Process& p = t.processes[0];
  EXPECT_TRUE(p.ended_cleanly) << "the End chunk had the space kept for it";
  // Every span is in the file or counted under its cause, with the reason.
  const uint64_t lost = p.stats.get(stats::Stat::kCollectorWriteFailed);
  EXPECT_GT(t.spans.size(), 0u);
  EXPECT_GT(lost, 0u);
  EXPECT_EQ(t.spans.size() + lost + p.stats.get(stats::Stat::kCollectorBufferFull), kSpans);
  EXPECT_NE(p.properties.get("stats.collector.writer.error").value_or("").find("No space left on device"),
            std::string::npos);
  // The space kept past the end of the file for its last chunks is given back at the end.
  struct stat st {};
  ASSERT_EQ(::stat(config.path.c_str(), &st), 0);
  EXPECT_LE(static_cast<uint64_t>(st.st_blocks) * 512,
            (static_cast<uint64_t>(st.st_size) + 4095) / 4096 * 4096);
}

// Writes zeros to `path` until the file system is full.
void fill(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::setvbuf(f, nullptr, _IONBF, 0);
  const std::string block(4096, '\0');
  while (std::fwrite(block.data(), 1, block.size(), f) == block.size()) {
  }
  std::fclose(f);
}

// Every writer (import, merge, export of a trace): a chunk that does not fit is cut back, so the
// file still reads to its last whole chunk, and writing goes on once there is room again.
TEST(DiskFull, AFailedChunkIsCutBackAndWritingResumesWhenSpaceComesBack) {
  if (::geteuid() != 0) GTEST_SKIP() << "mounting a small tmpfs needs root";
  testing::TempDir dir;
  SmallDisk disk(dir.file("disk"), "1m");
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here: " << disk.error();
  format::ChunkWriter file;
  ASSERT_TRUE(file.open(disk.file("t.strata"))) << file.error();
  const std::string small(1000, 's'), big(size_t{600} << 10, 'b');
  ASSERT_TRUE(file.write_chunk(format::ChunkType::kStrings, 1, small));
  fill(disk.file("filler"));
  const uint64_t before = file.bytes_written();
  EXPECT_FALSE(file.write_chunk(format::ChunkType::kStrings, 1, big));
  EXPECT_NE(file.error().find("No space left on device"), std::string::npos) << file.error();
  EXPECT_EQ(file.error_number(), ENOSPC);
  struct stat st {};
  ASSERT_EQ(::stat(disk.file("t.strata").c_str(), &st), 0);
  EXPECT_EQ(static_cast<uint64_t>(st.st_size), before) << "the cut chunk was not removed";
  ::unlink(disk.file("filler").c_str());
  EXPECT_TRUE(file.write_chunk(format::ChunkType::kStrings, 1, small)) << file.error();
  file.close();
  format::ChunkReader reader;
  ASSERT_TRUE(reader.open(disk.file("t.strata")));
  format::Chunk chunk;
  size_t chunks = 0;
  while (reader.next(&chunk) == format::ChunkReader::Status::kChunk) ++chunks;
  EXPECT_EQ(chunks, 2u);
  EXPECT_FALSE(reader.truncated());
  EXPECT_EQ(reader.corrupt_chunks(), 0u);
}

}  // namespace
}  // namespace strata
