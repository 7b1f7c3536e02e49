// A setuid-root program linked with libstrata, run by another user (nobody, via setpriv): the
// environment must not choose where root creates files. Needs root (to make the program setuid)
// and setpriv; skipped with the reason otherwise.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "../test_util.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

const std::string kProgram = std::string(STRATA_BINARY_DIR) + "/bin/strata_setuid_program";
const char* kSetpriv = "/usr/bin/setpriv";

class Privileged : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to install a setuid-root test program";
    if (access(kSetpriv, X_OK) != 0) GTEST_SKIP() << "setpriv (util-linux) not installed";
    if (!testing::reachable_by_others(std::string(STRATA_BINARY_DIR) + "/lib"))
      GTEST_SKIP() << STRATA_BINARY_DIR
                   << " is not reachable by other users (a directory above it is not o+x)";
    struct statvfs vfs {};
    if (statvfs(dir_.path().c_str(), &vfs) == 0 && (vfs.f_flag & ST_NOSUID))
      GTEST_SKIP() << dir_.path() << " is mounted nosuid";
    ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
    // Only root may write here: what the test checks is that nothing gets created in it.
    private_dir_ = dir_.file("private");
    ASSERT_EQ(mkdir(private_dir_.c_str(), 0700), 0);
    program_ = dir_.file("program");
    fs::copy_file(kProgram, program_);
    ASSERT_EQ(chown(program_.c_str(), 0, 0), 0);
  }

  // Runs the program as nobody with `env` (VAR=value ...) and `args`; returns its output.
  std::string run_as_nobody(const std::string& env, const std::string& args, int* status) {
    std::string output;
    *status = testing::run_command(std::string(kSetpriv) + " --reuid=nobody --regid=nogroup --clear-groups env " +
                                       env + " " + program_ + " " + args,
                                   &output);
    return output;
  }

  testing::TempDir dir_;
  std::string private_dir_, program_;
};

TEST_F(Privileged, SetuidProgramIgnoresTheOutputEnvironment) {
  ASSERT_EQ(chmod(program_.c_str(), 04755), 0);
  int status = -1;
  std::string target = private_dir_ + "/planted.strata";
  std::string out = run_as_nobody("STRATA_OUTPUT=" + target + " STRATA_LEVEL=model", "env", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("idle"), std::string::npos) << out;
  EXPECT_FALSE(fs::exists(target)) << "root created a file where the caller's environment said";
  EXPECT_NE(out.find("setuid"), std::string::npos) << "says why it does not record: " << out;

  out = run_as_nobody("STRATA_OUTPUT_DIR=" + private_dir_, "env", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_TRUE(fs::is_empty(private_dir_)) << "root created a file in the caller's STRATA_OUTPUT_DIR";
}

TEST_F(Privileged, TheProgramMayStillChooseToRecordItself) {
  ASSERT_EQ(chmod(program_.c_str(), 04755), 0);
  int status = -1;
  std::string chosen = private_dir_ + "/chosen.strata";
  std::string out = run_as_nobody("STRATA_OUTPUT=/dev/null", "self " + chosen, &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("recording"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(chosen)) << "strata_start() from the program itself is the owner's opt-in";
}

TEST_F(Privileged, WithoutSetuidTheSameProgramRecords) {
  // The control: the same binary and user without the setuid bit records as asked, so the test
  // above fails if recording is merely broken.
  ASSERT_EQ(chmod(program_.c_str(), 0755), 0);
  std::string open_dir = dir_.file("open");
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  int status = -1;
  std::string out = run_as_nobody("STRATA_OUTPUT=" + open_dir + "/mine.strata", "env", &status);
  EXPECT_EQ(status, 0) << out;
  EXPECT_NE(out.find("recording"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(open_dir + "/mine.strata")) << out;
}

}  // namespace
}  // namespace strata
