// Clock alignment of ranks (trace/rank_align.h), known answers: ranks generated from a real rank's
// Kineto trace (tests/data/kineto/multirank_rank0.json.gz) with known clock offsets (up to +-5 s),
// drifts (up to +-50 ppm), jitter on every collective end and a few late outliers; and the two real
// ranks of that job merged (their point-to-point SendRecv ends are not simultaneous: no correction).
#include "trace/rank_align.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <random>
#include <regex>
#include <set>
#include <sstream>

#include "export/exporters.h"
#include "import/importer.h"
#include "trace/trace_builder.h"
#include "trace/trace_reader.h"

namespace strata::testing {
namespace {

const std::string kData = std::string(STRATA_SOURCE_DIR) + "/tests/data/kineto/";

const trace::Trace& real_rank0() {
  static const trace::Trace t = [] {
    trace::Trace out;
    std::string error;
    EXPECT_TRUE(import::import_trace(kData + "multirank_rank0.json.gz", &out, &error)) << error;
    return out;
  }();
  return t;
}

struct TrueClock {
  double offset_ns, drift;  // t_rank = t0 + offset + (t - t0) (1 + drift)
};

struct Generated {
  trace::Trace trace;
  std::vector<TrueClock> clocks;
  struct End {
    size_t span;
    int64_t rank;
    int64_t true_ns;   // on the reference clock, without jitter
    double jitter_ns;  // added before the rank's clock
  };
  std::vector<End> ends;  // every collective end, every rank
};

// Rank 0 keeps the true clock; rank r's spans are the real rank's, on a clock with a known offset
// and drift, each collective end jittered (normal, sigma 3 us; 3% late by 0.2-2 ms). Every fifth
// rank from rank 3 on started profiling one call late (its first collective missing).
// The real rank's trace is repeated `repeats` times back to back (a longer run: more collective
// calls, a longer window over which drift shows).
Generated generate(int ranks, uint32_t seed, int repeats = 1) {
  const trace::Trace& src = real_rank0();
  Generated g;
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> offset(-5e9, 5e9), drift(-50e-6, 50e-6), unit(0, 1);
  std::normal_distribution<double> jitter(0, 3000);
  int64_t t0 = INT64_MAX, t1 = INT64_MIN;
  for (const SpanRecord& s : src.spans) t0 = std::min(t0, s.start_ns), t1 = std::max(t1, s.end_ns);
  const int64_t period = t1 - t0 + 1000000;
  std::map<size_t, int> collective_order;
  for (size_t i = 0; i < src.spans.size(); ++i)
    if (src.spans[i].activity_type() == ActivityType::kCollective) collective_order[i] = 0;
  {
    std::vector<std::pair<int64_t, size_t>> order;
    for (auto& [i, k] : collective_order) order.push_back({src.spans[i].start_ns, i});
    std::sort(order.begin(), order.end());
    for (size_t k = 0; k < order.size(); ++k) collective_order[order[k].second] = static_cast<int>(k);
  }
  for (int r = 0; r < ranks; ++r) {
    const TrueClock c = r == 0 ? TrueClock{0, 0} : TrueClock{offset(rng), drift(rng)};
    g.clocks.push_back(c);
    std::vector<uint16_t> process_of(src.processes.size());
    for (size_t p = 0; p < src.processes.size(); ++p) {
      trace::Process proc = src.processes[p];
      proc.pid += 100000 * r;
      proc.host = "node" + std::to_string(r);
      proc.properties.set_int("rank", r);
      process_of[p] = g.trace.add_process(std::move(proc));
    }
    // Differences from t0 in double (exact to well under a ns), the large origin in int64.
    auto on_clock = [&](int64_t t, double add) {
      return t0 + static_cast<int64_t>(
                      std::llround(c.offset_ns + (static_cast<double>(t - t0) + add) * (1 + c.drift)));
    };
    for (int rep = 0; rep < repeats; ++rep)
      for (size_t i = 0; i < src.spans.size(); ++i) {
        SpanRecord s = src.spans[i];
        s.start_ns += rep * period, s.end_ns += rep * period;
        s.process = process_of[s.process];
        s.name = g.trace.strings.intern(src.name(src.spans[i]));
        double j = 0;
        const bool collective = s.activity_type() == ActivityType::kCollective;
        if (collective) {
          if (r % 5 == 3 && rep == 0 && collective_order[i] == 0) continue;
          j = jitter(rng);
          if (unit(rng) < 0.03) j += 2e5 + unit(rng) * 1.8e6;
        }
        const int64_t true_end = s.end_ns;
        s.start_ns = on_clock(s.start_ns, 0);
        s.end_ns = on_clock(true_end, j);
        const size_t index = g.trace.add_span(s);
        if (collective) g.ends.push_back({index, r, true_end, j});
      }
  }
  return g;
}

double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

void check_alignment(int ranks, uint32_t seed, int repeats) {
  Generated g = generate(ranks, seed, repeats);
  const std::vector<trace::RankClock> clocks = trace::align_rank_clocks(&g.trace);
  ASSERT_EQ(clocks.size(), static_cast<size_t>(ranks));
  // Matched collectives end together: each rank's end of a call against the median end of that
  // call over the ranks (the instant they share), after alignment.
  std::map<int64_t, std::vector<int64_t>> ends_of_call;  // true time -> aligned ends
  for (const auto& e : g.ends) ends_of_call[e.true_ns].push_back(g.trace.spans[e.span].end_ns);
  std::map<int64_t, int64_t> call_end;
  for (auto& [t, list] : ends_of_call) {
    std::nth_element(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(list.size() / 2), list.end());
    call_end[t] = list[list.size() / 2];
  }
  std::vector<double> spread;
  std::vector<double> worst_error(static_cast<size_t>(ranks), 0);
  for (const auto& e : g.ends) {
    const SpanRecord& s = g.trace.spans[e.span];
    spread.push_back(std::fabs(static_cast<double>(s.end_ns - call_end.at(e.true_ns))));
    // The correction's own error at this instant: the aligned end less its jitter, against the truth.
    const double error =
        static_cast<double>(s.end_ns - e.true_ns) - e.jitter_ns * (1 + g.clocks[e.rank].drift);
    worst_error[e.rank] = std::max(worst_error[e.rank], std::fabs(error));
  }
  EXPECT_LE(percentile(spread, 0.9), 20000) << ranks << " ranks: 90th percentile of end differences (ns)";
  int within = 0;
  for (const trace::RankClock& c : clocks) {
    EXPECT_TRUE(c.method == "reference" || c.method == "fit") << "rank " << c.rank << ": " << c.method;
    EXPECT_GE(c.uncertainty_ns, 0) << "rank " << c.rank;
    within +=
        worst_error[c.rank] <= static_cast<double>(c.uncertainty_ns) + 1;  // + the generator's ns rounding
    if (std::getenv("STRATA_RANKS_VERBOSE"))
      std::printf("rank %lld %s bound %lld true error %.0f matched %u rejected %u p90 %lld\n",
                  static_cast<long long>(c.rank), c.method.c_str(), static_cast<long long>(c.uncertainty_ns),
                  worst_error[c.rank], c.matched, c.rejected, static_cast<long long>(c.residual_p90_ns));
    if (c.rank > 0) {
      EXPECT_NEAR(c.drift_ppm, g.clocks[c.rank].drift * 1e6, 10) << "rank " << c.rank;
      EXPECT_LT(c.uncertainty_ns, 50000) << "rank " << c.rank << ": a bound too loose to be useful";
    }
  }
  EXPECT_GE(within, static_cast<int>(std::ceil(0.95 * ranks)))
      << ranks << " ranks: true error within the stated bound in " << within;
  // Stored with each process, for strata info and the exports.
  EXPECT_EQ(g.trace.processes.back().properties.get("clock.method").value_or(""), "fit");
  EXPECT_TRUE(g.trace.processes.back().properties.get_int("clock.uncertainty_ns").has_value());
}

TEST(RankAlign, GeneratedRanks4) { check_alignment(4, 1, 20); }
TEST(RankAlign, GeneratedRanks16) { check_alignment(16, 2, 20); }
TEST(RankAlign, GeneratedRanks64) { check_alignment(64, 3, 4); }
TEST(RankAlign, GeneratedRanksOtherSeeds) {
  for (uint32_t seed = 10; seed < 14; ++seed) check_alignment(8, seed, 10);
}
// One profiling window of 10 calls: few matches, so the bound must widen rather than lie.
TEST(RankAlign, GeneratedRanksFewCalls) { check_alignment(32, 7, 1); }

TEST(RankAlign, SameHostKeepsItsClockAndNoCollectivesMeansNone) {
  Generated g = generate(3, 5);
  g.trace.processes[1].host = g.trace.processes[0].host;  // rank 1 shares rank 0's host
  for (SpanRecord& s : g.trace.spans)                     // rank 2: no collectives
    if (g.trace.processes[s.process].properties.get_int("rank") == 2 &&
        s.activity_type() == ActivityType::kCollective)
      s.activity = static_cast<uint8_t>(ActivityType::kKernel);
  const std::vector<SpanRecord> before = g.trace.spans;
  const auto clocks = trace::align_rank_clocks(&g.trace);
  ASSERT_EQ(clocks.size(), 3u);
  EXPECT_EQ(clocks[1].method, "same_host");
  EXPECT_EQ(clocks[2].method, "none");
  EXPECT_EQ(clocks[2].uncertainty_ns, -1);
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(before[i].start_ns, g.trace.spans[i].start_ns);
}

// The two real ranks merge into one trace (one process group per rank, the rank from Kineto's
// distributedInfo); their SendRecv ends scatter by tens of ms (point-to-point, not simultaneous):
// the fit is refused as unreliable and no time moves. The Chrome export labels ranks and no flow
// arrow joins two ranks.
TEST(RankAlign, RealRanksMerge) {
  import::register_readers();
  const std::vector<std::string> paths = {kData + "multirank_rank0.json.gz",
                                          kData + "multirank_rank1.json.gz"};
  trace::Trace separate1;
  std::string error;
  ASSERT_TRUE(import::import_trace(paths[1], &separate1, &error)) << error;
  trace::Trace merged;
  std::vector<trace::RankClock> clocks;
  trace::OpenOptions options;
  options.before_finish = [&](trace::Trace& t, std::span<const size_t>) {
    clocks = trace::align_rank_clocks(&t);
  };
  ASSERT_TRUE(trace::open_traces(paths, &merged, &error, options)) << error;
  ASSERT_EQ(merged.processes.size(), 2u);
  EXPECT_EQ(merged.processes[0].properties.get_int("rank"), 0);
  EXPECT_EQ(merged.processes[1].properties.get_int("rank"), 1);
  EXPECT_EQ(merged.processes[1].properties.get_int("world_size"), 128);
  ASSERT_EQ(clocks.size(), 2u);
  EXPECT_EQ(clocks[1].method, "unreliable");
  EXPECT_EQ(clocks[1].matched, 10u);
  int64_t first1 = INT64_MAX, first_separate = INT64_MAX;
  for (const SpanRecord& s : merged.spans)
    if (s.process == 1) first1 = std::min(first1, s.start_ns);
  for (const SpanRecord& s : separate1.spans) first_separate = std::min(first_separate, s.start_ns);
  EXPECT_EQ(first1, first_separate) << "an unreliable fit must not move the rank";

  std::ostringstream out;
  exporter::write_chrome_trace(merged, out);
  const std::string json = out.str();
  EXPECT_NE(json.find("\"name\":\"rank 0: "), std::string::npos);
  EXPECT_NE(json.find("\"name\":\"rank 1: "), std::string::npos);
  EXPECT_NE(json.find("\"labels\":\"rank 1, clock unreliable\""), std::string::npos);
  // Flow events: each id's start and finish lie in one process (one rank).
  const std::regex flow("\\{\"ph\":\"[sf]\"[^}]*\"id\":([0-9]+),\"pid\":([0-9]+)");
  std::map<std::string, std::set<std::string>> pids_of_id;
  size_t flows = 0;
  for (auto it = std::sregex_iterator(json.begin(), json.end(), flow); it != std::sregex_iterator();
       ++it, ++flows)
    pids_of_id[(*it)[1]].insert((*it)[2]);
  EXPECT_GT(flows, 1000u);
  for (const auto& [id, pids] : pids_of_id)
    EXPECT_EQ(pids.size(), 1u) << "flow id " << id << " spans two ranks";
}

// Two ranks with one pid (containers on two hosts): the second is renumbered, the recorded pid kept;
// processes of one rank sharing a pid are left alone.
TEST(RankAlign, PidsMadeUniqueAcrossRanks) {
  trace::Trace t;
  for (int k = 0; k < 3; ++k) {
    trace::Process p;
    p.pid = 1;
    p.properties.set_int("rank", k == 2 ? 1 : k);
    t.add_process(std::move(p));
  }
  EXPECT_EQ(trace::make_pids_unique_across_ranks(&t), 2u);
  EXPECT_EQ(t.processes[0].pid, 1);
  EXPECT_EQ(t.processes[1].pid, 1 + 2 * (1 << 22));
  EXPECT_EQ(t.processes[1].properties.get_int("pid.recorded"), 1);
  EXPECT_NE(t.processes[2].pid, t.processes[1].pid);
  EXPECT_NE(t.processes[2].pid, 1);
}

}  // namespace
}  // namespace strata::testing
