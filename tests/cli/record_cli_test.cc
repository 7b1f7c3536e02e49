// `strata record` and the CLI's manners: outputs never written through links nor replaced without
// --force, a command that cannot start is one error line (exit 127, no trace), a killed recorder
// takes its command with it and a rerun keeps what the killed run left, unknown options are
// refused by every subcommand, an empty file is called empty.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "cli_test_util.h"

namespace strata {
namespace {

namespace fs = std::filesystem;
using testing::strata;
using testing::TempDir;

std::vector<std::string> work_dirs(const std::string& output) {
  std::vector<std::string> found;
  fs::path out(output);
  for (const auto& e : fs::directory_iterator(out.parent_path()))
    if (e.path().filename().string().rfind(out.filename().string() + ".parts", 0) == 0)
      found.push_back(e.path());
  return found;
}

TEST(RecordOutput, RefusesALinkAndAnExistingFileWithoutForce) {
  TempDir dir;
  const std::string victim = dir.file("private.txt"), out = dir.file("run.strata");
  testing::write_file(victim, "precious");
  ASSERT_EQ(symlink(victim.c_str(), out.c_str()), 0);
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"record", "-o", out, "--", testing::kTestProgram, "spans", "5"},
           {"record", "--force", "-o", out, "--", testing::kTestProgram, "spans", "5"}}) {
    testing::ToolRun r = strata(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("symbolic link"), std::string::npos) << r.err;
  }
  EXPECT_EQ(testing::read_file(victim), "precious");
  ASSERT_EQ(unlink(out.c_str()), 0);

  testing::write_file(out, "an earlier result");
  testing::ToolRun refused = strata({"record", "-o", out, "--", testing::kTestProgram, "spans", "5"});
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("--force"), std::string::npos) << refused.err;
  EXPECT_EQ(testing::read_file(out), "an earlier result") << "the command must not even run";
  testing::ToolRun forced =
      strata({"record", "--force", "-q", "-o", out, "--", testing::kTestProgram, "spans", "5"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_NE(testing::read_file(out), "an earlier result");
  EXPECT_TRUE(work_dirs(out).empty()) << "the work directory is removed after a good run";
}

TEST(RecordOutput, ImportAndExportFollowTheSameRules) {
  TempDir dir;
  const std::string victim = dir.file("private.txt"), trace = dir.file("t.strata");
  testing::write_file(victim, "precious");
  ASSERT_EQ(strata({"record", "-q", "-o", trace, "--", testing::kTestProgram, "spans", "5"}).exit_code, 0);
  const std::string link = dir.file("t.json");
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  testing::ToolRun exported = strata({"export", trace, "--format", "json", "-o", link, "--force"});
  EXPECT_EQ(exported.exit_code, 1);
  EXPECT_NE(exported.err.find("symbolic link"), std::string::npos) << exported.err;
  EXPECT_EQ(testing::read_file(victim), "precious");
  const std::string json = dir.file("spans.json");
  ASSERT_EQ(strata({"export", trace, "--format", "json", "-o", json}).exit_code, 0);
  EXPECT_EQ(strata({"export", trace, "--format", "json", "-o", json}).exit_code, 1);
  EXPECT_EQ(strata({"export", trace, "--format", "csv", "-o", json, "--force"}).exit_code, 0);
  EXPECT_EQ(testing::read_file(json).rfind("span_id", 0), 0u) << "replaced by the CSV";

  // import: a Kineto trace from the repository (tests/data), into a planted link.
  const std::string kineto = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/mi250_train.json.gz";
  const std::string imported = dir.file("imported.strata");
  ASSERT_EQ(symlink(victim.c_str(), imported.c_str()), 0);
  testing::ToolRun imp = strata({"import", kineto, "-o", imported, "--force"});
  EXPECT_EQ(imp.exit_code, 1);
  EXPECT_NE(imp.err.find("symbolic link"), std::string::npos) << imp.err;
  EXPECT_EQ(testing::read_file(victim), "precious");
}

TEST(RecordCommand, ACommandThatCannotStartIsOneErrorAndNoTrace) {
  TempDir dir;
  const std::string out = dir.file("none.strata");
  testing::ToolRun r = strata({"record", "-o", out, "--", "strata-no-such-command-xyz"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.err,
            "strata record: cannot run strata-no-such-command-xyz: No such file or directory (not found "
            "on PATH)\n");
  EXPECT_FALSE(fs::exists(out));
  EXPECT_TRUE(work_dirs(out).empty());
  testing::ToolRun denied = strata({"record", "-o", out, "--", dir.path()});  // a directory: EACCES
  EXPECT_EQ(denied.exit_code, 127);
  EXPECT_EQ(denied.err.find("static"), std::string::npos) << denied.err;
  EXPECT_NE(denied.err.find("cannot run"), std::string::npos) << denied.err;
}

// SIGKILL to the recorder: its command (reparented to this test, a subreaper) must end, and the
// data it wrote stays. A rerun with the same -o keeps that data and says where it is.
TEST(RecordCommand, AKilledRecorderTakesItsCommandAlongAndARerunKeepsItsData) {
  ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  TempDir dir;
  const std::string out = dir.file("killed.strata");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  pid_t recorder = fork();
  if (recorder == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    execl(testing::kStrataTool.c_str(), "strata", "record", "-q", "-o", out.c_str(), "--",
          testing::kTestProgram.c_str(), "loop", static_cast<char*>(nullptr));
    _exit(99);
  }
  close(fds[1]);
  char buf[16] = {0};
  ASSERT_GT(read(fds[0], buf, sizeof(buf) - 1), 0);
  close(fds[0]);
  std::string children = testing::read_file("/proc/" + std::to_string(recorder) + "/task/" +
                                            std::to_string(recorder) + "/children");
  const pid_t command = static_cast<pid_t>(std::atoi(children.c_str()));
  ASSERT_GT(command, 0) << children;
  kill(recorder, SIGKILL);
  waitpid(recorder, nullptr, 0);
  int status = 0;
  bool ended = false;
  for (int i = 0; i < 500 && !ended; ++i) {  // up to 5 s
    ended = waitpid(command, &status, WNOHANG) == command;
    if (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (!ended) {
    kill(command, SIGKILL);
    waitpid(command, nullptr, 0);
  }
  prctl(PR_SET_CHILD_SUBREAPER, 0);
  ASSERT_TRUE(ended) << "the command kept running after its recorder was killed";
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);

  std::vector<std::string> left = work_dirs(out);
  ASSERT_EQ(left.size(), 1u);
  testing::ToolRun info = strata({"info", left[0]});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_NE(info.out.find("strata_test_program loop"), std::string::npos) << info.out;
  const std::string before =
      testing::read_file(left[0] + "/" + fs::directory_iterator(left[0])->path().filename().string());
  ASSERT_GT(before.size(), 1000u);

  testing::ToolRun rerun = strata({"record", "-o", out, "--", testing::kTestProgram, "spans", "5"});
  EXPECT_EQ(rerun.exit_code, 0) << rerun.err;
  EXPECT_NE(rerun.err.find(left[0] + " is left from a recording that did not finish"), std::string::npos)
      << rerun.err;
  ASSERT_TRUE(fs::exists(left[0])) << "a rerun deleted what the killed run left";
  EXPECT_EQ(testing::read_file(left[0] + "/" + fs::directory_iterator(left[0])->path().filename().string()),
            before);
}

TEST(CliManners, EverySubcommandRefusesAnUnknownOptionWithOneLineAndUsage) {
  TempDir dir;
  const std::string trace = dir.file("t.strata");
  ASSERT_EQ(strata({"record", "-q", "-o", trace, "--", testing::kTestProgram, "spans", "3"}).exit_code, 0);
  for (std::string command :
       {"record", "info", "export", "import", "analyze", "iterations", "model", "lowerbound"}) {
    testing::ToolRun r = strata({command, "--bogus", trace});
    EXPECT_EQ(r.exit_code, 2) << command << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << command << " printed to stdout: " << r.out;
    EXPECT_EQ(r.err.rfind("strata " + command + ": unknown option", 0), 0u) << command << ": " << r.err;
    EXPECT_NE(r.err.find("--bogus"), std::string::npos) << command;
  }
  for (std::string mode : {"generate", "run"}) {
    testing::ToolRun r = strata({"bench", mode, "--bogus"});
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("unknown option"), std::string::npos) << r.err;
  }
  testing::ToolRun two = strata({"info", trace, trace});
  EXPECT_EQ(two.exit_code, 2);
  EXPECT_NE(two.err.find("one trace at a time"), std::string::npos) << two.err;
}

TEST(CliManners, AnEmptyFileIsCalledEmpty) {
  TempDir dir;
  const std::string empty = dir.file("empty.strata");
  testing::write_file(empty, "");
  for (std::string command : {"info", "export", "analyze"}) {
    testing::ToolRun r = strata({command, empty});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find("empty file (0 bytes)"), std::string::npos) << command << ": " << r.err;
    EXPECT_EQ(r.err.find("bad magic"), std::string::npos) << command << ": " << r.err;
  }
}

TEST(CliManners, InfoEscapesWhatTheTracedProcessWrote) {
  TempDir dir;
  const std::string trace = dir.file("t.strata");
  // The command line is the traced program's own: a crafted argument must not reach the terminal raw.
  testing::ToolRun rec = strata(
      {"record", "-q", "-o", trace, "--", testing::kTestProgram, "exit", "0", "\x1b]0;owned\x07\x1b[2J"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  testing::ToolRun info = strata({"info", trace});
  ASSERT_EQ(info.exit_code, 0) << info.err;
  EXPECT_EQ(info.out.find('\x1b'), std::string::npos) << info.out;
  EXPECT_NE(info.out.find("\\x1b]0;owned\\x07\\x1b[2J"), std::string::npos) << info.out;
}

TEST(RecordSummary, LostSpansAreCountedOnceAndTheFixIsNamed) {
  TempDir dir;
  const std::string trace = dir.file("t.strata");
  // 1 MiB of buffer for a burst of two million spans: most are lost.
  testing::ToolRun rec =
      strata({"record", "--buffer-mb", "1", "-o", trace, "--", testing::kTestProgram, "spans", "2000000"});
  ASSERT_EQ(rec.exit_code, 0) << rec.err;
  EXPECT_NE(rec.err.find("lost events: "), std::string::npos) << rec.err;
  EXPECT_NE(rec.err.find("because its event buffer (1 MiB) was full; record again with --buffer-mb "),
            std::string::npos)
      << rec.err;
  EXPECT_NE(rec.err.find("STRATA_BUFFER_MB="), std::string::npos) << rec.err;
  // The lost count is buffer_full alone: spans + lost = every span the program made.
  testing::ToolRun info = strata({"info", trace});
  auto number_after = [&](const std::string& text, const std::string& key) {
    auto at = text.find(key);
    return at == std::string::npos ? -1LL : std::atoll(text.c_str() + at + key.size());
  };
  const long long kept = number_after(info.out, "\nspans: ");
  const long long lost = number_after(info.out, "lost events: ");
  ASSERT_GT(lost, 0) << info.out;
  EXPECT_EQ(kept + lost, 2000000) << info.out;
}

}  // namespace
}  // namespace strata
