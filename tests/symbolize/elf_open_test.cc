// The files a trace names go through the one input check (core/input_file.h, issue 32 item 6): a
// module path that names a named pipe (FIFO), a device or a directory is refused without blocking
// and counted; the symbolizer then names the module's frames module+offset and says why. The open
// runs first in a child process, so an open that blocks (the bug: no O_NONBLOCK) fails the test
// instead of hanging it.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "../test_util.h"
#include "core/input_file.h"
#include "symbolize/elf_image.h"
#include "symbolize/symbolizer.h"

namespace strata::symbolize {
namespace {

// Whether `fn` returns true in a child process: false when it returns false, or is still blocked
// after `guard_s` seconds (a hang guard, not a timing check: a refusal takes microseconds).
bool true_in_a_child(const std::function<bool()>& fn, int guard_s = 60) {
  const pid_t child = fork();
  if (child == 0) _exit(fn() ? 0 : 1);
  for (int waited_ms = 0; waited_ms < guard_s * 1000; waited_ms += 10) {
    int status = 0;
    if (waitpid(child, &status, WNOHANG) == child) return WIFEXITED(status) && WEXITSTATUS(status) == 0;
    usleep(10 * 1000);
  }
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  return false;
}

TEST(ElfImageOpen, AFifoIsRefusedWithoutWaitingForAWriterAndCounted) {
  testing::TempDir dir;
  const std::string fifo = dir.file("libgone.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_TRUE(true_in_a_child([&] {
    std::string error;
    return ElfImage::open(fifo, &error) == nullptr;
  })) << "ElfImage::open blocked on a FIFO with no writer";
  const uint64_t before = core::named_file_refusals().count;
  std::string error;
  EXPECT_EQ(ElfImage::open(fifo, &error), nullptr);
  EXPECT_NE(error.find(fifo + ": not a regular file (a named pipe (FIFO))"), std::string::npos) << error;
  EXPECT_EQ(core::named_file_refusals().count, before + 1);
  EXPECT_NE(core::named_file_refusals().first, "");
}

TEST(ElfImageOpen, DevicesAndDirectoriesAreRefusedAndCountedMissingFilesAreNot) {
  testing::TempDir dir;
  for (const std::string& path : {std::string("/dev/zero"), std::string("/dev/null"), dir.path()}) {
    const uint64_t before = core::named_file_refusals().count;
    std::string error;
    EXPECT_EQ(ElfImage::open(path, &error), nullptr) << path;
    EXPECT_NE(error.find("not a regular file"), std::string::npos) << error;
    EXPECT_EQ(core::named_file_refusals().count, before + 1) << path;
  }
  // A module that is gone is the common case when a trace is read elsewhere: not a refusal.
  const uint64_t before = core::named_file_refusals().count;
  std::string error;
  EXPECT_EQ(ElfImage::open(dir.file("absent.so"), &error), nullptr);
  EXPECT_EQ(core::named_file_refusals().count, before);
}

TEST(ElfImageOpen, TheSymbolizerNamesAFifoModulesFramesModulePlusOffsetAndSaysWhy) {
  testing::TempDir dir;
  const std::string fifo = dir.file("libfifo.so");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // Its debug file by build id is a FIFO too: the build-id lookup goes through the same check.
  const std::string debug_dir = dir.file("debug");
  ASSERT_EQ(mkdir(debug_dir.c_str(), 0700), 0);
  ASSERT_EQ(mkdir((debug_dir + "/.build-id").c_str(), 0700), 0);
  ASSERT_EQ(mkdir((debug_dir + "/.build-id/ab").c_str(), 0700), 0);
  ASSERT_EQ(mkfifo((debug_dir + "/.build-id/ab/cdef.debug").c_str(), 0600), 0);
  ASSERT_TRUE(true_in_a_child([&] {  // the lookup itself, guarded as above
    SymbolizerOptions options;
    options.debug_dirs = {debug_dir};
    Symbolizer symbolizer(options);
    const Symbol s = symbolizer.lookup(fifo, std::string("\xab\xcd\xef", 3), 0x1234);
    return !s.known && s.function == "libfifo.so+0x1234";
  })) << "the symbolizer blocked on a FIFO";
  SymbolizerOptions options;
  options.debug_dirs = {debug_dir};
  Symbolizer symbolizer(options);
  const uint64_t before = core::named_file_refusals().count;
  symbolizer.lookup(fifo, std::string("\xab\xcd\xef", 3), 0x1234);
  EXPECT_EQ(core::named_file_refusals().count, before + 2);  // the module and its debug file
  ASSERT_EQ(symbolizer.modules().size(), 1u);
  EXPECT_NE(symbolizer.modules()[0].problem.find("a named pipe (FIFO)"), std::string::npos)
      << symbolizer.modules()[0].problem;
}

}  // namespace
}  // namespace strata::symbolize
