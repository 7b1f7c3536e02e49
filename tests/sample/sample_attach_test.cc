// `strata attach PID` on a running, unmodified program: epochs rotate into separate files that load
// together, the target's output and exit status are what they would be without the attach, and a
// target exiting mid-attach ends the attach cleanly with its last epoch written.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "sample_test_util.h"

namespace strata::testing {
namespace {

// Starts `burn_program loop SECONDS CODE` with stdout and stderr to files.
pid_t start_loop(const TempDir& dir, const char* seconds, const char* code) {
  const std::string program = bin("strata_burn_fp"), out = dir.file("target.out"),
                    err = dir.file("target.err");
  pid_t pid = fork();
  if (pid == 0) {
    int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644),
        e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(o, 1);
    dup2(e, 2);
    execl(program.c_str(), program.c_str(), "loop", seconds, code, static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

// The loop's output: "line 0", "line 1", ... without a gap or stray byte, then "end".
void expect_loop_output(const TempDir& dir) {
  std::istringstream in(read_file(dir.file("target.out")));
  std::string line;
  unsigned expected = 0;
  bool ended = false;
  while (std::getline(in, line)) {
    ASSERT_FALSE(ended) << "output after end: " << line;
    if (line == "end") {
      ended = true;
      continue;
    }
    ASSERT_EQ(line, "line " + std::to_string(expected)) << "the target's output changed";
    ++expected;
  }
  EXPECT_TRUE(ended);
  EXPECT_GT(expected, 0u);
  EXPECT_EQ(read_file(dir.file("target.err")), "");
}

int wait_exit_code(pid_t pid) {
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1000 - WTERMSIG(status);
}

std::vector<std::string> epoch_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(SampleAttach, EpochsRotateTargetUnchangedAndEpochsLoadTogether) {
  TempDir dir;
  const pid_t pid = start_loop(dir, "4", "7");
  ASSERT_GT(pid, 0);
  usleep(200 * 1000);  // the target has started its loop (attaching to a process still in exec is fine too)
  std::string output;
  const std::string out_dir = dir.file("epochs");
  const int rc = run_command(strata_tool() + " attach " + std::to_string(pid) +
                                 " --hz 499 --unwind dwarf --epoch 1 --duration 3 -o " + out_dir,
                             &output);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_NE(output.find("duration reached"), std::string::npos) << output;
  // The target outlives the attach and finishes normally.
  EXPECT_EQ(kill(pid, 0), 0) << "the target did not survive the attach";
  EXPECT_EQ(wait_exit_code(pid), 7);
  expect_loop_output(dir);

  const std::vector<std::string> files = epoch_files(out_dir);
  ASSERT_GE(files.size(), 2u) << output;  // 3 s in 1 s epochs: rotated (a loaded machine may merge one)
  for (const std::string& f : files) {
    EXPECT_EQ(f.rfind(std::to_string(pid) + "-epoch-", 0), 0u) << f;
    EXPECT_EQ(f.substr(f.size() - 7), ".strata") << f;  // no temporary file left behind
  }
  // The directory profiles as one: the epochs' samples add up, and the loop's functions are there.
  Shares all = function_shares(out_dir);
  uint64_t sum = 0;
  for (const std::string& f : files) sum += function_shares(out_dir + "/" + f).samples;
  EXPECT_EQ(all.samples, sum);
  ASSERT_GT(all.samples, 0u);
  // DWARF unwinding from the outside recovers the callers of the shared leaf: their split is the
  // program's 60/30/10 (shares of the three, the loop's clock reads and prints left out; in `loop`
  // mode every round runs 6:3:1 iterations, so the split holds by construction), within what the
  // samples in the three allow (share_bound_points; 1 point beyond counting noise for the calls and
  // stores around the spins, docs/testing.md).
  const double callers = all.total["call_sixty"] + all.total["call_thirty"] + all.total["call_ten"];
  ASSERT_GT(callers, 50.0) << output;
  const double in_callers = static_cast<double>(all.draws) * callers / 100;
  if (in_callers >= 600) {
    EXPECT_NEAR(100 * all.total["call_sixty"] / callers, 60, share_bound_points(60, in_callers, 1.0))
        << all.samples << " samples";
    EXPECT_NEAR(100 * all.total["call_ten"] / callers, 10, share_bound_points(10, in_callers, 1.0))
        << all.samples << " samples";
  }
  std::string profile;
  EXPECT_EQ(run_command(strata_tool() + " profile " + out_dir, &profile), 0) << profile;
  EXPECT_NE(profile.find("spin"), std::string::npos) << profile;
}

// The value `strata info` prints for a stats key (its line "... <key> <value> ..."), -1 when absent.
long long info_value(const std::string& info, const std::string& key) {
  std::istringstream in(info);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string word;
    while (words >> word)
      if (word == key && (words >> word)) return std::atoll(word.c_str());
  }
  return -1;
}

// An attach epoch of a Python target carries the Python read counters that apply from the outside
// (the in-process recorder's keys; the SIGTRAP handler's are in-process only) and the samples taken,
// per epoch: the epochs' reads add up to what the attach made, each one no more than its own.
TEST(SampleAttach, PythonTargetEpochsCarryTheReadCounters) {
  if (access("/usr/bin/python3", X_OK) != 0) GTEST_SKIP() << "no /usr/bin/python3";
  TempDir dir;
  write_file(dir.file("spin.py"),
             "import time\n"
             "def leaf(n):\n    return sum(range(n))\n"
             "def outer():\n    t = time.time()\n    while time.time() - t < 4:\n        leaf(2000)\n"
             "outer()\n");
  pid_t pid = fork();
  if (pid == 0) {
    execl("/usr/bin/python3", "python3", dir.file("spin.py").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(pid, 0);
  usleep(500 * 1000);  // the interpreter is running its loop
  std::string output;
  const std::string out_dir = dir.file("epochs");
  const int rc = run_command(
      strata_tool() + " attach " + std::to_string(pid) + " --hz 199 --epoch 1 --duration 2.5 -o " + out_dir,
      &output);
  EXPECT_EQ(rc, 0) << output;
  EXPECT_EQ(wait_exit_code(pid), 0);
  const std::vector<std::string> files = epoch_files(out_dir);
  ASSERT_GE(files.size(), 2u) << output;
  // `strata info` prints the non-zero counters: each epoch read stacks; the code objects are named
  // once (in the first epochs), the frames come from the copied chunks (no generators here).
  long long reads = 0, taken = 0, codes = 0, from_chunks = 0;
  for (const std::string& f : files) {
    std::string info;
    ASSERT_EQ(run_command(strata_tool() + " info " + out_dir + "/" + f, &info), 0) << info;
    EXPECT_GT(info_value(info, "sample.samples_taken"), 0) << f << ":\n" << info;
    EXPECT_GT(info_value(info, "sample.python_reads"), 0) << f << ":\n" << info;
    EXPECT_EQ(info_value(info, "sample.python_records"), -1) << "an in-thread counter in an attach epoch";
    reads += std::max(0LL, info_value(info, "sample.python_reads"));
    taken += std::max(0LL, info_value(info, "sample.samples_taken"));
    codes += std::max(0LL, info_value(info, "sample.python_code_objects"));
    from_chunks += std::max(0LL, info_value(info, "sample.python_frames_from_chunks"));
  }
  // ~2.5 s at 199 Hz of a busy thread: hundreds of samples, each Python stack read from the outside
  // (one or more process_vm_readv calls each), every frame of them from a chunk.
  EXPECT_GT(taken, 100) << output;
  EXPECT_GE(reads, taken) << "taken " << taken;
  EXPECT_GE(from_chunks, taken) << "taken " << taken;
  EXPECT_GE(codes, 2) << "leaf and outer at least";
}

TEST(SampleAttach, TargetExitingMidAttachEndsItCleanly) {
  TempDir dir;
  const pid_t pid = start_loop(dir, "1.5", "3");
  ASSERT_GT(pid, 0);
  usleep(200 * 1000);
  // The attach runs in the background so the test can reap the target (a zombie child counts as
  // exited for the attach: it is not alive any more).
  const std::string out_dir = dir.file("epochs"), log = dir.file("attach.log");
  std::string output;
  ASSERT_EQ(run_command(strata_tool() + " attach " + std::to_string(pid) + " --epoch 1 --duration 60 -o " +
                            out_dir + " > " + log + " 2>&1 & echo $!",
                        &output),
            0);
  EXPECT_EQ(wait_exit_code(pid), 3);
  expect_loop_output(dir);
  const pid_t attach_pid = std::atoi(output.c_str());
  // The attach notices the exit within its poll interval; wait for it without a timing assertion
  // (the test's own timeout bounds a hang).
  while (kill(attach_pid, 0) == 0) usleep(50 * 1000);
  const std::string attach_log = read_file(log);
  EXPECT_NE(attach_log.find("target exited"), std::string::npos) << attach_log;
  EXPECT_GE(epoch_files(out_dir).size(), 1u) << attach_log;
  Shares all = function_shares(out_dir);
  EXPECT_GT(all.samples, 0u) << attach_log;
}

TEST(SampleAttach, DiskBudgetRemovesOldestEpochsAndCountsThem) {
  TempDir dir;
  const pid_t pid = start_loop(dir, "2.5", "0");
  ASSERT_GT(pid, 0);
  usleep(200 * 1000);
  std::string output;
  const std::string out_dir = dir.file("epochs");
  // A budget smaller than two epoch files: only the newest stays.
  EXPECT_EQ(run_command(strata_tool() + " attach " + std::to_string(pid) +
                            " --epoch 0.5 --duration 1.6 --max-disk 0.001 -o " + out_dir,
                        &output),
            0)
      << output;
  EXPECT_EQ(wait_exit_code(pid), 0);
  const std::vector<std::string> files = epoch_files(out_dir);
  EXPECT_EQ(files.size(), 1u) << output;
  EXPECT_EQ(output.find(", 0 removed by the disk budget"), std::string::npos) << output;
  EXPECT_NE(output.find("removed by the disk budget"), std::string::npos) << output;
}

TEST(SampleAttach, BadTargetIsOneClearError) {
  TempDir dir;
  std::string output;
  EXPECT_NE(run_command(strata_tool() + " attach 4194303 --duration 1 -o " + dir.file("x"), &output), 0);
  EXPECT_NE(output.find("4194303"), std::string::npos) << output;
}

}  // namespace
}  // namespace strata::testing
