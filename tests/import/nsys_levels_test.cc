// NVTX ranges at the model or layer level (import/nsys_nvtx_levels.h): hand cases, random properly
// nested ranges against a brute-force reading of the rule, and the real exports (every range counted
// at one level, the stats equal to SQL counts); the nsys gaps of issue 16 on copies of the real files
// changed by SQL: OS runtime calls counted, an unknown schema counted, cluster dimensions kept.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/attr_keys.h"
#include "core/level.h"
#include "import/importer.h"
#include "import/nsys_nvtx_levels.h"
#include "trace/trace.h"
#include "trace/trace_reader.h"

namespace strata::import {
namespace {

std::vector<NvtxRange> ranges(
    std::initializer_list<std::tuple<int64_t, int64_t, int64_t, const char*>> rows) {
  std::vector<NvtxRange> out;
  for (const auto& [start, end, thread, name] : rows) out.push_back({start, end, thread, name});
  return out;
}

TEST(NvtxLevels, StepNames) {
  for (const char* name : {"ProfilerStep#3", "train_step", "Train_Step 12", "iteration-5", "step", "iter:7",
                           "batch 4", "validation_step", "STEP"})
    EXPECT_TRUE(is_step_range_name(name)) << name;
  for (const char* name : {"optimizer.step", "forward", "stepper", "MPI_Send", "train", "linear_step_fn", ""})
    EXPECT_FALSE(is_step_range_name(name)) << name;
}

TEST(NvtxLevels, HandCases) {
  // Steps and the range around them are model; ranges inside a step are layers.
  auto a = ranges({{0, 100, 1, "training"},
                   {0, 40, 1, "step#0"},
                   {5, 20, 1, "forward"},
                   {50, 90, 1, "step#1"},
                   {60, 70, 1, "linear"}});
  EXPECT_EQ(nvtx_model_level(a), (std::vector<bool>{true, true, false, true, false}));
  // No step names: the one range enclosing all others on its thread is model; another thread's
  // flat ranges are all layers.
  auto b = ranges({{0, 100, 1, "run"},
                   {10, 20, 1, "conv"},
                   {30, 40, 1, "relu"},
                   {0, 5, 2, "MPI_Send"},
                   {6, 9, 2, "MPI_Recv"}});
  EXPECT_EQ(nvtx_model_level(b), (std::vector<bool>{true, false, false, false, false}));
  // A lone range encloses nothing: layer. Two roots: no model range. Ranges without an end: layer.
  auto c = ranges({{0, 10, 1, "only"}, {0, 10, 2, "a"}, {20, 30, 2, "b"}, {22, 25, 2, "c"}});
  EXPECT_EQ(nvtx_model_level(c), (std::vector<bool>{false, false, false, false}));
  std::vector<NvtxRange> d = {{0, std::nullopt, 1, "step"}, {1, 2, 1, "x"}};
  EXPECT_EQ(nvtx_model_level(d), (std::vector<bool>{false, false}));
}

// Brute force over pairs: encloses(a, b) on the same thread (equal intervals: the earlier row).
std::vector<bool> reference(const std::vector<NvtxRange>& r) {
  auto encloses = [&](size_t a, size_t b) {
    if (a == b || r[a].thread != r[b].thread) return false;
    if (*r[a].start == *r[b].start && *r[a].end == *r[b].end) return a < b;
    return *r[a].start <= *r[b].start && *r[b].end <= *r[a].end;
  };
  std::vector<bool> model(r.size(), false);
  for (size_t i = 0; i < r.size(); ++i) {
    if (is_step_range_name(r[i].name)) model[i] = true;
    for (size_t j = 0; j < r.size(); ++j)
      if (is_step_range_name(r[j].name) && encloses(i, j)) model[i] = true;
  }
  for (size_t i = 0; i < r.size(); ++i) {
    bool thread_has_step = false, all = true;
    size_t others = 0;
    for (size_t j = 0; j < r.size(); ++j) {
      if (r[j].thread != r[i].thread) continue;
      thread_has_step = thread_has_step || is_step_range_name(r[j].name);
      if (j == i) continue;
      ++others;
      all = all && encloses(i, j);
    }
    if (!thread_has_step && others > 0 && all) model[i] = true;
  }
  return model;
}

// Properly nested ranges, as push/pop makes them: children split their parent's interval, siblings
// apart (ranges that only touch would enclose a zero-length neighbour from both sides).
void nest(std::mt19937& rng, std::vector<NvtxRange>* out, int64_t thread, int64_t lo, int64_t hi, int depth) {
  static const char* const kNames[] = {"step#1", "forward", "linear", "iteration 2", "relu", "run"};
  std::uniform_int_distribution<int> children(0, depth > 2 ? 0 : 3), name(0, 5);
  int64_t at = lo;
  for (int k = children(rng); k > 0 && at < hi; --k) {
    std::uniform_int_distribution<int64_t> len(1, hi - at);
    const int64_t end = at + len(rng);
    out->push_back({at, end, thread, kNames[name(rng)]});
    nest(rng, out, thread, at, end, depth + 1);
    at = end + 1;
  }
}

TEST(NvtxLevels, RandomNestedRangesMatchTheBruteForceRule) {
  std::mt19937 rng(16);
  for (int round = 0; round < 300; ++round) {
    std::vector<NvtxRange> r;
    for (int64_t thread = 1; thread <= 3; ++thread) nest(rng, &r, thread, 0, 1000, 0);
    std::shuffle(r.begin(), r.end(), rng);
    ASSERT_EQ(nvtx_model_level(r), reference(r)) << "round " << round;
  }
}

// --- the real exports --------------------------------------------------------------------------

std::string data_path(const char* file) {
  return std::string(STRATA_SOURCE_DIR) + "/tests/data/nsys/" + file;
}

int64_t sql_int(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  int64_t v = -1;
  if (sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK) {
    sqlite3_stmt* s = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
      v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return v;
}

trace::Trace open(const std::string& path) {
  register_readers();
  trace::Trace t;
  std::string error;
  EXPECT_TRUE(trace::open_trace(path, &t, &error)) << error;
  return t;
}

TEST(NsysGaps, RealExportsCountNvtxLevelsAndOsRuntimeCalls) {
  for (const char* file :
       {"a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite", "a100_cloverleaf_nsys2024.5_schema3.13.2.sqlite",
        "h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite"}) {
    const std::string path = data_path(file);
    if (!std::filesystem::exists(path)) GTEST_SKIP() << "missing " << path;
    const trace::Trace t = open(path);
    const int64_t ranges =
        std::max<int64_t>(0, sql_int(path, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)"));
    const int64_t osrt = std::max<int64_t>(0, sql_int(path, "SELECT COUNT(*) FROM OSRT_API"));
    const uint64_t model = t.stat(stats::Stat::kImportNsysNvtxModelRanges);
    const uint64_t layer = t.stat(stats::Stat::kImportNsysNvtxLayerRanges);
    EXPECT_EQ(static_cast<int64_t>(model + layer), ranges) << file;
    EXPECT_EQ(static_cast<int64_t>(t.stat(stats::Stat::kImportNsysOsrtUntyped)), osrt) << file;
    EXPECT_EQ(t.stat(stats::Stat::kImportNsysUnknownSchema), 0u) << file;
    // These programs push ranges per call (MPI, nvFuser's compiler passes) and none encloses all the
    // others of its thread: every range is a layer.
    EXPECT_EQ(model, 0u) << file;
    uint64_t layer_spans = 0;
    for (const SpanRecord& s : t.spans)
      layer_spans +=
          s.activity_type() == ActivityType::kAnnotation && s.level == static_cast<uint8_t>(Level::kLayer);
    EXPECT_EQ(layer_spans, layer) << file;
  }
}

// A copy of a real export, changed by SQL.
class ChangedNsys : public ::testing::Test {
 protected:
  void copy(const char* file) {
    const std::string src = data_path(file);
    if (!std::filesystem::exists(src)) GTEST_SKIP() << "missing " << src;
    path_ = (std::filesystem::temp_directory_path() /
             ("strata_nsys_gaps_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".sqlite"))
                .string();
    std::filesystem::copy_file(src, path_, std::filesystem::copy_options::overwrite_existing);
    std::filesystem::permissions(path_, std::filesystem::perms::owner_write,
                                 std::filesystem::perm_options::add);
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  void exec(const std::string& sql) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    char* msg = nullptr;
    EXPECT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &msg), SQLITE_OK) << (msg ? msg : "");
    sqlite3_free(msg);
    sqlite3_close(db);
  }
  std::string path_;
};

TEST_F(ChangedNsys, AStepRangeAroundTheRunIsModelLevelAndNestsItsLaunches) {
  copy("a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite");
  exec(
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT MIN(start) - 1, MAX(end) + 1, "
      "59, "
      "'train_step', globalTid FROM NVTX_EVENTS WHERE eventType = 59 GROUP BY globalTid");
  const trace::Trace t = open(path_);
  EXPECT_EQ(t.stat(stats::Stat::kImportNsysNvtxModelRanges), 1u);
  EXPECT_EQ(t.stat(stats::Stat::kImportNsysNvtxLayerRanges), 22u);
  size_t step = SIZE_MAX;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.name(t.spans[i]) == "train_step") step = i;
  ASSERT_NE(step, SIZE_MAX);
  EXPECT_EQ(t.spans[step].level, static_cast<uint8_t>(Level::kModel));
  // The layer ranges (saxpy, MPI_*) hang under the step.
  uint64_t under = 0;
  for (size_t i = 0; i < t.spans.size(); ++i)
    if (t.spans[i].level == static_cast<uint8_t>(Level::kLayer) &&
        t.tree().parent(i) == static_cast<int32_t>(step))
      ++under;
  EXPECT_EQ(under, 22u);
}

TEST_F(ChangedNsys, OneRangeEnclosingAllOthersIsModelLevel) {
  copy("a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite");
  exec(
      "INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid) SELECT MIN(start) - 1, MAX(end) + 1, "
      "59, "
      "'main', globalTid FROM NVTX_EVENTS WHERE eventType = 59 GROUP BY globalTid");
  const trace::Trace t = open(path_);
  EXPECT_EQ(t.stat(stats::Stat::kImportNsysNvtxModelRanges), 1u);
  EXPECT_EQ(t.stat(stats::Stat::kImportNsysNvtxLayerRanges), 22u);
}

// Ranges that PyTorch's emit_nvtx named ("aten::mm, seq = N, op_id = M, sizes = [...]") become spans
// named by the op, with the call's details as attributes (core/torch_nvtx_names.h).
TEST_F(ChangedNsys, PyTorchEmitNvtxNamesBecomeTheOpAndAttributes) {
  copy("a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite");
  exec(
      "UPDATE NVTX_EVENTS SET text = 'aten::mm, seq = ' || rowid || ', op_id = 7, sizes = [[32, 256], [256, 10]], "
      "input_op_ids = [(0,-1), (3,0)]' WHERE eventType = 59");
  const int64_t ranges = sql_int(path_, "SELECT COUNT(*) FROM NVTX_EVENTS WHERE eventType = 59");
  ASSERT_GT(ranges, 0);
  const trace::Trace t = open(path_);
  int64_t named = 0;
  std::set<std::string> sequence_numbers;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    if (t.name(t.spans[i]) != "aten::mm") continue;
    ++named;
    EXPECT_EQ(t.spans[i].level, static_cast<uint8_t>(Level::kLayer));
    auto text = [&](std::string_view key) {
      std::optional<AttrRecord> a = t.find_attr(i, key);
      return a ? t.attr_value_string(*a) : std::string("<missing>");
    };
    EXPECT_EQ(text("op_id"), "7");
    EXPECT_EQ(text("shapes"), "[[32, 256], [256, 10]]");
    EXPECT_EQ(text("input_op_ids"), "[(0,-1), (3,0)]");
    sequence_numbers.insert(text("sequence_nr"));
  }
  EXPECT_EQ(named, ranges);
  EXPECT_EQ(static_cast<int64_t>(sequence_numbers.size()), ranges);  // one per call, kept per span
}

TEST_F(ChangedNsys, UnknownSchemaVersionIsCountedAndImported) {
  copy("a100_saxpy_mpi_nsys2022.2_schema2.9.1.sqlite");
  exec("UPDATE EXPORT_META_DATA SET value = '4' WHERE name = 'EXPORT_SCHEMA_VERSION_MAJOR'");
  const trace::Trace t = open(path_);
  EXPECT_EQ(t.stat(stats::Stat::kImportNsysUnknownSchema), 1u);
  uint64_t kernels = 0;
  for (const SpanRecord& s : t.spans) kernels += s.activity_type() == ActivityType::kKernel;
  EXPECT_EQ(static_cast<int64_t>(kernels), sql_int(path_, "SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
}

// The shared exports predate CUPTI's cluster columns; a schema that has them (clusterX/Y/Z) gives the
// canonical cluster_x/y/z attributes.
TEST_F(ChangedNsys, ClusterDimensionsBecomeKernelAttributes) {
  copy("h100_nvfuser_matmul_nsys2024.6_schema3.16.1.sqlite");
  exec(
      "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN clusterX INTEGER; "
      "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN clusterY INTEGER; "
      "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL ADD COLUMN clusterZ INTEGER; "
      "UPDATE CUPTI_ACTIVITY_KIND_KERNEL SET clusterX = 2, clusterY = 1, clusterZ = 1 WHERE shortName IN "
      "(SELECT id FROM StringIds WHERE value LIKE 'nvfuser%')");
  const trace::Trace t = open(path_);
  uint64_t clustered = 0;
  for (size_t i = 0; i < t.spans.size(); ++i) {
    const auto x = t.find_attr(i, attr_keys::kClusterX);
    if (!x) continue;
    ++clustered;
    EXPECT_EQ(t.attr_value_string(*x), "2");
    EXPECT_EQ(t.attr_value_string(*t.find_attr(i, attr_keys::kClusterZ)), "1");
    EXPECT_NE(t.name(t.spans[i]).find("nvfuser"), std::string_view::npos);
  }
  EXPECT_EQ(clustered, 1u);
}

}  // namespace
}  // namespace strata::import
