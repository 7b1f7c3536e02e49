// format::MappedFile: the text of a mapped file is the file's bytes, the padding after it reads as
// zeros at every size around a page boundary, and a file truncated while mapped reads as zeros past
// its new end (no SIGBUS) and is reported as changed.
#include "format/mapped_file.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <string>

#include "../test_util.h"

namespace strata {
namespace {

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

std::string pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 13) % 26);
  return s;
}

TEST(MappedFile, TextIsTheFileAndThePaddingReadsAsZerosAtEverySizeNearAPage) {
  testing::TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  constexpr size_t kPadding = 64;
  for (size_t size : {size_t{1}, size_t{63}, page - kPadding - 1, page - kPadding, page - kPadding + 1,
                      page - 1, page, page + 1, 2 * page - 1, 3 * page + 17}) {
    SCOPED_TRACE(size);
    const std::string path = dir.path() + "/f.json";
    const std::string bytes = pattern(size);
    write_file(path, bytes);
    format::MappedFile file;
    std::string error;
    ASSERT_TRUE(file.map(path, 1 << 20, "hint", kPadding, &error)) << error;
    ASSERT_TRUE(file.mapped());
    EXPECT_EQ(file.text(), bytes);
    const char* after = file.text().data() + size;
    for (size_t i = 0; i < kPadding; ++i) ASSERT_EQ(after[i], '\0') << "padding byte " << i;
    EXPECT_FALSE(file.changed());
  }
}

TEST(MappedFile, RefusesWhatReadRegularFileRefusesWithOneLine) {
  testing::TempDir dir;
  const std::string path = dir.path() + "/big.json";
  write_file(path, pattern(5000));
  format::MappedFile file;
  std::string error;
  EXPECT_FALSE(file.map(path, 4999, "split it", 64, &error));
  EXPECT_EQ(error, path + ": 5000 bytes, over the limit of 4999 bytes; split it");
  EXPECT_FALSE(file.map(dir.path(), 1 << 20, "split it", 64, &error));
  EXPECT_NE(error.find("is a directory"), std::string::npos) << error;
  const std::string fifo = dir.path() + "/pipe";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_FALSE(file.map(fifo, 1 << 20, "split it", 64, &error));  // returns: O_NONBLOCK
  EXPECT_NE(error.find("named pipe"), std::string::npos) << error;
  EXPECT_FALSE(file.map(dir.path() + "/absent", 1 << 20, "split it", 64, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
  // An empty file is not mapped (nothing to map); the caller reads it the ordinary way.
  write_file(path, "");
  EXPECT_TRUE(file.map(path, 1 << 20, "split it", 64, &error));
  EXPECT_FALSE(file.mapped());
}

TEST(MappedFile, FileTruncatedWhileMappedReadsAsZerosAndIsReportedChanged) {
  testing::TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = dir.path() + "/shrinks.json";
  const std::string bytes = pattern(4 * page + 100);
  write_file(path, bytes);
  format::MappedFile file, other;
  std::string error;
  ASSERT_TRUE(file.map(path, 1 << 20, "hint", 64, &error)) << error;
  ASSERT_TRUE(other.map(path, 1 << 20, "hint", 64, &error)) << error;
  ASSERT_TRUE(file.mapped() && other.mapped());
  EXPECT_EQ(file.text()[page], bytes[page]);  // read before the truncation: from the file
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(page + 10)), 0);
  // Past the new end: without the guard, each of these reads is a SIGBUS.
  const std::string_view text = file.text();
  EXPECT_EQ(text[3 * page + 5], '\0');
  EXPECT_EQ(text[4 * page + 99], '\0');
  EXPECT_EQ(text[page + 5], bytes[page + 5]);  // the page that still holds file bytes is intact
  EXPECT_TRUE(file.changed());
  EXPECT_FALSE(other.changed());  // its own pages past the end were never read
  file.unmap();
  EXPECT_TRUE(file.changed());  // the owner asks after it has let the text go
  // Mapped again (the file is now page + 10 bytes): a fresh mapping, not changed.
  ASSERT_TRUE(file.map(path, 1 << 20, "hint", 64, &error)) << error;
  EXPECT_EQ(file.text(), bytes.substr(0, page + 10));
  EXPECT_FALSE(file.changed());
}

// Killed by SIGBUS, or ended by the handler that was there before ours (under ASan its report and
// exit 1): anything but carrying on as if nothing happened.
bool ended_by_the_fault(int status) {
  return (WIFSIGNALED(status) && WTERMSIG(status) == SIGBUS) ||
         (WIFEXITED(status) && WEXITSTATUS(status) != 0);
}

TEST(MappedFile, AFaultOutsideEveryMappingIsNotSwallowed) {
  // A SIGBUS that is not a guarded mapping's still ends the process (the handler hands it on).
  testing::TempDir dir;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const std::string path = dir.path() + "/other.bin";
  write_file(path, pattern(2 * page));
  format::MappedFile guard_installed;
  std::string error;
  ASSERT_TRUE(guard_installed.map(path, 1 << 20, "hint", 64, &error)) << error;
  EXPECT_EXIT(
      {
        const int fd = ::open(path.c_str(), O_RDONLY);
        void* raw = ::mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0);
        if (::ftruncate(::open(path.c_str(), O_RDWR), 0) != 0) std::_Exit(3);
        volatile char c = static_cast<const char*>(raw)[page];
        (void)c;
        std::_Exit(0);
      },
      ended_by_the_fault, "");
  // Nor a SIGBUS sent rather than faulted (no address: si_code <= 0).
  EXPECT_EXIT(
      {
        ::raise(SIGBUS);
        std::_Exit(0);
      },
      ended_by_the_fault, "");
}

}  // namespace
}  // namespace strata
