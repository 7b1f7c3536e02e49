// Cross-rank analyses on a hand-built two-rank trace with known answers (times in us).
#include <gtest/gtest.h>

#include "analysis/analysis.h"
#include "trace/span_tree.h"

namespace strata::testing {
namespace {

void add(trace::Trace& t, uint16_t process, const char* name, ActivityType type, uint32_t stream,
         int64_t start_us, int64_t end_us) {
  SpanRecord s;
  s.span_id = t.spans.size() + 1;
  s.process = process;
  s.name = t.strings.intern(name);
  s.start_ns = start_us * 1000, s.end_ns = end_us * 1000;
  s.stream = stream, s.device = 0;
  s.level = static_cast<uint8_t>(Level::kDevice);
  s.kind = static_cast<uint8_t>(SpanKind::kExecution);
  s.activity = static_cast<uint8_t>(type);
  t.add_span(s);
}

trace::Trace two_ranks() {
  trace::Trace t;
  for (int r = 0; r < 2; ++r) {
    trace::Process p;
    p.pid = 10 + r;
    p.host = "node" + std::to_string(r);
    p.properties.set_int("rank", r);
    t.add_process(std::move(p));
  }
  // Rank 0: kernel 0-100, allreduce 50-150 (under the kernel 50-100), copy 140-200, idle 200-300,
  // kernel 300-400, idle 400-500, allreduce 500-520. Window 520: compute 200, communication 70,
  // memcpy 50, idle 200; 50 of the 120 us of communication overlapped by compute.
  add(t, 0, "k", ActivityType::kKernel, 7, 0, 100);
  add(t, 0, "ncclAllReduce", ActivityType::kCollective, 9, 50, 150);
  add(t, 0, "copy", ActivityType::kMemcpyHtoD, 8, 140, 200);
  add(t, 0, "k", ActivityType::kKernel, 7, 300, 400);
  add(t, 0, "ncclAllReduce", ActivityType::kCollective, 9, 500, 520);
  // Rank 1 starts the first allreduce late (at 90: rank 0 waits 40 us) and the second early (480).
  add(t, 1, "ncclAllReduce", ActivityType::kCollective, 9, 90, 150);
  add(t, 1, "ncclAllReduce", ActivityType::kCollective, 9, 480, 520);
  return t;
}

analysis::AnalysisResult run(const trace::Trace& t, const char* name) {
  analysis::Params params;
  return analysis::find_analysis(name)->run({t, t.tree(), params});
}

double real(const analysis::Cell& c) { return std::get<double>(c.value); }
int64_t integer(const analysis::Cell& c) { return std::get<int64_t>(c.value); }

TEST(RankAnalyses, BreakdownKnownAnswers) {
  const trace::Trace t = two_ranks();
  const auto r = run(t, "rank_breakdown");
  ASSERT_FALSE(r.missing_input);
  const auto& rows = r.tables.at(0).rows;
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(integer(rows[0][0]), 0);
  EXPECT_EQ(std::get<std::string>(rows[0][1].value), "node0");
  EXPECT_DOUBLE_EQ(real(rows[0][2]), 0.520);  // window 0-520 us, in ms
  EXPECT_DOUBLE_EQ(real(rows[0][3]), 0.200);  // compute
  EXPECT_DOUBLE_EQ(real(rows[0][4]), 0.070);  // communication 100-150 (over the copy) and 500-520
  EXPECT_DOUBLE_EQ(real(rows[0][5]), 0.050);  // memcpy 150-200
  EXPECT_DOUBLE_EQ(real(rows[0][6]), 0.200);  // idle 200-300, 400-500
  EXPECT_NEAR(real(rows[0][11]), 100.0 * 50 / 120, 1e-9);  // comm 50-150 and 500-520; 50 under a kernel
}

TEST(RankAnalyses, CollectiveWaitKnownAnswers) {
  const trace::Trace t = two_ranks();
  const auto r = run(t, "collective_wait");
  ASSERT_FALSE(r.missing_input);
  const auto& calls = r.tables.at(0).rows;
  ASSERT_EQ(calls.size(), 2u);
  // Sorted by max wait: call 0 (rank 1 late by 40 us) before call 1 (rank 0 late by 20 us).
  EXPECT_EQ(integer(calls[0][1]), 0);
  EXPECT_EQ(integer(calls[0][4]), 1);
  EXPECT_DOUBLE_EQ(real(calls[0][5]), 40);
  EXPECT_DOUBLE_EQ(real(calls[0][6]), 20);
  EXPECT_DOUBLE_EQ(real(calls[0][7]), 60);
  EXPECT_DOUBLE_EQ(real(calls[0][8]), 100);
  EXPECT_EQ(integer(calls[1][4]), 0);
  EXPECT_DOUBLE_EQ(real(calls[1][5]), 20);
  const auto& ranking = r.tables.at(1).rows;
  ASSERT_EQ(ranking.size(), 2u);
  EXPECT_EQ(integer(ranking[0][0]), 1);  // rank 1 caused 40 us of waiting, rank 0 20 us
  EXPECT_DOUBLE_EQ(real(ranking[0][3]), 0.040);
  EXPECT_DOUBLE_EQ(real(ranking[0][4]), 0.020);
}

TEST(RankAnalyses, NoRanksSaysWhatToDo) {
  trace::Trace t;
  t.add_process({});
  add(t, 0, "k", ActivityType::kKernel, 7, 0, 100);
  EXPECT_TRUE(run(t, "rank_breakdown").missing_input);
  EXPECT_TRUE(run(t, "collective_wait").missing_input);
}

}  // namespace
}  // namespace strata::testing
