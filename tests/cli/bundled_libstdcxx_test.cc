// Which libstdc++ `strata record` preloads from a bundle: the node's when it is at least as new as the
// bundled copy, else none (the bundled one is found through the runtime's RUNPATH).
#include "cli/bundled_libstdcxx.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace strata::cli {
namespace {

namespace fs = std::filesystem;

class BundledLibstdcxx : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("strata_libstdcxx_" + std::to_string(getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "bundle" / "lib");
    fs::create_directories(root_ / "sys1");
    fs::create_directories(root_ / "sys2");
    std::ofstream(root_ / "bundle" / "lib" / "libstrata.so") << "ELF";
  }
  void TearDown() override { fs::remove_all(root_); }
  // A fake library whose version strings end at the highest given level.
  static void write_lib(const fs::path& path, int highest) {
    std::ofstream out(path, std::ios::binary);
    out << "\x7f"
           "ELF junk";
    for (int n = 19; n <= highest; ++n) out << "GLIBCXX_3.4." << n << '\0' << "padding";
  }
  std::string runtime() const { return (root_ / "bundle" / "lib" / "libstrata.so").string(); }
  fs::path root_;
};

TEST_F(BundledLibstdcxx, ReadsTheHighestVersionEndingAtItsNul) {
  const fs::path lib = root_ / "sys1" / "libstdc++.so.6";
  write_lib(lib, 30);
  std::ofstream(lib, std::ios::app | std::ios::binary) << "GLIBCXX_3.4.99 is mentioned in a message";
  EXPECT_EQ(libstdcxx_version_level(lib.string()), 30);
  EXPECT_EQ(libstdcxx_version_level((root_ / "absent").string()), 0);
}

TEST_F(BundledLibstdcxx, NoBundledCopyMeansNothingToPreload) {
  write_lib(root_ / "sys1" / "libstdc++.so.6", 33);
  EXPECT_EQ(newer_system_libstdcxx(runtime(), {(root_ / "sys1").string()}), "");
}

TEST_F(BundledLibstdcxx, ANewerOrEqualSystemCopyIsPreloaded) {
  write_lib(root_ / "bundle" / "lib" / "libstdc++.so.6", 30);
  write_lib(root_ / "sys2" / "libstdc++.so.6", 33);
  const std::string sys2 = (root_ / "sys2" / "libstdc++.so.6").string();
  EXPECT_EQ(newer_system_libstdcxx(runtime(), {(root_ / "sys1").string(), (root_ / "sys2").string()}), sys2);
  write_lib(root_ / "sys2" / "libstdc++.so.6", 30);
  EXPECT_EQ(newer_system_libstdcxx(runtime(), {(root_ / "sys2").string()}), sys2);
}

TEST_F(BundledLibstdcxx, AnOlderSystemCopyLeavesTheBundledOne) {
  write_lib(root_ / "bundle" / "lib" / "libstdc++.so.6", 30);
  write_lib(root_ / "sys1" / "libstdc++.so.6", 28);  // found first: the loader would take it
  write_lib(root_ / "sys2" / "libstdc++.so.6", 33);
  EXPECT_EQ(newer_system_libstdcxx(runtime(), {(root_ / "sys1").string(), (root_ / "sys2").string()}), "");
}

TEST_F(BundledLibstdcxx, ASanitizedBundleKeepsItsOwn) {
  write_lib(root_ / "bundle" / "lib" / "libstdc++.so.6", 30);
  write_lib(root_ / "sys1" / "libstdc++.so.6", 33);
  std::ofstream(root_ / "bundle" / "lib" / "libasan.so.8") << "ELF";
  EXPECT_EQ(newer_system_libstdcxx(runtime(), {(root_ / "sys1").string()}), "");
}

TEST_F(BundledLibstdcxx, ThisMachinesLibraryHasAVersion) {
  // Debian 12's GCC 12 runtime provides GLIBCXX_3.4.30; any supported system has at least 3.4.2x.
  std::string found;
  for (const std::string& dir : default_system_library_dirs())
    if (fs::exists(dir + "/libstdc++.so.6")) {
      found = dir + "/libstdc++.so.6";
      break;
    }
  ASSERT_FALSE(found.empty());
  EXPECT_GE(libstdcxx_version_level(found), 20);
}

}  // namespace
}  // namespace strata::cli
