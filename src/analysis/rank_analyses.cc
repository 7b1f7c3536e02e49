// Cross-rank analyses of a multi-rank job (one trace per rank merged with `strata merge`, or one
// rank's trace): the temporal breakdown of each rank's device time (HTA's temporal breakdown) and
// the wait at each collective call (who arrived last, how long the others waited). Ranks come from
// the process property "rank"; the kind of device work from the activity type alone.
#include <algorithm>
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/analysis_util.h"
#include "analysis/rank_partials.h"
#include "analysis/rank_util.h"
#include "trace/rank_align.h"

namespace strata::analysis {
namespace {

using ranks::kNeedRanks;
using ranks::ms;
using ranks::pct;

enum Category : uint8_t { kCompute = 0, kCommunication = 1, kMemcpy = 2, kNone = 3 };

Category category_of(const SpanRecord& s) {
  if (s.stream == kNoStream && s.device == kNoDevice) return kNone;
  if (s.kind != static_cast<uint8_t>(SpanKind::kExecution)) return kNone;
  const ActivityType t = s.activity_type();
  if (t == ActivityType::kCollective) return kCommunication;
  if (t == ActivityType::kKernel || t == ActivityType::kGraph) return kCompute;
  if (is_memory_transfer(t)) return kMemcpy;
  return kNone;
}

std::vector<int64_t> ranks_of_processes(const trace::Trace& trace) {
  std::vector<int64_t> rank(trace.processes.size());
  for (size_t p = 0; p < trace.processes.size(); ++p) rank[p] = trace::process_rank(trace.processes[p]);
  return rank;
}

std::string host_of_rank(const trace::Trace& trace, const std::vector<int64_t>& ranks, int64_t rank) {
  for (size_t p = 0; p < ranks.size(); ++p)
    if (ranks[p] == rank && !trace.processes[p].host.empty()) return trace.processes[p].host;
  return "";
}

// Each rank's device time from its first to its last device activity, split exclusively: compute
// where any kernel runs, else communication where a collective runs, else memcpy/memset, else idle.
// Overlap: the share of communication time during which a compute kernel also ran.
class RankBreakdown : public Analysis {
 public:
  std::string_view name() const override { return "rank_breakdown"; }
  std::string_view description() const override {
    return "temporal breakdown per rank: device time in compute, communication, memcpy and idle, and the "
           "communication time overlapped by compute (--param scope=trace|steps)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const trace::Trace& trace = input.trace;
    const std::vector<int64_t> ranks = ranks_of_processes(trace);
    struct Edge {
      int64_t t;
      int8_t delta;
      uint8_t category;
    };
    std::vector<char> in_scope;
    std::string error;
    if (!ranks::device_scope(input, ranks, &in_scope, &error))
      return missing(("rank_breakdown: " + error).c_str());
    std::map<int64_t, std::vector<Edge>> edges;  // rank -> interval edges
    for (size_t i = 0; i < trace.spans.size(); ++i) {
      const SpanRecord& s = trace.spans[i];
      const int64_t rank = ranks[s.process];
      const Category c = category_of(s);
      if (rank < 0 || c == kNone || s.end_ns <= s.start_ns || !ranks::counts(in_scope, i)) continue;
      auto& e = edges[rank];
      e.push_back({s.start_ns, 1, c});
      e.push_back({s.end_ns, -1, c});
    }
    if (std::none_of(ranks.begin(), ranks.end(), [](int64_t r) { return r >= 0; }))
      return missing(kNeedRanks);
    if (edges.empty())
      return missing(
          "no kernels, collectives or copies on any rank's device: import Kineto GPU traces or record with "
          "--level device");
    Table t =
        make_table("rank_breakdown", "Temporal breakdown per rank",
                   {"rank", "host", "window_ms", "compute_ms", "communication_ms", "memcpy_ms", "idle_ms",
                    "compute_pct", "communication_pct", "memcpy_pct", "idle_pct", "comm_overlap_pct"});
    for (auto& [rank, e] : edges) {
      std::sort(e.begin(), e.end(), [](const Edge& a, const Edge& b) { return a.t < b.t; });
      int64_t active[3] = {0, 0, 0}, time[4] = {0, 0, 0, 0}, comm_total = 0, overlap = 0;
      for (size_t i = 0; i + 1 < e.size(); ++i) {
        active[e[i].category] += e[i].delta;
        const int64_t dt = e[i + 1].t - e[i].t;
        if (dt == 0) continue;
        const int c = active[kCompute] > 0         ? kCompute
                      : active[kCommunication] > 0 ? kCommunication
                      : active[kMemcpy] > 0        ? kMemcpy
                                                   : kNone;
        time[c] += dt;
        if (active[kCommunication] > 0) {
          comm_total += dt;
          if (active[kCompute] > 0) overlap += dt;
        }
      }
      const int64_t window = e.back().t - e.front().t;
      t.rows.push_back({Cell::integer(rank), Cell::text(host_of_rank(trace, ranks, rank)),
                        Cell::real(ms(window), 3), Cell::real(ms(time[kCompute]), 3),
                        Cell::real(ms(time[kCommunication]), 3), Cell::real(ms(time[kMemcpy]), 3),
                        Cell::real(ms(time[kNone]), 3), Cell::real(pct(time[kCompute], window), 2),
                        Cell::real(pct(time[kCommunication], window), 2),
                        Cell::real(pct(time[kMemcpy], window), 2), Cell::real(pct(time[kNone], window), 2),
                        Cell::real(pct(overlap, comm_total), 2)});
    }
    t.notes.push_back(
        "exclusive split: compute over communication over memcpy/memset; idle: no device activity "
        "between the rank's first and last");
    if (!in_scope.empty()) t.notes.push_back(ranks::kScopeNote);
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }
};

// collective_wait's partial: whether the trace has a ranked process and its earliest span start (the
// origin of first_start_ms), then per (collective name, rank) the start and end of each call of that
// name on that rank, in start order (ties by end): 16 bytes per collective call, whatever the rank's
// other spans. u8 ranked, u8 has_spans, i64 origin; then records of u32 name length, name, i64 rank,
// u64 calls, calls x (i64 start, i64 end).
using Calls = std::vector<std::pair<int64_t, int64_t>>;  // (start, end) per call, in order
using CallsByName = std::map<std::string, std::map<int64_t, Calls>, std::less<>>;  // name -> rank -> calls

std::string collective_partial(const trace::Trace& trace, const Params& /*params*/) {
  const std::vector<int64_t> ranks = ranks_of_processes(trace);
  std::map<std::pair<std::string_view, int64_t>, Calls> calls;
  for (const SpanRecord& s : trace.spans)
    if (ranks[s.process] >= 0 && category_of(s) == kCommunication)
      calls[{trace.name(s), ranks[s.process]}].emplace_back(s.start_ns, s.end_ns);
  std::string out;
  wire::put(&out,
            static_cast<uint8_t>(std::any_of(ranks.begin(), ranks.end(), [](int64_t r) { return r >= 0; })));
  wire::put(&out, static_cast<uint8_t>(!trace.spans.empty()));
  wire::put(&out, ranks::trace_origin(trace));
  for (auto& [key, list] : calls) {
    std::sort(list.begin(), list.end());
    wire::put_text(&out, key.first);
    wire::put(&out, key.second);
    wire::put(&out, static_cast<uint64_t>(list.size()));
    for (const auto& [start, end] : list) wire::put(&out, start), wire::put(&out, end);
  }
  return out;
}

struct CollectivePartials {
  bool ranked = false, has_spans = false;
  int64_t origin = INT64_MAX;
  CallsByName calls;
};

CollectivePartials read_collective_partials(std::span<const std::string_view> partials) {
  CollectivePartials all;
  for (std::string_view in : partials) {
    all.ranked |= wire::take<uint8_t>(&in) != 0;
    const bool has_spans = wire::take<uint8_t>(&in) != 0;
    const auto origin = wire::take<int64_t>(&in);
    if (has_spans) all.has_spans = true, all.origin = std::min(all.origin, origin);
    while (!in.empty()) {
      std::string name = wire::take_text(&in);
      const auto rank = wire::take<int64_t>(&in);
      const auto n = wire::take<uint64_t>(&in);
      if (n > in.size() / 16) throw std::runtime_error(wire::kTruncated);
      auto [it, fresh] = all.calls[name].try_emplace(rank);
      if (!fresh)
        throw std::runtime_error("collective_wait: " + ranks::owner_label(rank) +
                                 " is in two partials (each rank must come from one file)");
      it->second.reserve(n);
      for (uint64_t k = 0; k < n; ++k) {
        const auto start = wire::take<int64_t>(&in);
        it->second.emplace_back(start, wire::take<int64_t>(&in));
      }
    }
  }
  return all;
}

// The k-th collective kernel of a name on every rank is one call (ranks issue collectives in the same
// order). Its wait: how much later the last rank started it than each other rank (the time the
// others spent blocked in it); the last to start is the call's straggler. Names in text order, ranks
// in rank order.
AnalysisResult combine_collective_partials(std::span<const std::string_view> partials, const Params& params) {
  const CollectivePartials all = read_collective_partials(partials);
  if (!all.ranked) return missing(kNeedRanks);
  if (all.calls.empty()) return missing("no collective kernels (NCCL/RCCL) on any rank's device");
  Table per_call =
      make_table("collective_wait", "Collective calls across ranks",
                 {"collective", "call", "ranks", "first_start_ms", "straggler_rank", "max_wait_us",
                  "mean_wait_us", "min_duration_us", "max_duration_us", "end_spread_us"});
  struct RankTotals {
    int64_t straggler_calls = 0, waited_ns = 0, caused_ns = 0, calls = 0;
  };
  std::map<int64_t, RankTotals> totals;
  const int64_t origin = all.origin;
  for (const auto& [name, per_rank] : all.calls) {
    size_t n_calls = 0;
    for (const auto& pr : per_rank) n_calls = std::max(n_calls, pr.second.size());
    for (size_t k = 0; k < n_calls; ++k) {
      int64_t first = INT64_MAX, last = INT64_MIN, straggler = -1, dmin = INT64_MAX, dmax = 0;
      int64_t end_min = INT64_MAX, end_max = INT64_MIN, n = 0;
      for (const auto& [rank, list] : per_rank) {
        if (k >= list.size()) continue;
        const auto [start, end] = list[k];
        ++n;
        first = std::min(first, start);
        if (start > last) last = start, straggler = rank;
        dmin = std::min(dmin, end - start), dmax = std::max(dmax, end - start);
        end_min = std::min(end_min, end), end_max = std::max(end_max, end);
      }
      int64_t wait_sum = 0;
      for (const auto& [rank, list] : per_rank) {
        if (k >= list.size()) continue;
        const int64_t wait = last - list[k].first;
        wait_sum += wait;
        totals[rank].waited_ns += wait;
        totals[rank].calls += 1;
        totals[straggler].caused_ns += wait;
      }
      totals[straggler].straggler_calls += n > 1;
      per_call.rows.push_back(
          {Cell::text(name), Cell::integer(static_cast<int64_t>(k)), Cell::integer(n),
           Cell::real(ms(first - origin), 3), Cell::integer(straggler), Cell::real((last - first) / 1e3, 3),
           Cell::real(wait_sum / 1e3 / static_cast<double>(n), 3), Cell::real(dmin / 1e3, 3),
           Cell::real(dmax / 1e3, 3), Cell::real((end_max - end_min) / 1e3, 3)});
    }
  }
  sort_rows_desc(&per_call, 5);
  keep_top(&per_call, params, 50);
  Table ranking = make_table("stragglers", "Straggler ranking (who makes the others wait)",
                             {"rank", "calls", "straggler_calls", "caused_wait_ms", "own_wait_ms"});
  for (const auto& [rank, r] : totals)
    ranking.rows.push_back({Cell::integer(rank), Cell::integer(r.calls), Cell::integer(r.straggler_calls),
                            Cell::real(ms(r.caused_ns), 3), Cell::real(ms(r.waited_ns), 3)});
  sort_rows_desc(&ranking, 3);
  ranking.notes.push_back(
      "calls matched by order per collective name on each rank; times as merged (see each rank's clock "
      "uncertainty in strata info)");
  AnalysisResult r;
  r.tables.push_back(std::move(per_call));
  r.tables.push_back(std::move(ranking));
  return r;
}

// Collective duration and wait per call across ranks. The local run is the split run with one
// partial (rank_partials.h).
class CollectiveWait : public Analysis {
 public:
  std::string_view name() const override { return "collective_wait"; }
  std::string_view description() const override {
    return "collective duration and wait per call across ranks, and the straggler ranking (--param top=50)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const std::string partial = collective_partial(input.trace, input.params);
    const std::string_view one[] = {partial};
    return combine_collective_partials(one, input.params);
  }
};

}  // namespace

std::unique_ptr<Analysis> make_rank_breakdown() { return std::make_unique<RankBreakdown>(); }
STRATA_REGISTER_ANALYSIS(make_rank_breakdown, 1900);
std::unique_ptr<Analysis> make_collective_wait() { return std::make_unique<CollectiveWait>(); }
STRATA_REGISTER_ANALYSIS(make_collective_wait, 2000);
STRATA_REGISTER_RANK_PARTIAL(collective_wait, "collective_wait", collective_partial,
                             combine_collective_partials);

}  // namespace strata::analysis
