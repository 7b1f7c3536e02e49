// `strata bench generate`: the files it writes and the cases in them.
#include "lowerbound/codegen.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "lowerbound/onnx_loader.h"

namespace strata::lowerbound {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

TEST(Codegen, WritesStandaloneGoogleBenchmarkSources) {
  std::vector<LayerModel> models(1);
  std::string error;
  ASSERT_TRUE(load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/chain_net.onnx",
                             &models[0], &error))
      << error;
  testing::TempDir dir;
  BenchOptions options;
  options.layouts = {"nchw", "nhwc"};
  options.fusion = true;
  GenerateStats stats;
  ASSERT_TRUE(generate_benchmarks(models, options, dir.path(), &stats, &error)) << error;
  // Per layout: 2 convs x 3 algorithms + 2 fused convs x 3 + relu + pool + gemm = 15.
  EXPECT_EQ(stats.benchmarks, 30u);
  EXPECT_EQ(stats.files.size(), 4u);
  std::string source = read(dir.file("benchmarks.cc"));
  EXPECT_EQ(count(source, "BenchCase{.op"), 30u);
  EXPECT_EQ(count(source, ".post_op = \"relu\""), 12u);
  EXPECT_NE(source.find("#include \"onednn_ops.h\""), std::string::npos);
  EXPECT_NE(source.find("benchmark::RegisterBenchmark"), std::string::npos);
  // The helper headers are copies of the ones `strata bench run` is built from.
  EXPECT_EQ(read(dir.file("onednn_ops.h")),
            read(std::string(STRATA_SOURCE_DIR) + "/src/lowerbound/onednn_ops.h"));
  EXPECT_EQ(read(dir.file("bench_case.h")),
            read(std::string(STRATA_SOURCE_DIR) + "/src/lowerbound/bench_case.h"));
  EXPECT_NE(read(dir.file("CMakeLists.txt")).find("find_package(benchmark REQUIRED)"), std::string::npos);
}

TEST(Codegen, UnwritableDirectoryIsAClearError) {
  std::vector<LayerModel> models;
  GenerateStats stats;
  std::string error;
  EXPECT_FALSE(generate_benchmarks(models, BenchOptions(), "/proc/strata-cannot-write-here", &stats, &error));
  EXPECT_NE(error.find("/proc/strata-cannot-write-here"), std::string::npos) << error;
}

}  // namespace
}  // namespace strata::lowerbound
