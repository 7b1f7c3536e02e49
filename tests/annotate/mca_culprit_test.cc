// llvm-mca's summary view parsed from recorded output (llvm-mca 14, -mcpu=skylake), the assembly it
// is given, culprit ranking on fixed block costs, and the tables: cycle columns only with a cost
// model, PMU columns absent (not zero) without PMU events.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "annotate/annotate.h"
#include "annotate/mca.h"

namespace strata::annotate {
namespace {

std::string read_data(const std::string& name) {
  std::ifstream in(std::string(STRATA_SOURCE_DIR) + "/tests/annotate/data/" + name);
  std::stringstream s;
  s << in.rdbuf();
  EXPECT_FALSE(s.str().empty()) << name;
  return s.str();
}

TEST(McaOutput, RegionsOfRecordedOutput) {
  std::map<std::string, BlockCost> regions;
  std::string error;
  ASSERT_TRUE(parse_mca_output(read_data("llvm_mca_14_summary.txt"), &regions, &error)) << error;
  ASSERT_EQ(regions.size(), 2u);
  EXPECT_EQ(regions["b0"].iterations, 100u);
  EXPECT_EQ(regions["b0"].total_cycles, 503u);
  EXPECT_DOUBLE_EQ(regions["b0"].block_rthroughput, 0.7);
  EXPECT_DOUBLE_EQ(regions["b0"].cycles_per_iteration(), 5.03);
  EXPECT_EQ(regions["b1"].total_cycles, 434u);
  EXPECT_DOUBLE_EQ(regions["b1"].block_rthroughput, 1.3);
}

TEST(McaOutput, AllViewsWithoutRegionMarkers) {
  std::map<std::string, BlockCost> regions;
  std::string error;
  ASSERT_TRUE(parse_mca_output(read_data("llvm_mca_14_all_views_no_regions.txt"), &regions, &error)) << error;
  ASSERT_EQ(regions.size(), 1u);
  EXPECT_EQ(regions[""].total_cycles, 403u);
  EXPECT_DOUBLE_EQ(regions[""].cycles_per_iteration(), 4.03);
}

TEST(McaOutput, ErrorsAreOneLine) {
  std::map<std::string, BlockCost> regions;
  std::string error;
  EXPECT_FALSE(parse_mca_output("in.s:6:1: error: invalid operand for instruction\n", &regions, &error));
  EXPECT_NE(error.find("no summary"), std::string::npos) << error;
  EXPECT_FALSE(parse_mca_output("Iterations: 100\nTotal Cycles: lots\n", &regions, &error));
  EXPECT_NE(error.find("line 2"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos);
}

TEST(McaInput, TargetsBecomeASymbolAndBadBytesAreLeftOut) {
  Instruction load{0x10, 4, "mov", "rax, qword ptr [rdi + rax*8]", Flow::kNext, std::nullopt, true};
  Instruction branch{0x14, 2, "jne", "0x10", Flow::kConditional, 0x10, true};
  Instruction bad{0x16, 1, "(bad)", "", Flow::kStop, std::nullopt, false};
  std::vector<std::vector<Instruction>> blocks{{load, branch}, {bad}};
  const std::string text = mca_input(blocks);
  EXPECT_EQ(
      text,
      ".intel_syntax noprefix\n# LLVM-MCA-BEGIN b0\nmov rax, qword ptr [rdi + rax*8]\njne strata_target\n"
      "# LLVM-MCA-END\n# LLVM-MCA-BEGIN b1\n# LLVM-MCA-END\n");
}

BlockRow row(uint64_t samples, std::optional<double> cycles, uint64_t start) {
  BlockRow r;
  r.samples = samples;
  r.cycles = cycles;
  r.start = start;
  return r;
}

TEST(Culprits, ExcessOverTheLeastStalledBlock) {
  // F = 100/4 = 25 (reference), 900/5 = 180 (ratio 7.2, excess 775), 60/2 = 30 (ratio 1.2),
  // 3 samples (too few to be the reference: F = 1.5), no cycles (skipped).
  std::vector<BlockRow> rows{row(100, 4.0, 0), row(900, 5.0, 16), row(60, 2.0, 32), row(3, 2.0, 48),
                             row(50, std::nullopt, 64)};
  std::optional<double> f0;
  rank_culprits(&rows, AnnotateOptions{}, &f0);
  ASSERT_TRUE(f0.has_value());
  EXPECT_DOUBLE_EQ(*f0, 25.0);
  EXPECT_EQ(rows[1].culprit_rank, 1u);
  EXPECT_DOUBLE_EQ(*rows[1].excess, 900 - 25.0 * 5);
  EXPECT_DOUBLE_EQ(*rows[1].stall_ratio, 7.2);
  EXPECT_EQ(rows[0].culprit_rank, 0u);
  EXPECT_EQ(rows[2].culprit_rank, 0u);  // ratio 1.2: not a culprit
  EXPECT_EQ(rows[3].culprit_rank, 0u);  // below F0: negative excess
  EXPECT_FALSE(rows[4].frequency.has_value());
  EXPECT_EQ(rows[4].culprit_rank, 0u);
}

TEST(Culprits, RankedByExcessNotRatio) {
  // A cold block with a high ratio (40 samples over 1 cycle) ranks below a hot one with more excess.
  std::vector<BlockRow> rows{row(100, 10.0, 0), row(40, 1.0, 16), row(600, 10.0, 32)};
  std::optional<double> f0;
  rank_culprits(&rows, AnnotateOptions{}, &f0);
  EXPECT_EQ(rows[2].culprit_rank, 1u);
  EXPECT_EQ(rows[1].culprit_rank, 2u);
}

TEST(Culprits, NoReferenceWithoutEnoughSamples) {
  std::vector<BlockRow> rows{row(2, 4.0, 0), row(3, 5.0, 16)};
  std::optional<double> f0;
  rank_culprits(&rows, AnnotateOptions{}, &f0);
  EXPECT_FALSE(f0.has_value());
  EXPECT_EQ(rows[0].culprit_rank + rows[1].culprit_rank, 0u);
}

// A cost model with fixed answers: the culprit logic without llvm-mca.
class FixedCosts : public CostModel {
 public:
  explicit FixedCosts(std::vector<std::optional<double>> cycles) : cycles_(std::move(cycles)) {}
  bool estimate(std::span<const std::vector<Instruction>> blocks,
                std::vector<std::optional<BlockCost>>* costs, std::vector<std::string>*,
                std::string*) override {
    costs->assign(blocks.size(), std::nullopt);
    for (size_t b = 0; b < blocks.size() && b < cycles_.size(); ++b)
      if (cycles_[b]) (*costs)[b] = BlockCost{100, static_cast<uint64_t>(*cycles_[b] * 100), 1.0};
    return true;
  }
  std::string describe() const override { return "fixed"; }

 private:
  std::vector<std::optional<double>> cycles_;
};

// Two loops: 0x1000: mov rax,[rdi+rax*8] ; sub rdx,1 ; jne 0x1000 (a load chain) and
// 0x100a: imul rax,rax,3 ; sub rdx,1 ; jne 0x100a, then ret.
FunctionSamples two_loops() {
  FunctionSamples f;
  f.function = "two_loops";
  f.module_path = "/test/two_loops";
  f.address = 0x1000;
  f.bytes = std::string(
      "\x48\x8b\x04\xc7\x48\x83\xea\x01\x75\xf6"
      "\x48\x6b\xc0\x03\x48\x83\xea\x01\x75\xf6\xc3",
      21);
  f.events = {"task-clock"};
  f.samples[0x1000] = {700};  // the load
  f.samples[0x1004] = {100};
  f.samples[0x100a] = {150};
  f.samples[0x100e] = {50};
  f.samples[0x1001] = {5};  // inside the load: counted, and noted
  return f;
}

TEST(Annotate, RanksTheLoadLoopAndLeavesPmuColumnsAbsent) {
  auto disassembler = make_capstone_disassembler();
  FixedCosts costs({5.0, 4.0, 1.0});
  Annotation a;
  std::string error;
  ASSERT_TRUE(annotate_function(two_loops(), *disassembler, &costs, AnnotateOptions{}, &a, &error)) << error;
  ASSERT_EQ(a.blocks.size(), 3u);
  EXPECT_EQ(a.samples, 1005u);
  EXPECT_EQ(a.samples_off_boundary, 5u);
  EXPECT_EQ(a.rows[0].samples, 805u);
  EXPECT_EQ(a.rows[1].samples, 200u);
  EXPECT_EQ(a.rows[0].culprit_rank, 1u);
  EXPECT_FALSE(a.rows[0].cache_misses.has_value());
  auto tables = annotation_tables(a);
  ASSERT_EQ(tables.size(), 2u);
  const table::Table& blocks = tables[0];
  ASSERT_EQ(blocks.columns.size(), 13u);
  EXPECT_EQ(blocks.columns[7], "static_cycles");
  EXPECT_EQ(blocks.columns[11], "cache_misses");
  // Culprits first; the PMU cells are empty (absent), not 0.
  EXPECT_EQ(std::get<int64_t>(blocks.rows[0][0].value), 1);
  EXPECT_EQ(std::get<std::string>(blocks.rows[0][2].value), "0x1000");
  EXPECT_TRUE(std::holds_alternative<std::monostate>(blocks.rows[0][11].value));
  EXPECT_TRUE(std::holds_alternative<std::monostate>(blocks.rows[0][12].value));
  bool noted = false;
  for (const std::string& n : blocks.notes) noted |= n.find("absent, not zero") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(tables[1].rows.size(), a.instructions.size());
}

TEST(Annotate, PmuEventsAreCountedPerBlock) {
  FunctionSamples f = two_loops();
  f.events = {"task-clock", "cache-misses", "branch-misses"};
  f.samples[0x1000] = {700, 40, 0};
  f.samples[0x100e] = {50, 0, 3};
  auto disassembler = make_capstone_disassembler();
  Annotation a;
  std::string error;
  ASSERT_TRUE(annotate_function(f, *disassembler, nullptr, AnnotateOptions{}, &a, &error)) << error;
  EXPECT_EQ(a.rows[0].cache_misses, 40u);
  EXPECT_EQ(a.rows[1].branch_misses, 3u);
  EXPECT_EQ(a.rows[2].cache_misses, 0u);  // measured and none: zero, not absent
  // Without a cost model: no cycle columns.
  const table::Table blocks = annotation_tables(a)[0];
  EXPECT_EQ(blocks.columns.size(), 8u);
  for (const std::string& c : blocks.columns) EXPECT_NE(c, "static_cycles");
}

}  // namespace
}  // namespace strata::annotate

namespace strata::annotate {
namespace {

// llvm-mca itself on the two loops (skipped where it is not installed): every block gets a cost,
// and the load chain costs at least a cycle per pass.
TEST(LlvmMca, EstimatesEveryBlock) {
  if (access("/usr/bin/llvm-mca-14", X_OK) != 0 && access("/usr/bin/llvm-mca", X_OK) != 0)
    GTEST_SKIP() << "llvm-mca not installed (apt-get install llvm-14)";
  auto disassembler = make_capstone_disassembler();
  LlvmMcaOptions options;
  options.mcpu = "skylake";
  auto mca = make_llvm_mca(options);
  Annotation a;
  std::string error;
  ASSERT_TRUE(annotate_function(two_loops(), *disassembler, mca.get(), AnnotateOptions{}, &a, &error))
      << error;
  ASSERT_TRUE(a.have_costs) << (a.notes.empty() ? "" : a.notes.back());
  for (const BlockRow& r : a.rows) ASSERT_TRUE(r.cycles.has_value()) << "block " << r.block;
  EXPECT_GE(*a.rows[0].cycles, 1.0);
  EXPECT_NE(a.cost_model.find("-mcpu=skylake"), std::string::npos);
}

TEST(LlvmMca, MissingProgramIsOneNoteAndNoCycleColumns) {
  auto disassembler = make_capstone_disassembler();
  LlvmMcaOptions options;
  options.program = "/nonexistent/llvm-mca";
  auto mca = make_llvm_mca(options);
  Annotation a;
  std::string error;
  ASSERT_TRUE(annotate_function(two_loops(), *disassembler, mca.get(), AnnotateOptions{}, &a, &error))
      << error;
  EXPECT_FALSE(a.have_costs);
  bool noted = false;
  for (const std::string& n : a.notes) noted |= n.find("llvm-mca not found") != std::string::npos;
  EXPECT_TRUE(noted);
  const auto tables = annotation_tables(a);  // kept: a range-for over a temporary's member dangles
  for (const std::string& c : tables[0].columns) EXPECT_NE(c, "static_cycles");
}

}  // namespace
}  // namespace strata::annotate
