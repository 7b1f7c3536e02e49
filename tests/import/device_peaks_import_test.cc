// Imported deviceProperties pick the roofline's device peaks without --param device: the table
// entry is chosen from the device name of the GPU that ran the kernels, and the note says which.
#include <gtest/gtest.h>

#include <string>

#include "analysis/analysis.h"
#include "analysis/device_peaks.h"
#include "import/importer.h"
#include "import_test_util.h"
#include "trace/span_tree.h"

namespace strata::import {
namespace {

// One op launching one kernel (2 GFLOP, 200 MB: intensity 10 flop/byte, 1 ms) on `kernel_device`,
// on a node whose deviceProperties list `devices`.
std::string trace_json(const std::string& devices, int kernel_device) {
  const std::string d = std::to_string(kernel_device);
  return R"({"schemaVersion": 1, "deviceProperties": )" + devices + R"(, "traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 5000},
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 10, "dur": 100},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 20, "dur": 5,
     "args": {"correlation": 5}},
    {"ph": "X", "cat": "kernel", "name": "sgemm", "pid": )" +
         d + R"(, "tid": 7, "ts": 30, "dur": 1000,
     "args": {"device": )" +
         d + R"(, "stream": 7, "correlation": 5, "flops": 2000000000, "bytes": 200000000}}
  ]})";
}

const char* kTwoDevices = R"([{"id": 0, "name": "NVIDIA A100-SXM4-80GB"}, {"id": 1, "name": "Tesla V100-SXM2-32GB"}])";

trace::Trace import_json(const std::string& json) {
  trace::Trace t;
  std::string error;
  ImportOptions opts;
  opts.format = "kineto";
  EXPECT_TRUE(import_buffer(json, "peaks.json", &t, &error, opts)) << error;
  return t;
}

analysis::AnalysisResult roofline(const trace::Trace& t, const analysis::Params& params = {}) {
  const analysis::Analysis* a = analysis::find_analysis("kernel_roofline");
  EXPECT_NE(a, nullptr);
  trace::SpanTree tree = trace::build_span_tree(t);
  analysis::AnalysisInput input{t, tree, params};
  return a->run(input);
}

std::string all_notes(const analysis::AnalysisResult& r) {
  std::string notes;
  for (const auto& table : r.tables)
    for (const auto& n : table.notes) notes += n + "\n";
  return notes;
}

double attainable(const analysis::AnalysisResult& r) {
  const analysis::Table& t = r.tables.at(0);
  for (size_t c = 0; c < t.columns.size(); ++c)
    if (t.columns[c] == "attainable_gflop_per_s") return std::get<double>(t.rows.at(0).at(c).value);
  ADD_FAILURE() << "no attainable column";
  return 0;
}

TEST(ImportedDevicePeaks, TheDeviceThatRanTheKernelsPicksTheEntry) {
  // Kernels on device 1 (V100): 15.7 TFLOP/s, 900 GB/s -> attainable min(15700, 10 x 900) = 9000.
  trace::Trace t = import_json(trace_json(kTwoDevices, 1));
  std::string why;
  auto peaks = analysis::resolve_peaks(t, {}, false, &why);
  ASSERT_TRUE(peaks) << why;
  EXPECT_DOUBLE_EQ(peaks->gflops, 15700);
  EXPECT_DOUBLE_EQ(peaks->gbps, 900);
  EXPECT_NE(peaks->description.find("[device Tesla V100-SXM2-32GB from device.1.name: table entry v100]"),
            std::string::npos)
      << peaks->description;
  analysis::AnalysisResult r = roofline(t);
  ASSERT_FALSE(r.missing_input) << *r.missing_input;
  EXPECT_DOUBLE_EQ(attainable(r), 9000);
  EXPECT_NE(all_notes(r).find("table entry v100"), std::string::npos) << all_notes(r);

  // Kernels on device 0 (A100 80GB): min(19500, 10 x 2039) = 19500.
  trace::Trace t0 = import_json(trace_json(kTwoDevices, 0));
  analysis::AnalysisResult r0 = roofline(t0);
  ASSERT_FALSE(r0.missing_input) << *r0.missing_input;
  EXPECT_DOUBLE_EQ(attainable(r0), 19500);
  EXPECT_NE(all_notes(r0).find("table entry a100-80gb"), std::string::npos) << all_notes(r0);
}

TEST(ImportedDevicePeaks, ExplicitParamStillWins) {
  trace::Trace t = import_json(trace_json(kTwoDevices, 1));
  analysis::Params params;
  params.set("device", "h100");
  analysis::AnalysisResult r = roofline(t, params);
  ASSERT_FALSE(r.missing_input) << *r.missing_input;
  EXPECT_DOUBLE_EQ(attainable(r), 10 * 3350.0);
}

TEST(ImportedDevicePeaks, UnknownDeviceFallsBackAndNamesIt) {
  // What ROCm reports for an MI250 GCD in the real MI250 trace: no model in the name.
  trace::Trace t = import_json(trace_json(R"([{"id": 0, "name": "AMD Radeon Graphics"}])", 0));
  analysis::AnalysisResult r = roofline(t);
  ASSERT_TRUE(r.missing_input);
  EXPECT_NE(r.missing_input->find("device peaks unknown"), std::string::npos) << *r.missing_input;
  EXPECT_NE(r.missing_input->find("'AMD Radeon Graphics' (device.0.name) is not in the peak table"),
            std::string::npos)
      << *r.missing_input;
  EXPECT_NE(r.missing_input->find("--param device="), std::string::npos) << *r.missing_input;
  // No deviceProperties at all: the message as before.
  trace::Trace none = import_json(trace_json("[]", 0));
  analysis::AnalysisResult rn = roofline(none);
  ASSERT_TRUE(rn.missing_input);
  EXPECT_NE(rn.missing_input->find("no device name in the trace"), std::string::npos) << *rn.missing_input;
}

TEST(ImportedDevicePeaks, RealTraces) {
  struct Case {
    const char* file;
    const char* entry;  // nullptr: not in the table
  };
  for (const Case& c : {Case{"tests/data/kineto/a100_alexnet_train.json.gz", "a100"},
                        Case{"tests/data/kineto/v100_train_rank0.json.gz", "v100"},
                        Case{"tests/data/kineto/mi250_train.json.gz", nullptr}}) {
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(import_trace(strata::testing::source_path(c.file), &t, &error)) << error;
    std::string why;
    auto peaks = analysis::resolve_peaks(t, {}, false, &why);
    if (c.entry) {
      ASSERT_TRUE(peaks) << c.file << ": " << why;
      EXPECT_NE(peaks->description.find(std::string("table entry ") + c.entry + "]"), std::string::npos)
          << peaks->description;
    } else {
      EXPECT_FALSE(peaks) << c.file;
      EXPECT_NE(why.find("AMD Radeon Graphics"), std::string::npos) << why;
    }
  }
}

}  // namespace
}  // namespace strata::import
