// Every way out of a recorded process keeps what it recorded: SIGTERM and SIGINT (default
// dispositions) flush before the process dies by the same signal, _exit flushes, and a program's own
// SIGTERM handler stays in charge. The writer's timed flush is pushed out of reach
// (STRATA_FLUSH_MS=600000), so only the exit path itself can have written the spans.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "../test_util.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

const std::string kProgram = std::string(STRATA_BINARY_DIR) + "/bin/strata_test_program";

struct Child {
  pid_t pid = -1;
  int out = -1;
};

// Starts the test program with STRATA_OUTPUT=path and no timed flush.
Child start(const std::string& path, const std::string& mode, int spans) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  Child c;
  c.pid = fork();
  if (c.pid == 0) {
    dup2(fds[1], STDOUT_FILENO);
    close(fds[0]);
    setenv("STRATA_OUTPUT", path.c_str(), 1);
    unsetenv("STRATA_OUTPUT_DIR");
    setenv("STRATA_FLUSH_MS", "600000", 1);
    std::string n = std::to_string(spans);
    execl(kProgram.c_str(), kProgram.c_str(), mode.c_str(), n.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(fds[1]);
  c.out = fds[0];
  return c;
}

bool wait_ready(const Child& c) {
  std::string got;
  char ch;
  while (got.find("ready\n") == std::string::npos && read(c.out, &ch, 1) == 1) got += ch;
  return got.find("ready\n") != std::string::npos;
}

int finish(Child& c) {
  int status = 0;
  waitpid(c.pid, &status, 0);
  close(c.out);
  return status;
}

size_t spans_named(const std::string& path, const std::string& name) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(path, &t, &error)) << error;
  size_t n = 0;
  for (const auto& s : t.spans) n += t.name(s) == name;
  return n;
}

void expect_flushed_on_signal(int sig) {
  testing::TempDir dir;
  const std::string path = dir.file("sig.strata");
  Child c = start(path, "wait", 5000);
  ASSERT_TRUE(wait_ready(c));
  kill(c.pid, sig);
  int status = finish(c);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the process still dies by the signal";
  EXPECT_EQ(WTERMSIG(status), sig);
  EXPECT_EQ(spans_named(path, "before_signal"), 5000u) << "spans recorded before the signal reach the file";
}

TEST(ExitPaths, SigtermFlushesThenDiesBySigterm) { expect_flushed_on_signal(SIGTERM); }

TEST(ExitPaths, SigintFlushesThenDiesBySigint) { expect_flushed_on_signal(SIGINT); }

TEST(ExitPaths, UnderscoreExitFlushes) {
  testing::TempDir dir;
  const std::string path = dir.file("exit.strata");
  Child c = start(path, "_exit", 3000);
  int status = finish(c);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(spans_named(path, "before_signal"), 3000u);
}

TEST(ExitPaths, TheProgramsOwnSigtermHandlerStaysInCharge) {
  testing::TempDir dir;
  const std::string path = dir.file("handled.strata");
  Child c = start(path, "handled", 100);
  ASSERT_TRUE(wait_ready(c));
  kill(c.pid, SIGTERM);
  int status = finish(c);
  ASSERT_TRUE(WIFEXITED(status)) << "the program's handler ran and main returned";
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(spans_named(path, "before_signal"), 100u);
}

}  // namespace
}  // namespace strata
