// `strata bench generate`: the files it writes and the cases in them.
#include "lowerbound/harness/codegen.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "../test_util.h"
#include "lowerbound/ir/onnx_loader.h"

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
            read(std::string(STRATA_SOURCE_DIR) + "/src/lowerbound/harness/onednn_ops.h"));
  EXPECT_EQ(read(dir.file("bench_case.h")),
            read(std::string(STRATA_SOURCE_DIR) + "/src/lowerbound/harness/bench_case.h"));
  std::string cmake = read(dir.file("CMakeLists.txt"));
  EXPECT_NE(cmake.find("find_package(benchmark REQUIRED)"), std::string::npos);
  EXPECT_EQ(cmake.find("find_package(dnnl"), std::string::npos);  // needs OpenCL on Debian
  EXPECT_NE(cmake.find("find_library(DNNL_LIBRARY"), std::string::npos);
}

using strata::testing::run_command;

// What a user does with `strata bench generate`: configure the project with CMake (oneDNN found
// without its OpenCL-requiring package config), build it with warnings as errors, and run it. resnet18
// with --fusion, so the run includes a convolution fused with its residual Add and ReLU (oneDNN sum +
// eltwise post-ops), a plain convolution and an eltwise layer.
TEST(Codegen, GeneratedCpuProjectConfiguresBuildsAndRuns) {
  std::vector<LayerModel> models(1);
  std::string error;
  ASSERT_TRUE(load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/resnet18.onnx",
                             &models[0], &error))
      << error;
  testing::TempDir dir;
  BenchOptions options;
  options.fusion = true;
  GenerateStats stats;
  ASSERT_TRUE(generate_benchmarks(models, options, dir.path(), &stats, &error)) << error;
  ASSERT_GT(stats.benchmarks, 0u);
  std::string out;
  ASSERT_EQ(run_command("cmake -S " + dir.path() + " -B " + dir.file("build") +
                            " -G Ninja -DCMAKE_CXX_COMPILER=" STRATA_CXX_COMPILER
                            " '-DCMAKE_CXX_FLAGS=-Wall -Wextra -Werror'",
                        &out),
            0)
      << out;
  ASSERT_EQ(run_command("ninja -C " + dir.file("build"), &out), 0) << out;
  ASSERT_EQ(
      run_command("OMP_NUM_THREADS=1 " + dir.file("build/layer_benchmarks") +
                      " '--benchmark_filter=layer1.0/conv2/Conv/conv\\+sum\\+relu/direct|"
                      "layer1.0/conv1/Conv/conv/direct|/relu/Relu/eltwise/relu' --benchmark_min_time=0.005",
                  &out),
      0)
      << out;
  EXPECT_EQ(out.find("ERROR OCCURRED"), std::string::npos) << out;
  for (const char* name :
       {"/layer1/layer1.0/conv2/Conv/conv+sum+relu/direct/f32/nchw/repeats:5/real_time_median",
        "/layer1/layer1.0/conv1/Conv/conv/direct/f32/nchw/repeats:5/real_time_median",
        "/relu/Relu/eltwise/relu/f32/nchw/repeats:5/real_time_median"})
    EXPECT_NE(out.find(name), std::string::npos) << name << "\n" << out;
}

TEST(Codegen, UnwritableDirectoryIsAClearError) {
  std::vector<LayerModel> models;
  GenerateStats stats;
  std::string error;
  EXPECT_FALSE(generate_benchmarks(models, BenchOptions(), "/proc/strata-cannot-write-here", &stats, &error));
  EXPECT_NE(error.find("/proc/strata-cannot-write-here"), std::string::npos) << error;
}

// Issue 13.12: layer names come from the ONNX file and may hold any byte. A CR written raw into the
// generated source ended the string literal and the project did not compile. Every name below is
// written as a literal, compiled with the project's compiler and printed back byte for byte.
TEST(Codegen, LayerNamesWithControlCharactersCompileAndRoundTrip) {
  const std::vector<std::string> names = {
      "conv\rrelu",                // CR
      "a\r\nb",                    // CRLF
      "tab\tand\vvertical\fform",  // tab, vertical tab, form feed
      "esc\x1b[31mred\x1b[0m",     // terminal escapes
      std::string("nul\0inside", 10),
      "del\x7f and bell\a",
      "quote\" back\\slash \\x41 ?\?= ?\?/",  // an escaped backslash before hex digits; trigraph look-alikes
      "\x01"
      "7digits after an octal escape 777",
      "utf8 \xc3\xa9 and a lone \xff byte"};
  testing::TempDir dir;
  std::string source = "#include <cstdio>\nint main() {\n";
  for (const std::string& n : names) {
    std::string literal = cpp_string_literal(n);
    EXPECT_EQ(literal.find('\r'), std::string::npos) << literal;
    EXPECT_EQ(literal.find('\n'), std::string::npos) << literal;
    source += "  { static const char s[] = " + literal +
              "; std::fwrite(s, 1, sizeof s - 1, stdout); std::fputc('|', stdout); }\n";
  }
  source += "  return 0;\n}\n";
  {
    std::ofstream out(dir.file("names.cc"), std::ios::binary);
    out << source;
  }
  std::string out;
  ASSERT_EQ(run_command(std::string(STRATA_CXX_COMPILER) + " -std=c++20 -Wall -Werror -o " +
                            dir.file("names") + " " + dir.file("names.cc"),
                        &out),
            0)
      << out;
  ASSERT_EQ(run_command(dir.file("names") + " > " + dir.file("printed"), &out), 0) << out;
  std::string expected;
  for (const std::string& n : names) expected += n + "|";
  EXPECT_EQ(read(dir.file("printed")), expected);

  // And through the generator: a model whose layer names hold a CR writes no raw control character.
  std::vector<LayerModel> models(1);
  std::string error;
  ASSERT_TRUE(load_onnx_file(std::string(STRATA_SOURCE_DIR) + "/tests/lowerbound/data/chain_net.onnx",
                             &models[0], &error))
      << error;
  for (Layer& l : models[0].layers) l.name += "\r\x1b";
  GenerateStats stats;
  ASSERT_TRUE(generate_benchmarks(models, BenchOptions{}, dir.file("gen"), &stats, &error)) << error;
  std::string generated = read(dir.file("gen/benchmarks.cc"));
  EXPECT_EQ(generated.find('\r'), std::string::npos);
  EXPECT_EQ(generated.find('\x1b'), std::string::npos);
  EXPECT_NE(generated.find("\\015\\033/"), std::string::npos);
}

}  // namespace
}  // namespace strata::lowerbound
