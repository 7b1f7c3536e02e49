// A recording that fills its disk, for real: a 2 MiB tmpfs (mount(2) needs root; skipped with the
// reason otherwise). Before, such a trace loaded 13,795 of 200,000 spans, said "lost events: 0" and
// blamed a killed writer for its cut last chunk.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "../test_util.h"
#include "collect/session.h"
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

}  // namespace
}  // namespace strata
