// The relocatable tree: install + bundle into a temp dir, move it, and record from the moved copy.
// Needs the whole build (cmake --install installs every module's targets): CI runs it after `ninja`.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "../test_util.h"
#include "core/level.h"
#include "trace/trace.h"
#include "trace/trace_loader.h"

namespace strata {
namespace {

namespace fs = std::filesystem;

int run(const std::string& command) {
  int status = std::system(command.c_str());
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string capture(const std::string& command) {
  std::string out;
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

TEST(Bundle, MovedTreeRecordsWithItsOwnLibraries) {
  if (run("command -v patchelf > /dev/null") != 0)
    GTEST_SKIP() << "patchelf not installed (scripts/setup.sh installs it)";
  testing::TempDir dir;
  std::string first = dir.file("first"), moved = dir.file("moved/strata"), log = dir.file("bundle.log");
  ASSERT_EQ(run(std::string(STRATA_SOURCE_DIR) + "/scripts/bundle.sh " + STRATA_BINARY_DIR + " --dir " +
                first + " > " + log + " 2>&1"),
            0)
      << testing::read_file(log);
  fs::create_directories(dir.file("moved"));
  fs::rename(first, moved);

  // Nothing CUDA inside; the non-system libraries the tool needs are.
  for (const auto& entry : fs::directory_iterator(moved + "/lib")) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find("libcupti"), std::string::npos) << name;
    EXPECT_EQ(name.find("libcudnn.so"), std::string::npos) << name;
    EXPECT_EQ(name.find("libcublas"), std::string::npos) << name;
    EXPECT_EQ(name.find("libcudart"), std::string::npos) << name;
  }
  EXPECT_TRUE(fs::exists(moved + "/lib/libzstd.so.1"));
  EXPECT_TRUE(fs::exists(moved + "/lib/libstrata_nvtx.so"));
  std::string deps = capture("ldd " + moved + "/bin/strata");
  EXPECT_NE(deps.find(moved + "/bin/../lib/libzstd.so.1"), std::string::npos)
      << deps;  // via RUNPATH $ORIGIN/../lib
  EXPECT_EQ(deps.find("not found"), std::string::npos) << deps;

  // Record an NVTX program with the moved copy: the trace must hold the NVTX ranges, which only the
  // moved tree's libstrata_nvtx.so can have produced (the build tree is not on any path given).
  std::string out = dir.file("moved.strata"), err = dir.file("record.log");
  std::string program = std::string(STRATA_BINARY_DIR) + "/bin/nvtx_demo";
  ASSERT_EQ(run("env -u LD_LIBRARY_PATH " + moved + "/bin/strata record --quiet --level layer -o " + out +
                " -- " + program + " > /dev/null 2> " + err),
            0)
      << testing::read_file(err);
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(trace::load_trace(out, &t, &error)) << error;
  size_t nvtx_spans = 0;
  for (const auto& s : t.spans)
    if (t.name(s) == "layer1" && s.level == static_cast<uint8_t>(Level::kLayer)) ++nvtx_spans;
  EXPECT_EQ(nvtx_spans, 1u);

  // The bundled libstdc++ is this machine's, so the node's own (here the same version) is preloaded
  // ahead of the runtime: a framework needing a newer one than the bundle's never gets the bundle's.
  ASSERT_TRUE(fs::exists(moved + "/lib/libstdc++.so.6"));
  std::string preload = dir.file("preload.txt"), err2 = dir.file("record2.log");
  ASSERT_EQ(
      run("env -u LD_LIBRARY_PATH " + moved + "/bin/strata record --quiet -o " + dir.file("env.strata") +
          " -- /bin/sh -c 'printf %s \"$LD_PRELOAD\" > " + preload + "' 2> " + err2),
      0)
      << testing::read_file(err2);
  std::string preloaded = testing::read_file(preload);
  bool sanitized = false;  // an ASan build's bundle keeps its own (its runtime must come first)
  for (const auto& entry : fs::directory_iterator(moved + "/lib"))
    sanitized |= entry.path().filename().string().starts_with("libasan.so");
  if (sanitized) return;
  EXPECT_NE(preloaded.find("/libstdc++.so.6:"), std::string::npos) << preloaded;
  EXPECT_EQ(preloaded.find(moved + "/lib/libstdc++.so.6"), std::string::npos) << preloaded;
  EXPECT_LT(preloaded.find("libstdc++.so.6"), preloaded.find("libstrata.so")) << preloaded;
}

TEST(Bundle, ArchiveStaysUnder64MiB) {
  if (run("command -v patchelf > /dev/null") != 0)
    GTEST_SKIP() << "patchelf not installed (scripts/setup.sh installs it)";
  testing::TempDir dir;
  std::string archive = dir.file("strata.tar.gz"), log = dir.file("bundle.log");
  // bundle.sh itself fails when the archive is over 64 MiB.
  ASSERT_EQ(run(std::string(STRATA_SOURCE_DIR) + "/scripts/bundle.sh " + STRATA_BINARY_DIR + " " + archive +
                " > " + log + " 2>&1"),
            0)
      << testing::read_file(log);
  EXPECT_LT(fs::file_size(archive), 64u << 20);
  EXPECT_GT(fs::file_size(archive), 1u << 20);
}

}  // namespace
}  // namespace strata
