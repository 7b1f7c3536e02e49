// `strata record` end to end: children join the trace, exit codes and crashes are passed through,
// SIGKILL leaves a loadable file, SIGTERM is forwarded. (A binary of its own because it runs the
// tool: collect_test does not need it, so the ThreadSanitizer phase of scripts/test.sh builds less.)
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>

#include "../test_util.h"
#include "collect/trace_context.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

const std::string kStrata = std::string(STRATA_BINARY_DIR) + "/bin/strata";
const std::string kProgram = std::string(STRATA_BINARY_DIR) + "/bin/strata_test_program";

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

trace::Trace load_or_die(const std::string& path) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(path, &t, &error)) << error;
  return t;
}

TEST(Record, ChildProcessJoinsTheTraceUnderTheSpawningSpan) {
  testing::TempDir dir;
  const std::string out = dir.file("ctx.strata");
  ASSERT_EQ(run(kStrata + " record --quiet -o " + out + " -- " + kProgram + " spawn"), 0);
  trace::Trace t = load_or_die(out);
  ASSERT_EQ(t.processes.size(), 2u);
  EXPECT_EQ(t.processes[0].trace_id, t.processes[1].trace_id);
  EXPECT_EQ(t.processes[0].trace_id, std::string(t.record.get("trace_id").value_or("")));
  const SpanRecord* parent = nullptr;
  const SpanRecord* child = nullptr;
  for (const auto& s : t.spans) {
    if (t.name(s) == "parent_work") parent = &s;
    if (t.name(s) == "child_work") child = &s;
  }
  ASSERT_NE(parent, nullptr);
  ASSERT_NE(child, nullptr);
  EXPECT_NE(t.process(*parent).pid, t.process(*child).pid);
  EXPECT_EQ(t.process(*child).ppid, t.process(*parent).pid);
  EXPECT_EQ(child->parent_id, parent->span_id) << "the child's root span hangs under the spawning span";
  EXPECT_EQ(t.process(*child).parent_span_id, collect::hex16(parent->span_id));
  EXPECT_LE(parent->start_ns, child->start_ns);
  EXPECT_GE(parent->end_ns, child->end_ns);
}

TEST(Record, PassesTheExitCodeThrough) {
  testing::TempDir dir;
  EXPECT_EQ(run(kStrata + " record --quiet -o " + dir.file("e.strata") + " -- " + kProgram + " exit 3"), 3);
  trace::Trace t = load_or_die(dir.file("e.strata"));
  EXPECT_EQ(t.record.get_int("exit_code").value_or(-1), 3);
}

TEST(Record, MissingCommandIsOneClearLine) {
  testing::TempDir dir;
  EXPECT_EQ(run(kStrata + " record --quiet -o " + dir.file("m.strata") + " -- /nonexistent/prog 2>/dev/null"),
            127);
  EXPECT_EQ(run(kStrata + " record --level bogus -- true 2>/dev/null"), 2);
}

TEST(Record, FinalizesTheTraceWhenTheChildCrashes) {
  testing::TempDir dir;
  const std::string out = dir.file("crash.strata");
  EXPECT_EQ(run(kStrata + " record --quiet -o " + out + " -- " + kProgram + " crash"), 128 + SIGSEGV);
  trace::Trace t = load_or_die(out);
  ASSERT_EQ(t.spans.size(), 1u);
  EXPECT_EQ(t.name(t.spans[0]), "before_crash");
  EXPECT_TRUE(t.processes[0].ended_cleanly) << "the fatal-signal handler flushed and closed the stream";
  EXPECT_NE(std::string(t.record.get("outcome").value_or("")).find("signal 11"), std::string::npos);
}

TEST(Record, ManyProcessesMergeIntoOneFile) {
  testing::TempDir dir;
  const std::string out = dir.file("many.strata");
  std::string cmd = kStrata + " record --quiet -o " + out + " -- /bin/sh -c '";
  for (int i = 0; i < 4; ++i) cmd += kProgram + " spans 25; ";
  cmd += "'";
  ASSERT_EQ(run(cmd), 0);
  trace::Trace t = load_or_die(out);
  size_t with_spans = 0;
  for (const auto& p : t.processes) with_spans += p.span_count == 25 ? 1 : 0;
  EXPECT_EQ(with_spans, 4u);  // (the shell itself is traced too, with no spans)
  EXPECT_EQ(t.spans.size(), 100u);
  EXPECT_FALSE(std::filesystem::exists(out + ".parts"));
}

// Starts `strata_test_program loop` writing straight to `path`, waits for its first flush.
pid_t start_loop(const std::string& path, const std::string& via_record = "") {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    if (via_record.empty()) {
      setenv("STRATA_OUTPUT", path.c_str(), 1);
      execl(kProgram.c_str(), kProgram.c_str(), "loop", static_cast<char*>(nullptr));
    } else {
      execl(kStrata.c_str(), kStrata.c_str(), "record", "--quiet", "-o", path.c_str(), "--", kProgram.c_str(),
            "loop", static_cast<char*>(nullptr));
    }
    _exit(99);
  }
  close(fds[1]);
  char buf[16] = {0};
  EXPECT_GT(read(fds[0], buf, sizeof(buf) - 1), 0);
  EXPECT_EQ(std::string(buf).substr(0, 5), "ready");
  close(fds[0]);
  return pid;
}

TEST(Record, SigkillMidRunLeavesEveryFlushedChunkLoadable) {
  testing::TempDir dir;
  const std::string path = dir.file("killed.strata");
  pid_t pid = start_loop(path);
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  kill(pid, SIGKILL);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  trace::Trace t = load_or_die(path);
  EXPECT_GE(t.spans.size(), 1000u);
  ASSERT_EQ(t.processes.size(), 1u);
  EXPECT_FALSE(t.processes[0].ended_cleanly);
  for (const auto& s : t.spans) EXPECT_EQ(t.name(s), "loop_step");
  // If the kill landed inside a write, the cut chunk is reported as a truncated tail.
  if (t.stats.get(stats::Stat::kLoadTruncatedFiles)) {
    EXPECT_NE(t.warnings.at(0).find("truncated tail"), std::string::npos);
  }
  // A truncated tail is always reported: cut the file inside its last chunk and load again.
  std::string bytes = testing::read_file(path);
  testing::write_file(path, bytes.substr(0, bytes.size() - 7));
  trace::Trace cut = load_or_die(path);
  EXPECT_EQ(cut.stats.get(stats::Stat::kLoadTruncatedFiles), 1u);
  EXPECT_NE(cut.warnings.at(0).find("truncated tail"), std::string::npos);
}

TEST(Record, ForwardsSigtermAndStillWritesTheTrace) {
  testing::TempDir dir;
  const std::string out = dir.file("term.strata");
  pid_t record = start_loop(out, "record");
  kill(record, SIGTERM);
  int status = 0;
  waitpid(record, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
  trace::Trace t = load_or_die(out);
  EXPECT_GE(t.spans.size(), 1000u);
  EXPECT_NE(std::string(t.record.get("outcome").value_or("")).find("signal 15"), std::string::npos);
}

}  // namespace
}  // namespace strata
