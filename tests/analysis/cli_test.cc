// `strata analyze` end to end: the built binary on the golden inputs and on bad input.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "../test_util.h"
#include "fixture_traces.h"
#include "trace/trace_saver.h"

namespace strata::testing {
namespace {

const std::string kStrata = std::string(STRATA_BINARY_DIR) + "/bin/strata";
const std::string kInputs = std::string(STRATA_SOURCE_DIR) + "/tests/golden/inputs";

struct Result {
  int code = -1;
  std::string out, err;
};

Result run(const std::string& args, const TempDir& dir) {
  std::string err_file = dir.file("stderr.txt");
  std::string cmd = kStrata + " " + args + " 2>" + err_file;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.out.append(buf, n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = read_file(err_file);
  return r;
}

TEST(AnalyzeCli, ListsEveryAnalysis) {
  TempDir dir;
  Result r = run("analyze --list", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* name : {"model_table", "layer_table", "layer_sequence", "layer_type_distribution",
                           "layer_type_aggregate", "stages", "conv_share", "op_stats", "kernel_table",
                           "kernels_by_name", "kernels_by_layer", "kernels_by_model", "layer_device_split",
                           "metrics_by_layer", "kernel_roofline", "layer_roofline", "runs"})
    EXPECT_NE(("\n" + r.out).find(std::string("\n") + name + " "), std::string::npos) << name;
}

TEST(AnalyzeCli, CsvOfTheKnownAnswerFixture) {
  TempDir dir;
  Result r =
      run("analyze " + kInputs + "/cpu_model.trace -a layer_table,model_table --format csv --param trim=0.2",
          dir);
  ASSERT_EQ(r.code, 0) << r.err;
  // Two tables: "# name" separators; conv1 at batch 4 takes 3 ms; batch 4: 5 evaluations of 1 run,
  // 20 ms.
  EXPECT_NE(r.out.find("# layer_table\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n0,conv1,aten::conv2d,\"[1,64,56,56]\",3.0000,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\n4,5,1,20.000,"), std::string::npos) << r.out;
}

TEST(AnalyzeCli, JsonIsOneDocumentAndOutputDirWritesFiles) {
  TempDir dir;
  Result r = run("analyze " + kInputs + "/gpu_model.trace --format json", dir);
  ASSERT_EQ(r.code, 0) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"kernels_by_name\":"), std::string::npos);
  Result files =
      run("analyze " + kInputs + "/gpu_model.trace -a kernel_table --format csv --output " + dir.file("out"),
          dir);
  ASSERT_EQ(files.code, 0) << files.err;
  EXPECT_NE(read_file(dir.file("out/kernel_table.csv")).find("sgemm,0,1.0000,2.000,"), std::string::npos);
}

TEST(AnalyzeCli, MissingInputNamesTheLevel) {
  TempDir dir;
  trace::Trace t = cpu_model_trace();
  // Keep only the model spans: no layers left.
  trace::Trace models;
  models.add_process(t.processes[0]);
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (t.spans[i].level != static_cast<uint8_t>(Level::kModel)) continue;
    SpanRecord s = t.spans[i];
    s.name = models.strings.intern(t.name(t.spans[i]));
    models.add_span(s);
  }
  std::string error;
  ASSERT_TRUE(trace::save_trace(models, dir.file("models.strata"), &error)) << error;
  Result r = run("analyze " + dir.file("models.strata") + " -a layer_table", dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("layer_table: no layer-level spans"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--level layer"), std::string::npos) << r.err;
  // With one analysis that can run, the command succeeds and still reports the other.
  Result both = run("analyze " + dir.file("models.strata") + " -a model_table,layer_table", dir);
  EXPECT_EQ(both.code, 0);
  EXPECT_NE(both.err.find("layer_table: "), std::string::npos);
}

TEST(AnalyzeCli, BadInputIsOneLineNamingTheFile) {
  TempDir dir;
  write_file(dir.file("garbage.bin"), std::string("\x01\x02not a trace at all", 20));
  Result r = run("analyze " + dir.file("garbage.bin"), dir);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("garbage.bin"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  Result missing = run("analyze " + dir.file("nope.strata"), dir);
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("nope.strata: no such file"), std::string::npos) << missing.err;
  Result unknown = run("analyze " + kInputs + "/gpu_model.trace -a no_such_analysis", dir);
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.err.find("unknown analysis 'no_such_analysis'"), std::string::npos);
  Result param = run("analyze " + kInputs + "/gpu_model.trace --param trim", dir);
  EXPECT_EQ(param.code, 2);
  Result bad_value = run("analyze " + kInputs + "/gpu_model.trace --param threshold=five", dir);
  EXPECT_EQ(bad_value.code, 2);
  EXPECT_NE(bad_value.err.find("--param threshold=five is not a positive number"), std::string::npos)
      << bad_value.err;
  Result bad_trim = run("analyze " + kInputs + "/gpu_model.trace --param trim=0.5", dir);
  EXPECT_EQ(bad_trim.code, 2);
}

TEST(AnalyzeCli, ParamKeysNoChosenAnalysisReadsAreRefused) {
  TempDir dir;
  Result typo = run("analyze " + kInputs + "/cpu_model.trace --param tpo=5", dir);
  EXPECT_EQ(typo.code, 2);
  EXPECT_TRUE(typo.out.empty()) << typo.out;
  EXPECT_NE(typo.err.find("--param tpo is not a parameter of the chosen analyses"), std::string::npos) << typo.err;
  EXPECT_EQ(std::count(typo.err.begin(), typo.err.end(), '\n'), 1) << typo.err;
  // top with an analysis that has no ranking: one note, the rest applies it.
  Result top = run("analyze " + kInputs + "/cpu_model.trace -a model_table,layer_device_split --param top=2 "
                   "--format csv",
                   dir);
  EXPECT_EQ(top.code, 0) << top.err;
  EXPECT_NE(top.err.find("note: --param top does not apply to model_table"), std::string::npos) << top.err;
  const size_t split = top.out.find("# layer_device_split\n");
  ASSERT_NE(split, std::string::npos) << top.out;
  EXPECT_EQ(std::count(top.out.begin() + static_cast<long>(split), top.out.end(), '\n'), 1 + 1 + 2) << top.out;
}

}  // namespace
}  // namespace strata::testing
