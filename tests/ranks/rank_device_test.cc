// idle_time, comm_overlap and queue_length against brute-force references that walk a 1 us grid
// over the generated ranks (rank_gen.h), and known answers on a hand-built stream.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "rank_gen.h"
#include "trace/span_tree.h"

namespace strata::testing {
namespace {

using Key = std::pair<int64_t, uint32_t>;  // (owner, stream)

int64_t owner_of_row(const analysis::Cell& rank, int ranks) {
  return has_rank(rank) ? std::get<int64_t>(rank.value) : -1 - ranks;
}

std::map<Key, std::vector<const GenWork*>> by_stream(const GenTrace& g) {
  std::map<Key, std::vector<const GenWork*>> out;
  for (const GenWork& w : g.work) out[{w.owner, w.stream}].push_back(&w);
  return out;
}

struct IdleRef {
  int64_t idle = 0, host = 0, kernel = 0, other = 0, busy = 0, window = 0;
  std::set<int64_t> gaps;  // gap starts
};

// Each uncovered microsecond belongs to the gap that ends at the next start; the gap starts at the
// latest end before it. Classified as the analysis must: host wait when that next work's launch
// started after the gap began, else kernel wait below the threshold, else other.
IdleRef idle_reference(const std::vector<const GenWork*>& work, int64_t kernel_wait_us) {
  IdleRef r;
  int64_t lo = INT64_MAX, hi = INT64_MIN;
  for (const GenWork* w : work) lo = std::min(lo, w->start), hi = std::max(hi, w->end);
  r.window = hi - lo;
  for (int64_t t = lo; t < hi; ++t) {
    bool covered = false;
    int64_t gap_start = INT64_MIN;
    const GenWork* next = nullptr;
    for (const GenWork* w : work) {
      covered = covered || (w->start <= t && t < w->end);
      if (w->end <= t) gap_start = std::max(gap_start, w->end);
      if (w->start > t && (!next || w->start < next->start)) next = w;
    }
    if (covered) {
      ++r.busy;
      continue;
    }
    ++r.idle;
    r.gaps.insert(gap_start);
    const int64_t gap = next->start - gap_start;
    if (next->linked && next->call_start > gap_start)
      ++r.host;
    else if (gap < kernel_wait_us)
      ++r.kernel;
    else
      ++r.other;
  }
  return r;
}

void check_idle(const GenTrace& g, int ranks, double kernel_wait_us) {
  analysis::Params params;
  params.set("kernel_wait_us", std::to_string(kernel_wait_us));
  const auto result = run_analysis(g.trace, "idle_time", params);
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  const analysis::Table& t = table_named(result, "idle_time");
  const auto streams = by_stream(g);
  ASSERT_EQ(t.rows.size(), streams.size());
  for (const auto& row : t.rows) {
    const Key key{owner_of_row(row[0], ranks), static_cast<uint32_t>(num(row[column(t, "stream")]))};
    ASSERT_TRUE(streams.count(key)) << key.first << "/" << key.second;
    const IdleRef ref = idle_reference(streams.at(key), static_cast<int64_t>(kernel_wait_us));
    SCOPED_TRACE("owner " + std::to_string(key.first) + " stream " + std::to_string(key.second));
    EXPECT_NEAR(num(row[column(t, "window_ms")]), ref.window / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "busy_ms")]), ref.busy / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "idle_ms")]), ref.idle / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "host_wait_ms")]), ref.host / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "kernel_wait_ms")]), ref.kernel / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "other_ms")]), ref.other / 1e3, 1e-9);
    EXPECT_EQ(num(row[column(t, "gaps")]), static_cast<double>(ref.gaps.size()));
    EXPECT_GT(ref.host, 0);
    EXPECT_GT(ref.other, 0);
  }
}

TEST(IdleTime, MatchesBruteForceOnGeneratedRanks) {
  const GenTrace g = generate_ranks(3, true, 120, 17);
  check_idle(g, 3, 30);
  check_idle(g, 3, 5);
}

// One stream: kernel 0-10 launched at 0; kernel 12-20 launched at 1 (queued: a 2 us kernel wait);
// kernel 60-70 launched at 50 (after the stream went idle at 20: 40 us host wait); kernel 100-110
// launched at 65 (queued, 30 us gap >= 30: other); a copy 112-115 with no launch (its 2 us gap: kernel
// wait, as HTA counts a gap before work of unknown launch).
TEST(IdleTime, KnownAnswersOnOneStream) {
  trace::Trace t;
  trace::Process p;
  p.properties.set_int("rank", 4);
  t.add_process(std::move(p));
  const int64_t spans[][3] = {{0, 0, 10}, {1, 12, 20}, {50, 60, 70}, {65, 100, 110}};
  uint64_t id = 1;
  for (const auto& s : spans) {
    add_gen_span(t, 0, "cudaLaunchKernel", Level::kRuntimeApi, SpanKind::kLaunch, ActivityType::kRuntimeCall,
                 kNoStream, id, s[0], s[0] + 3);
    add_gen_span(t, 0, "k", Level::kDevice, SpanKind::kExecution, ActivityType::kKernel, 7, id, s[1], s[2]);
    ++id;
  }
  add_gen_span(t, 0, "copy", Level::kDevice, SpanKind::kExecution, ActivityType::kMemcpyDtoH, 7, 0, 112, 115);
  const auto r = run_analysis(t, "idle_time");
  ASSERT_FALSE(r.missing_input);
  const auto& row = r.tables.at(0).rows.at(0);
  const auto& tab = r.tables.at(0);
  EXPECT_EQ(std::get<int64_t>(row[0].value), 4);
  EXPECT_DOUBLE_EQ(num(row[column(tab, "host_wait_ms")]), 0.040);
  EXPECT_DOUBLE_EQ(num(row[column(tab, "kernel_wait_ms")]), 0.004);
  EXPECT_DOUBLE_EQ(num(row[column(tab, "other_ms")]), 0.030);
  EXPECT_EQ(num(row[column(tab, "gaps_launch_unknown")]), 1);
  analysis::Params p40;
  p40.set("kernel_wait_us", "40");
  const auto r40 = run_analysis(t, "idle_time", p40);
  EXPECT_DOUBLE_EQ(num(r40.tables.at(0).rows.at(0)[column(tab, "kernel_wait_ms")]), 0.034);
  analysis::Params bad;
  bad.set("kernel_wait_us", "-3");
  const auto rb = run_analysis(t, "idle_time", bad);
  ASSERT_TRUE(rb.missing_input);
  EXPECT_NE(rb.missing_input->find("kernel_wait_us='-3'"), std::string::npos) << *rb.missing_input;
}

TEST(CommOverlap, MatchesBruteForceOnGeneratedRanks) {
  const int ranks = 3;
  const GenTrace g = generate_ranks(ranks, true, 120, 5);
  const auto result = run_analysis(g.trace, "comm_overlap");
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  const analysis::Table& t = table_named(result, "comm_overlap");
  std::map<int64_t, std::vector<const GenWork*>> per_owner;
  for (const GenWork& w : g.work) per_owner[w.owner].push_back(&w);
  ASSERT_EQ(t.rows.size(), per_owner.size());
  for (const auto& row : t.rows) {
    const int64_t owner = owner_of_row(row[0], ranks);
    int64_t comm = 0, compute = 0, both = 0, lo = INT64_MAX, hi = INT64_MIN;
    for (const GenWork* w : per_owner[owner]) lo = std::min(lo, w->start), hi = std::max(hi, w->end);
    for (int64_t u = lo; u < hi; ++u) {
      bool c = false, k = false;
      for (const GenWork* w : per_owner[owner]) {
        if (w->start > u || u >= w->end) continue;
        c = c || w->type == ActivityType::kCollective;
        k = k || w->type == ActivityType::kKernel;
      }
      comm += c, compute += k, both += c && k;
    }
    SCOPED_TRACE("owner " + std::to_string(owner));
    EXPECT_NEAR(num(row[column(t, "communication_ms")]), comm / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "compute_ms")]), compute / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "overlapped_ms")]), both / 1e3, 1e-9);
    EXPECT_NEAR(num(row[column(t, "overlap_pct")]), 100.0 * both / comm, 1e-9);
    EXPECT_GT(both, 0);
    EXPECT_LT(both, comm);
  }
  // Same definition as rank_breakdown's comm_overlap_pct (ranked processes only there).
  const auto breakdown = run_analysis(g.trace, "rank_breakdown");
  const analysis::Table& b = breakdown.tables.at(0);
  for (const auto& brow : b.rows)
    for (const auto& row : t.rows)
      if (has_rank(row[0]) && std::get<int64_t>(row[0].value) == std::get<int64_t>(brow[0].value)) {
        EXPECT_NEAR(num(brow[column(b, "comm_overlap_pct")]), num(row[column(t, "overlap_pct")]), 1e-9);
      }
  // Per collective name: each call's own overlap with compute, summed.
  const analysis::Table& per_call = table_named(result, "comm_overlap_by_collective");
  for (const auto& row : per_call.rows) {
    const int64_t owner = owner_of_row(row[0], ranks);
    const std::string name = std::get<std::string>(row[1].value);
    int64_t time = 0, both = 0, calls = 0;
    for (const GenWork* w : per_owner[owner]) {
      if (w->type != ActivityType::kCollective || w->name != name) continue;
      ++calls, time += w->end - w->start;
      for (int64_t u = w->start; u < w->end; ++u) {
        bool k = false;
        for (const GenWork* x : per_owner[owner])
          k = k || (x->type == ActivityType::kKernel && x->start <= u && u < x->end);
        both += k;
      }
    }
    EXPECT_EQ(num(row[2]), calls);
    EXPECT_NEAR(num(row[3]), time / 1e3, 1e-9);
    EXPECT_NEAR(num(row[4]), both / 1e3, 1e-9);
  }
}

TEST(QueueLength, MatchesBruteForceOnGeneratedRanks) {
  const int ranks = 2;
  const GenTrace g = generate_ranks(ranks, true, 100, 23);
  analysis::Params params;
  params.set("bucket_us", "50");
  const auto result = run_analysis(g.trace, "queue_length", params);
  ASSERT_FALSE(result.missing_input) << *result.missing_input;
  const analysis::Table& summary = table_named(result, "queue_length");
  const analysis::Table& histogram = table_named(result, "queue_length_histogram");
  const analysis::Table& series = table_named(result, "queue_length_series");
  const auto streams = by_stream(g);
  ASSERT_EQ(summary.rows.size(), streams.size());
  std::map<Key, std::map<int64_t, int64_t>> ref_histogram;
  std::map<Key, std::map<int64_t, std::pair<double, int64_t>>> ref_series;  // bucket -> (sum, max)
  for (const auto& [key, work] : streams) {
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    auto enter = [](const GenWork* w) { return w->linked ? std::min(w->call_start, w->start) : w->start; };
    for (const GenWork* w : work) lo = std::min(lo, enter(w)), hi = std::max(hi, w->end);
    for (int64_t u = lo; u < hi; ++u) {
      int64_t n = 0;
      for (const GenWork* w : work) n += enter(w) <= u && u < w->end;
      ++ref_histogram[key][n];
      auto& b = ref_series[key][(u - g.origin_us) / 50];
      b.first += static_cast<double>(n), b.second = std::max(b.second, n);
    }
  }
  for (const auto& row : summary.rows) {
    const Key key{owner_of_row(row[0], ranks), static_cast<uint32_t>(num(row[column(summary, "stream")]))};
    const auto& h = ref_histogram.at(key);
    int64_t window = 0;
    double weighted = 0;
    for (const auto& [n, time] : h) window += time, weighted += static_cast<double>(n * time);
    SCOPED_TRACE("owner " + std::to_string(key.first) + " stream " + std::to_string(key.second));
    EXPECT_EQ(num(row[column(summary, "items")]), static_cast<double>(streams.at(key).size()));
    EXPECT_EQ(num(row[column(summary, "max_length")]), static_cast<double>(h.rbegin()->first));
    EXPECT_NEAR(num(row[column(summary, "mean_length")]), weighted / static_cast<double>(window), 1e-9);
    EXPECT_NEAR(num(row[column(summary, "time_at_max_ms")]), h.rbegin()->second / 1e3, 1e-9);
    EXPECT_GE(h.rbegin()->first, 3);
  }
  size_t histogram_rows = 0, series_rows = 0;
  for (const auto& [key, h] : ref_histogram) histogram_rows += h.size();
  for (const auto& [key, s] : ref_series) series_rows += s.rbegin()->first - s.begin()->first + 1;
  EXPECT_EQ(histogram.rows.size(), histogram_rows);
  EXPECT_EQ(series.rows.size(), series_rows);
  for (const auto& row : histogram.rows) {
    const Key key{owner_of_row(row[0], ranks), static_cast<uint32_t>(num(row[2]))};
    EXPECT_NEAR(num(row[4]), ref_histogram.at(key).at(static_cast<int64_t>(num(row[3]))) / 1e3, 1e-9);
  }
  for (const auto& row : series.rows) {
    const Key key{owner_of_row(row[0], ranks), static_cast<uint32_t>(num(row[2]))};
    const int64_t bucket = std::llround(num(row[3]) * 1e3 / 50);
    const auto& s = ref_series.at(key);
    const auto it = s.find(bucket);
    EXPECT_NEAR(num(row[4]), it == s.end() ? 0 : it->second.first / 50, 1e-9);
    EXPECT_EQ(num(row[5]), it == s.end() ? 0 : static_cast<double>(it->second.second));
  }
}

TEST(RankDeviceAnalyses, NoDeviceWorkSaysWhatToDo) {
  trace::Trace t;
  t.add_process({});
  add_gen_span(t, 0, "op", Level::kLayer, SpanKind::kSpan, ActivityType::kCpuOp, kNoStream, 0, 0, 10);
  for (const char* name :
       {"idle_time", "comm_overlap", "queue_length", "launch_stats", "kernel_distribution"}) {
    const auto r = run_analysis(t, name);
    ASSERT_TRUE(r.missing_input) << name;
    EXPECT_FALSE(r.missing_input->empty()) << name;
  }
}

}  // namespace
}  // namespace strata::testing
