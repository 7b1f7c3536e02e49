// Golden tests: each input trace in tests/golden/inputs goes through every analysis, and the CSV
// must equal tests/golden/<analysis>/<input>.csv byte for byte. STRATA_UPDATE_GOLDEN=1 rewrites
// the expected files (and the two fixture inputs, from fixture_traces.cc) instead of comparing.
// The numbers in the fixtures' goldens are checked independently by analyses_test.cc.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "../test_util.h"
#include "analysis/analysis.h"
#include "analysis/workload.h"
#include "export/table_render.h"
#include "fixture_traces.h"
#include "trace/rank_align.h"
#include "trace/span_tree.h"
#include "trace/trace_loader.h"
#include "trace/trace_reader.h"
#include "trace/trace_saver.h"
#ifdef STRATA_GOLDEN_KINETO
#include "import/importer.h"
#endif

namespace strata::testing {
namespace {

namespace fs = std::filesystem;
const std::string kGolden = std::string(STRATA_SOURCE_DIR) + "/tests/golden";

bool updating() {
  const char* v = std::getenv("STRATA_UPDATE_GOLDEN");
  return v != nullptr && std::string(v) == "1";
}

// Optional per-case parameters: tests/golden/<analysis>/<input>.params, one KEY=VALUE per line.
analysis::Params params_for(const std::string& analysis_name, const std::string& input) {
  analysis::Params p;
  std::istringstream in(read_file(kGolden + "/" + analysis_name + "/" + input + ".params"));
  for (std::string line; std::getline(in, line);) {
    size_t eq = line.find('=');
    if (eq != std::string::npos && line[0] != '#') p.set(line.substr(0, eq), line.substr(eq + 1));
  }
  return p;
}

std::string render(const trace::Trace& trace, const analysis::Analysis& a, const analysis::Params& params) {
  trace::SpanTree tree = trace::build_span_tree(trace);
  analysis::Workload workload(trace, tree);
  analysis::AnalysisResult r = a.run({trace, tree, params, &workload});
  if (r.missing_input) return "missing: " + *r.missing_input + "\n";
  std::ostringstream out;
  exporter::render_tables(r.tables, exporter::TableFormat::kCsv, out);
  return out.str();
}

// `only`: check that one analysis (an input kept for it alone), else every analysis.
void check_all(const trace::Trace& trace, const std::string& input, std::string_view only = {}) {
  for (const auto& a : analysis::all_analyses()) {
    const std::string name(a->name());
    if (!only.empty() && name != only) continue;
    std::string actual = render(trace, *a, params_for(name, input));
    std::string path = kGolden + "/" + name + "/" + input + ".csv";
    if (updating()) {
      fs::create_directories(kGolden + "/" + name);
      write_file(path, actual);
      continue;
    }
    ASSERT_TRUE(fs::exists(path)) << path << " missing: run with STRATA_UPDATE_GOLDEN=1 and review the diff";
    EXPECT_EQ(read_file(path), actual)
        << "golden mismatch: " << path
        << " (if the change is intended: STRATA_UPDATE_GOLDEN=1, then review the diff)";
  }
}

trace::Trace load_native(const std::string& file) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::load_trace(kGolden + "/inputs/" + file, &t, &error)) << error;
  return t;
}

void save_fixture(const trace::Trace& t, const std::string& file) {
  std::string error;
  ASSERT_TRUE(trace::save_trace(t, kGolden + "/inputs/" + file, &error)) << error;
}

TEST(Golden, CpuModelFixture) {
  trace::Trace built = cpu_model_trace();
  if (updating()) save_fixture(built, "cpu_model.trace");
  // The committed input is the known-answer fixture: the in-memory one gives the same goldens.
  check_all(load_native("cpu_model.trace"), "cpu_model");
  if (!updating()) check_all(built, "cpu_model");
}

TEST(Golden, GpuModelFixture) {
  trace::Trace built = gpu_model_trace();
  if (updating()) save_fixture(built, "gpu_model.trace");
  check_all(load_native("gpu_model.trace"), "gpu_model");
  if (!updating()) check_all(built, "gpu_model");
}

// Files written before format 1.1 (tests/data/format_1_0, README there): no activity types, the 1.0
// attribute spellings. Loaded today, the loader types their spans and renames their keys once
// (trace/activity_upgrade.h), and every analysis gives what the 1.0 analyses gave: the goldens of
// these inputs were first written by the 1.0 build (commit 4ced071), which found copies and memsets
// by name and read the 1.0 attribute spellings.
trace::Trace load_format_1_0(const std::string& file) {
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(
      trace::load_trace(std::string(STRATA_SOURCE_DIR) + "/tests/data/format_1_0/" + file, &t, &error))
      << error;
  EXPECT_EQ(t.stats.get(stats::Stat::kLoadActivityUpgraded), t.spans.size()) << file << ": every span typed at load";
  for (const SpanRecord& s : t.spans) EXPECT_NE(s.activity_type(), ActivityType::kUnknown) << file;
  return t;
}

// A real 1.0 recording: `strata record --level library` of examples/pytorch/infer.py (resnet18,
// batch 2, 2 iterations, 32x32 images) by the 1.0 build: PyTorch ops with shapes, module paths and
// alloc_bytes, oneDNN primitives, predict spans with batch_size (now the canonical batch).
TEST(Golden, Format10RecordedResnet18) {
  trace::Trace t = load_format_1_0("resnet18_library.trace");
  EXPECT_GT(t.stats.get(stats::Stat::kLoadLegacyKeysRenamed), 0u);
  check_all(t, "resnet18_library");
}

TEST(Golden, Format10Fixtures) {
  check_all(load_format_1_0("cpu_model.trace"), "cpu_model");
  check_all(load_format_1_0("gpu_model.trace"), "gpu_model");
}

#ifdef STRATA_GOLDEN_KINETO
// The same Kineto trace imported today and imported by 1.0 (saved as a 1.0 file) give the same
// analyses.
TEST(Golden, Format10ImportedKineto) {
  check_all(load_format_1_0("a100_alexnet_train.trace"), "a100_alexnet_train");
  check_all(load_format_1_0("multirank_rank0.trace"), "multirank_rank0");
}

// Rank 0 of a multi-rank job (memcpy in three directions, memsets, NCCL kernels, Input Dims): its
// goldens were first written by the 1.0 build, which found copies and memsets by name.
TEST(Golden, KinetoMultirankRank0) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/multirank_rank0.json.gz",
                                   &t, &error))
      << error;
  check_all(t, "multirank_rank0");
}

// The two real ranks of that job merged as `strata merge` does (ranks from distributedInfo, clocks
// checked against their collectives): the cross-rank analyses on them.
TEST(Golden, KinetoMultirankMerged) {
  import::register_readers();
  const std::string dir = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/";
  const std::vector<std::string> paths = {dir + "multirank_rank0.json.gz", dir + "multirank_rank1.json.gz"};
  trace::Trace t;
  std::string error;
  trace::OpenOptions options;
  options.before_finish = [](trace::Trace& trace, std::span<const size_t>) {
    trace::align_rank_clocks(&trace);
  };
  ASSERT_TRUE(trace::open_traces(paths, &t, &error, options)) << error;
  for (const char* name : {"rank_breakdown", "collective_wait", "idle_time", "comm_overlap", "step_time",
                           "kernel_distribution", "launch_stats", "queue_length"})
    check_all(t, "multirank_merged", name);
}

TEST(Golden, KinetoA100AlexNet) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(kGolden + "/inputs/a100_alexnet_train.json.gz", &t, &error)) << error;
  check_all(t, "a100_alexnet_train");
}

// The three real Nsight Systems exports (tests/data/nsys, origins in its README) and the two real H100
// Kineto traces (tests/data/kineto_hopper): every analysis, through the reader registry. The kernel
// tables of the H100 inputs show which kernels are tensor-core kernels (tests/import/hopper_test.cc
// counts them against kernel names checked by hand).
TEST(Golden, NsysExportsAndH100Traces) {
  import::register_readers();
  const std::string data = std::string(STRATA_SOURCE_DIR) + "/tests/data/";
  const std::pair<const char*, const char*> inputs[] = {
      {"nsys/a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite", "nsys_a100_saxpy"},
      {"nsys/a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite", "nsys_a100_cloverleaf"},
      {"nsys/h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite", "nsys_h100_nvfuser"},
      {"kineto_hopper/h100_bert_small.json.gz", "h100_bert_small"},
      {"kineto_hopper/h100_vit_image_classification.json.gz", "h100_vit"},
  };
  for (const auto& [file, input] : inputs) {
    trace::Trace t;
    std::string error;
    ASSERT_TRUE(trace::open_trace(data + file, &t, &error)) << error;
    check_all(t, input);
  }
}

// Iteration mining on a real training trace (5 steps; tests/iterations/kineto_test.cc checks them
// against the step annotations): its own input, checked by the iterations analysis, and by
// launch_stats and step_time (a single rank, 6,095 launches, 5 ProfilerSteps).
TEST(Golden, KinetoV100Iterations) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(
      std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/v100_train_rank0.json.gz", &t, &error))
      << error;
  check_all(t, "v100_train_rank0", "iterations");
  check_all(t, "v100_train_rank0", "launch_stats");
  check_all(t, "v100_train_rank0", "step_time");
}

// Known answers on the real trace, summed independently from its JSON (events with ph "X"):
// cat kernel/gpu_memcpy/gpu_memset total 66203 us; "Memcpy HtoD (Pageable -> Device)" 16 events,
// 55503 us; ampere_sgemm_32x32_sliced1x4_tn 6 events, 2621 us; cpu_op aten::conv2d 10 events,
// 11919366 us; aten::relu_ 14 events, 570 us.
TEST(KinetoKnownAnswers, PerOpTotalsMatchTheJson) {
  trace::Trace t;
  std::string error;
  ASSERT_TRUE(import::import_trace(kGolden + "/inputs/a100_alexnet_train.json.gz", &t, &error)) << error;
  analysis::Params device;
  device.set("level", "device");
  device.set("top", "0");
  std::string csv = render(t, *analysis::find_analysis("op_stats"), device);
  EXPECT_NE(csv.find("\nMemcpy HtoD (Pageable -> Device),16,55.5030,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nampere_sgemm_32x32_sliced1x4_tn,6,2.6210,"), std::string::npos) << csv;
  // Device executions do not nest: self = total, and the share is of all device time.
  char pct[64];
  std::snprintf(pct, sizeof(pct), ",16,55.5030,55.5030,%.2f,%.2f,", 100.0 * 55503 / 66203, 100.0 * 55503 / 66203);
  EXPECT_NE(csv.find(pct), std::string::npos) << pct << "\n" << csv;
  analysis::Params layer;
  layer.set("top", "0");
  csv = render(t, *analysis::find_analysis("op_stats"), layer);
  EXPECT_NE(csv.find("\naten::conv2d,10,11919.3660,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\naten::relu_,14,0.5700,"), std::string::npos) << csv;
}
#endif

}  // namespace
}  // namespace strata::testing
