// Every command that reads a trace reads every format, through the one open_trace: strata info,
// export, analyze, iterations and lowerbound --trace on a native trace and on a Kineto JSON given
// directly (no `strata import` first). STRATA_TEST_CLI=/path/to/strata runs them against another
// build (e.g. to see them fail on one without the reader registry).
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "../test_util.h"

namespace strata::testing {
namespace {

std::string strata_cli() {
  const char* v = std::getenv("STRATA_TEST_CLI");
  return v != nullptr && *v ? v : std::string(STRATA_BINARY_DIR) + "/bin/strata";
}
const std::string kSource = STRATA_SOURCE_DIR;
const std::string kKineto = kSource + "/tests/golden/inputs/a100_alexnet_train.json.gz";
const std::string kNative = kSource + "/tests/golden/inputs/gpu_model.trace";

struct Result {
  int code = -1;
  std::string out, err;
};

Result run(const std::string& args, const TempDir& dir) {
  const std::string err_file = dir.file("stderr.txt");
  const std::string cmd = strata_cli() + " " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  return r;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(OpenCli, InfoReadsKinetoDirectlyAndPrintsEveryNonZeroStat) {
  TempDir dir;
  Result r = run("info " + kKineto, dir);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("stats (every non-zero counter"), std::string::npos) << r.out;
  for (const char* stat :
       {"import.events_read", "import.spans_written", "tree.correlation_links", "tree.roots", "load.files"})
    EXPECT_NE(r.out.find(stat), std::string::npos) << stat << "\n" << r.out;
  // A native trace is streamed (issue 13 item 9: memory independent of its size), so no span tree
  // is built: what reading found is printed, the tree's counters are not.
  Result n = run("info " + kNative, dir);
  ASSERT_EQ(n.code, 0) << n.err;
  EXPECT_NE(n.out.find("load.files"), std::string::npos) << n.out;
  EXPECT_EQ(n.out.find("tree.roots"), std::string::npos) << n.out;
}

TEST(OpenCli, ExportReadsKinetoDirectlyWithTheTree) {
  TempDir dir;
  Result json = run("export " + kKineto + " --format json", dir);
  ASSERT_EQ(json.code, 0) << json.err;
  // Kernels under launches, launches under ops: thousands of spans with a parent (none before).
  EXPECT_GT(count(json.out, "\"parent_link\":\"correlation\""), 100u);
  EXPECT_GT(count(json.out, "\"parent_link\":\"containment\""), 100u);
  Result csv = run("export " + kKineto + " --format csv", dir);
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_EQ(csv.out.rfind("span_id,parent_id,parent_link,remote_parent_id,", 0), 0u);
  Result chrome = run("export " + kKineto + " --format chrome", dir);
  ASSERT_EQ(chrome.code, 0) << chrome.err;
  EXPECT_GT(count(chrome.out, "\"ph\":\"s\""), 100u);
  Result native = run("export " + kNative + " --format json", dir);
  ASSERT_EQ(native.code, 0) << native.err;
}

TEST(OpenCli, AnalyzeAndIterationsReadBothFormats) {
  TempDir dir;
  for (const std::string& input : {kKineto, kNative}) {
    Result a = run("analyze " + input + " --format csv", dir);
    ASSERT_EQ(a.code, 0) << input << "\n" << a.err;
    EXPECT_NE(a.out.find("# model_table"), std::string::npos) << a.out;
    Result i = run("iterations " + input + " --format csv", dir);
    ASSERT_EQ(i.code, 0) << input << "\n" << i.err;
  }
  // Several inputs of different formats: one trace (sorted once, one tree).
  Result both = run("analyze " + kNative + " " + kKineto + " -a op_stats --format csv", dir);
  ASSERT_EQ(both.code, 0) << both.err;
  EXPECT_NE(both.out.find("aten::conv2d"), std::string::npos);
}

TEST(OpenCli, LowerboundComparesWithATraceOfEitherFormat) {
  TempDir dir;
  const std::string model = kSource + "/tests/lowerbound/data/chain_net.onnx";
  const std::string db = dir.file("perf.sqlite");
  // Noise has its own tests: here a loaded machine must not keep the measurement out.
  Result bench = run("bench run " + model + " --db " + db + " --max-spread 10", dir);
  if (bench.code != 0 && bench.err.find("unknown command") != std::string::npos)
    GTEST_SKIP() << "strata built without lowerbound";
  ASSERT_EQ(bench.code, 0) << bench.err;
  for (const std::string& trace : {kKineto, kSource + "/tests/lowerbound/data/resnet18_cpu_library.trace"}) {
    Result r = run("lowerbound " + model + " --db " + db + " --trace " + trace, dir);
    ASSERT_EQ(r.code, 0) << trace << "\n" << r.err;
    EXPECT_NE(r.out.find("Framework end-to-end latency vs lower bound"), std::string::npos) << r.out;
  }
}

TEST(OpenCli, UnreadableInputsGetOneLineNamingTheFile) {
  TempDir dir;
  write_file(dir.file("empty.strata"), "");
  for (const char* cmd : {"info", "export", "analyze", "iterations"}) {
    Result r = run(std::string(cmd) + " " + dir.file("empty.strata"), dir);
    EXPECT_EQ(r.code, 1) << cmd;
    EXPECT_NE(r.err.find(dir.file("empty.strata") + ": offset 0: empty file"), std::string::npos)
        << cmd << ": " << r.err;
  }
}

}  // namespace
}  // namespace strata::testing
