// `strata record --sample` on a program whose CPU time splits 60/30/10% over three functions: the
// profile's shares must match within 3 points, with frame-pointer callchains and with DWARF
// unwinding (the program built with and without frame pointers), and when perf_event is refused
// (seccomp) the timer fallback must be used and named by `record` and `strata info`.
#include <gtest/gtest.h>

#include "sample_test_util.h"

namespace strata::testing {
namespace {

// Shares are asserted only with enough samples for 3 points to be a fair bound (sd of a 60% share
// over 600 independent samples is 2 points; the periodic task clock does better than that).
constexpr uint64_t kMinSamples = 600;

struct Expect {
  const char* function;
  double share;
};

void record(const std::string& args, const std::string& program, const std::string& out_path, std::string* output) {
  const std::string cmd = strata_tool() + " record --quiet " + args + " -o " + out_path + " -- " + bin(program);
  ASSERT_EQ(run_command(cmd, output), 0) << cmd << "\n" << *output;
}

void expect_shares(const std::string& trace_path, bool total, std::initializer_list<Expect> expected) {
  Shares s = function_shares(trace_path);
  ASSERT_GT(s.samples, 0u) << trace_path;
  if (s.samples < kMinSamples)
    GTEST_SKIP() << "only " << s.samples << " samples (the machine gave the program too little CPU time)";
  for (const Expect& e : expected) {
    const double got = (total ? s.total : s.self)[e.function];
    EXPECT_NEAR(got, e.share, 3.0) << e.function << (total ? " total" : " self") << " share over " << s.samples
                                   << " samples";
  }
}

TEST(SampleShares, FramePointerLeafShares) {
  TempDir dir;
  std::string output;
  record("--sample", "strata_burn_fp leaf 1.2", dir.file("t.strata"), &output);
  expect_shares(dir.file("t.strata"), false, {{"leaf_sixty", 60}, {"leaf_thirty", 30}, {"leaf_ten", 10}});
}

TEST(SampleShares, DwarfLeafSharesWithoutFramePointers) {
  TempDir dir;
  std::string output;
  record("--sample --unwind dwarf", "strata_burn_nofp leaf 1.2", dir.file("t.strata"), &output);
  expect_shares(dir.file("t.strata"), false, {{"leaf_sixty", 60}, {"leaf_thirty", 30}, {"leaf_ten", 10}});
}

// The three callers share one leaf: only the callers' total shares tell them apart. DWARF unwinding
// recovers them on a binary without frame pointers (GCC omits the leaf's frame pointer anyway).
TEST(SampleShares, DwarfRecoversCallersOfALeaf) {
  TempDir dir;
  std::string output;
  record("--sample --unwind dwarf", "strata_burn_nofp callers 1.2", dir.file("t.strata"), &output);
  expect_shares(dir.file("t.strata"), true,
                {{"spin", 100}, {"main", 100}, {"call_sixty", 60}, {"call_thirty", 30}, {"call_ten", 10}});
}

TEST(SampleShares, RecordAndInfoNameTheTimerFallbackWhenPerfEventIsRefused) {
  TempDir dir;
  std::string output;
  const std::string cmd = bin("strata_deny_perf_event") + " " + strata_tool() + " record --sample -o " +
                          dir.file("t.strata") + " -- " + bin("strata_burn_fp") + " leaf 1.2";
  ASSERT_EQ(run_command(cmd, &output), 0) << output;
  EXPECT_NE(output.find("sampling: timer_create(CLOCK_THREAD_CPUTIME_ID)"), std::string::npos) << output;
  std::string info;
  ASSERT_EQ(run_command(strata_tool() + " info " + dir.file("t.strata"), &info), 0) << info;
  EXPECT_NE(info.find("sampling: timer_create(CLOCK_THREAD_CPUTIME_ID)"), std::string::npos) << info;
  EXPECT_NE(info.find("perf_event"), std::string::npos) << info;  // why the fallback: perf_event refused
  // CPU-time timers fire at the kernel tick (250 Hz here): ~300 samples for 1.2 s; the shares still
  // hold, with the tolerance scaled to what so few samples allow.
  Shares s = function_shares(dir.file("t.strata"));
  ASSERT_GT(s.samples, 50u) << info;
  if (s.samples >= 250) {
    EXPECT_NEAR(s.self["leaf_sixty"], 60, 8) << s.samples << " samples";
    EXPECT_NEAR(s.self["leaf_ten"], 10, 6) << s.samples << " samples";
  }
}

}  // namespace
}  // namespace strata::testing
