// OutputFile, OutputDir and PrivateDir: nothing written through a planted link, nothing replaced
// without --force, no output or work directory another user could have prepared.
#include "cli/safe_files.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "../test_util.h"

namespace strata::cli {
namespace {

using strata::testing::read_file;
using strata::testing::TempDir;
using strata::testing::write_file;

TEST(OutputFile, NeverWritesThroughASymbolicLink) {
  TempDir dir;
  const std::string victim = dir.file("private.txt"), link = dir.file("out.strata");
  write_file(victim, "precious");
  ASSERT_EQ(symlink(victim.c_str(), link.c_str()), 0);
  for (bool force : {false, true}) {
    OutputFile out;
    std::string error;
    EXPECT_FALSE(out.begin(link, force, &error));
    EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  }
  EXPECT_EQ(read_file(victim), "precious");
}

TEST(OutputFile, ReplacesAnExistingFileOnlyWithForce) {
  TempDir dir;
  const std::string target = dir.file("run.strata");
  write_file(target, "old");
  OutputFile out;
  std::string error;
  EXPECT_FALSE(out.begin(target, false, &error));
  EXPECT_NE(error.find("--force"), std::string::npos) << error;
  ASSERT_TRUE(out.begin(target, true, &error)) << error;
  write_file(out.temp_path(), "new");
  ASSERT_TRUE(out.commit(&error)) << error;
  EXPECT_EQ(read_file(target), "new");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1)
      << "no temporary file left";
}

TEST(OutputFile, ALinkPlantedWhileWritingIsNotReplacedNorFollowed) {
  TempDir dir;
  const std::string victim = dir.file("private.txt"), target = dir.file("run.strata");
  write_file(victim, "precious");
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.begin(target, false, &error)) << error;
  write_file(out.temp_path(), "trace");
  const std::string temp = out.temp_path();
  ASSERT_EQ(symlink(victim.c_str(), target.c_str()), 0);  // the race: planted after the check
  EXPECT_FALSE(out.commit(&error));
  EXPECT_NE(error.find("appeared"), std::string::npos) << error;
  EXPECT_NE(error.find(temp), std::string::npos) << "the finished file is kept and named: " << error;
  EXPECT_EQ(read_file(victim), "precious");
  EXPECT_EQ(read_file(temp), "trace");
}

TEST(OutputFile, UncommittedTemporaryFileIsRemovedAndModeFollowsUmask) {
  TempDir dir;
  const std::string target = dir.file("t.json");
  std::string temp;
  {
    OutputFile out;
    std::string error;
    ASSERT_TRUE(out.begin(target, false, &error));
    temp = out.temp_path();
    struct stat st {};
    ASSERT_EQ(stat(temp.c_str(), &st), 0);
    mode_t mask = umask(0);
    umask(mask);
    EXPECT_EQ(st.st_mode & 0777, 0666 & ~mask);
  }
  EXPECT_FALSE(std::filesystem::exists(temp));
  EXPECT_FALSE(std::filesystem::exists(target));
}

TEST(OutputFile, RefusesAnotherUsersFileAndAnOpenDirectory) {
  TempDir dir;
  const std::string open_dir = dir.file("open");
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);  // world-writable, no sticky bit
  std::string error;
  EXPECT_FALSE(check_output_target(open_dir + "/x.strata", false, &error));
  EXPECT_NE(error.find("sticky"), std::string::npos) << error;
  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // like /tmp: fine
  EXPECT_TRUE(check_output_target(open_dir + "/x.strata", false, &error)) << error;
  if (geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  const std::string theirs = dir.file("theirs.strata");
  write_file(theirs, "x");
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(check_output_target(theirs, true, &error));
  EXPECT_NE(error.find("another user"), std::string::npos) << error;
}

TEST(PrivateDir, IsFreshPrivateAndRemovedWithoutFollowingLinks) {
  TempDir dir;
  const std::string outside = dir.file("outside");
  ASSERT_EQ(mkdir(outside.c_str(), 0755), 0);
  write_file(outside + "/keep.txt", "keep");
  PrivateDir work;
  std::string error;
  ASSERT_TRUE(work.create(dir.file("run.strata.parts."), &error)) << error;
  struct stat st {};
  ASSERT_EQ(lstat(work.path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_EQ(st.st_uid, geteuid());
  int sub = work.make_subdir("layer-0", &error);
  ASSERT_GE(sub, 0) << error;
  close(sub);
  write_file(work.path() + "/layer-0/1.strata", "x");
  ASSERT_EQ(symlink(outside.c_str(), (work.path() + "/link").c_str()), 0);
  PrivateDir second;
  ASSERT_TRUE(second.create(dir.file("run.strata.parts."), &error));
  EXPECT_NE(second.path(), work.path());
  const std::string path = work.path();
  ASSERT_TRUE(work.remove(&error)) << error;
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_EQ(read_file(outside + "/keep.txt"), "keep");
  EXPECT_EQ(leftover_work_dirs(dir.file("run.strata")), std::vector<std::string>{second.path()});
}

TEST(PrivateDir, DetectsADirectoryOpenedToOthers) {
  TempDir dir;
  PrivateDir work;
  std::string error;
  ASSERT_TRUE(work.create(dir.file("w."), &error)) << error;
  EXPECT_TRUE(work.verify(&error)) << error;
  ASSERT_EQ(chmod(work.path().c_str(), 0777), 0);
  EXPECT_FALSE(work.verify(&error));
  EXPECT_NE(error.find("not a private directory"), std::string::npos) << error;
}

TEST(OutputDir, RefusesALinkAnotherUsersDirectoryAndOneOpenToEveryone) {
  TempDir dir;
  const std::string mine = dir.file("mine"), link = dir.file("link"), open_dir = dir.file("open");
  ASSERT_EQ(mkdir(mine.c_str(), 0755), 0);
  ASSERT_EQ(symlink(mine.c_str(), link.c_str()), 0);
  std::string error;
  OutputDir out;
  EXPECT_FALSE(out.open(link, &error));
  EXPECT_NE(error.find("symbolic link"), std::string::npos) << error;
  ASSERT_EQ(mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);  // world-writable, no sticky bit
  EXPECT_FALSE(out.open(open_dir, &error));
  EXPECT_NE(error.find("writable by every user"), std::string::npos) << error;
  ASSERT_EQ(chmod(open_dir.c_str(), 01777), 0);  // sticky: other users cannot touch what is ours
  EXPECT_TRUE(out.open(open_dir, &error)) << error;
  // Inside a world-writable directory without the sticky bit nothing is created.
  ASSERT_EQ(chmod(open_dir.c_str(), 0777), 0);
  EXPECT_FALSE(out.open(open_dir + "/sub", &error));
  EXPECT_FALSE(std::filesystem::exists(open_dir + "/sub"));
  // Created when missing, with its parents' rules; a file in the way is named.
  EXPECT_TRUE(out.open(dir.file("new") + "/", &error)) << error;
  EXPECT_EQ(out.path(), dir.file("new"));
  write_file(dir.file("plain"), "x");
  EXPECT_FALSE(out.open(dir.file("plain"), &error));
  EXPECT_NE(error.find("not a directory"), std::string::npos) << error;
  if (geteuid() != 0) GTEST_SKIP() << "giving a directory to another user needs root";
  const std::string theirs = dir.file("theirs");
  ASSERT_EQ(mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(chown(theirs.c_str(), 65534, 65534), 0);
  EXPECT_FALSE(out.open(theirs, &error));
  EXPECT_NE(error.find("belongs to another user"), std::string::npos) << error;
}

TEST(OutputDir, FilesGoThroughTheDescriptorAfterTheNameIsSwappedForALink) {
  TempDir dir;
  const std::string out_path = dir.file("tables"), elsewhere = dir.file("elsewhere");
  ASSERT_EQ(mkdir(elsewhere.c_str(), 0755), 0);
  OutputDir out;
  std::string error;
  ASSERT_TRUE(out.open(out_path, &error)) << error;
  // Renamed away and replaced by a link while the command runs.
  ASSERT_EQ(rename(out_path.c_str(), dir.file("moved").c_str()), 0);
  ASSERT_EQ(symlink(elsewhere.c_str(), out_path.c_str()), 0);
  EXPECT_TRUE(out.verify(&error)) << error;
  OutputFile file;
  ASSERT_TRUE(file.begin_in(out, "t.csv", false, &error)) << error;
  write_file(file.temp_path(), "a,b\n");
  ASSERT_TRUE(file.commit(&error)) << error;
  EXPECT_EQ(read_file(dir.file("moved") + "/t.csv"), "a,b\n");
  EXPECT_TRUE(std::filesystem::is_empty(elsewhere));
  // Messages name the directory as the user gave it, not the descriptor's /proc path.
  OutputFile again;
  EXPECT_FALSE(again.begin_in(out, "t.csv", false, &error));
  EXPECT_EQ(error.rfind(out_path + "/t.csv: exists", 0), 0u) << error;
  EXPECT_FALSE(again.begin_in(out, "../escape", true, &error));
  EXPECT_NE(error.find("not a file name"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::cli
