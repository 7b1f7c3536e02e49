// The perf maps `strata record --sample` asked oneDNN for: what a recorded process could not remove
// itself (killed, its sampler never started) the recorder removes, and nothing else.
#include "cli/jit_map_cleanup.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "cli_test_util.h"

namespace strata::cli {
namespace {

namespace fs = std::filesystem;
using strata::testing::TempDir;
using strata::testing::write_file;

int64_t now_realtime_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

TEST(JitMapCleanup, RemovesTheMapsOfThisRunsProcessesOnly) {
  TempDir maps;
  auto map = [&](int pid) { return maps.file("perf-" + std::to_string(pid) + ".map"); };
  const int64_t since = now_realtime_ns() - 1'000'000'000;
  for (int pid : {101, 102, 103, 104, 105}) write_file(map(pid), "7f0000000000 40 jit:conv\n");
  // 103: written before the run (a process that had this pid earlier): kept.
  timespec old[2] = {{1000, 0}, {1000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, map(103).c_str(), old, 0), 0);
  // 106: a link, not a file: kept, and what it points to untouched.
  write_file(maps.file("target"), "keep");
  ASSERT_EQ(symlink(maps.file("target").c_str(), map(106).c_str()), 0);
  const std::vector<std::string> parts = {"101.strata", "102.2.strata",       "103.strata",
                                          "106.strata", "x105.strata",        "104",
                                          "0.strata",   "99999999999.strata", ".strata"};
  EXPECT_EQ(remove_leftover_jit_maps(parts, since, maps.path()), 2);
  EXPECT_FALSE(fs::exists(map(101)));
  EXPECT_FALSE(fs::exists(map(102)));
  EXPECT_TRUE(fs::exists(map(103)));
  EXPECT_TRUE(fs::exists(map(104)));  // "104" names no part file
  EXPECT_TRUE(fs::exists(map(105)));  // no process 105 in this run
  EXPECT_TRUE(fs::is_symlink(map(106)));
  EXPECT_EQ(testing::read_file(maps.file("target")), "keep");
  EXPECT_EQ(remove_leftover_jit_maps(parts, since, maps.path()), 0);  // nothing left to remove
}

// A process killed by SIGKILL never runs its sampler's stop, which removes its map: the recorder
// removes it once the command has ended. A user who asked for the maps (DNNL_JIT_PROFILE) keeps them.
TEST(JitMapCleanup, ARecordedProcessKilledBySigkillLeavesNoMap) {
  TempDir dir;
  const std::string out = dir.file("killed.strata"), pid_file = dir.file("pid");
  // The shell stands in for oneDNN: it writes its own map, lives past its first flush (its part file
  // exists), then dies by SIGKILL.
  const std::string script =
      "echo '7f0000000000 40 jit:conv' > /tmp/perf-$$.map; echo $$ > " + pid_file + "; sleep 0.5; kill -9 $$";
  for (bool user_asked : {false, true}) {
    std::vector<std::string> argv;
    if (user_asked) argv = {"/usr/bin/env", "DNNL_JIT_PROFILE=2"};
    for (const std::string& a : {testing::kStrataTool, std::string("record"), std::string("--quiet"),
                                 std::string("--sample=99"), std::string("--force"), std::string("-o"), out,
                                 std::string("--"), std::string("/bin/sh"), std::string("-c"), script})
      argv.push_back(a);
    testing::ToolRun r = testing::run_tool(argv);
    EXPECT_EQ(r.exit_code, 128 + SIGKILL) << r.err;
    const std::string pid = testing::read_file(pid_file);
    ASSERT_FALSE(pid.empty());
    const std::string map = "/tmp/perf-" + pid.substr(0, pid.find('\n')) + ".map";
    EXPECT_EQ(fs::exists(map), user_asked) << map;
    fs::remove(map);
  }
}

}  // namespace
}  // namespace strata::cli
