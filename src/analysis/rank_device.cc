// Device-side analyses per rank (HTA's idle time breakdown, communication-computation overlap and
// queue length), on one rank's trace or on a merged job. Spans are classified by activity type
// alone; a device span's launch is the runtime call the span tree linked it to by correlation id.
#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/analysis_util.h"
#include "analysis/rank_util.h"

namespace strata::analysis {
namespace {

using ranks::ms;
using ranks::pct;

struct StreamKey {
  int64_t owner = 0;
  uint16_t device = 0;
  uint32_t stream = 0;
  auto operator<=>(const StreamKey&) const = default;
};

std::vector<Cell> stream_cells(const StreamKey& k) {
  return {ranks::rank_cell(k.owner), Cell::integer(k.device), Cell::integer(k.stream)};
}

constexpr int64_t kLaunchUnknown = INT64_MIN;

struct Work {
  int64_t start = 0, end = 0;
  int64_t launch = kLaunchUnknown;  // start of the host call that launched it
};

// Every span that holds a device stream, per (rank, device, stream), with its launch time.
std::map<StreamKey, std::vector<Work>> stream_work(const AnalysisInput& input,
                                                   const std::vector<char>& in_scope) {
  const trace::Trace& trace = input.trace;
  const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
  std::map<StreamKey, std::vector<Work>> out;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (!ranks::occupies_stream(s) || s.end_ns < s.start_ns || !ranks::counts(in_scope, i)) continue;
    const int32_t call = ranks::launch_call(trace, input.tree, i);
    out[{owners[s.process], s.device, s.stream}].push_back(
        {s.start_ns, s.end_ns, call >= 0 ? trace.spans[static_cast<size_t>(call)].start_ns : kLaunchUnknown});
  }
  return out;
}

int64_t to_ns(double microseconds) { return std::llround(microseconds * 1e3); }

// HTA's idle time breakdown per stream: each gap between the work on a stream (from the latest end
// so far to the next start) is host wait when the next work's launch call started after the stream
// went idle (the CPU had not enqueued it yet), else kernel wait when it is shorter than
// kernel_wait_us (back-to-back launch overhead), else other (waiting on events, other streams).
class IdleTime : public Analysis {
 public:
  std::string_view name() const override { return "idle_time"; }
  std::string_view description() const override {
    return "device idle time per rank and stream by cause (HTA): host wait, kernel wait, other "
           "(--param kernel_wait_us=30, min_gap_us=0, scope=trace|steps)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    double kernel_wait_us = 0, min_gap_us = 0;
    std::string error;
    if (!ranks::number_param(input.params, "kernel_wait_us", 30, 0, &kernel_wait_us, &error) ||
        !ranks::number_param(input.params, "min_gap_us", 0, 0, &min_gap_us, &error))
      return missing_text("idle_time: " + error);
    std::vector<char> in_scope;
    if (!ranks::device_scope(input, ranks::owner_of_processes(input.trace), &in_scope, &error))
      return missing_text("idle_time: " + error);
    const int64_t kernel_wait = to_ns(kernel_wait_us), min_gap = to_ns(min_gap_us);
    auto streams = stream_work(input, in_scope);
    if (streams.empty()) return missing(ranks::kNeedDeviceWork);
    Table t = make_table(
        "idle_time", "Device idle time by cause per rank and stream",
        {"rank", "device", "stream", "window_ms", "busy_ms", "idle_ms", "host_wait_ms", "kernel_wait_ms",
         "other_ms", "host_wait_pct", "kernel_wait_pct", "other_pct", "gaps", "gaps_launch_unknown"});
    for (auto& [key, work] : streams) {
      std::sort(work.begin(), work.end(), [](const Work& a, const Work& b) {
        return a.start != b.start ? a.start < b.start : a.end < b.end;
      });
      int64_t reach = work.front().end, busy = work.front().end - work.front().start;
      int64_t host = 0, kernel = 0, other = 0, gaps = 0, unknown = 0;
      for (size_t k = 1; k < work.size(); ++k) {
        const Work& w = work[k];
        const int64_t gap = w.start - reach;
        busy += std::max<int64_t>(0, w.end - std::max(w.start, reach));
        if (gap > min_gap) {
          ++gaps;
          unknown += w.launch == kLaunchUnknown;
          if (w.launch != kLaunchUnknown && w.launch > reach)
            host += gap;
          else if (gap < kernel_wait)
            kernel += gap;
          else
            other += gap;
        }
        reach = std::max(reach, w.end);
      }
      const int64_t idle = host + kernel + other;
      std::vector<Cell> row = stream_cells(key);
      for (Cell c :
           {Cell::real(ms(reach - work.front().start), 3), Cell::real(ms(busy), 3), Cell::real(ms(idle), 3),
            Cell::real(ms(host), 3), Cell::real(ms(kernel), 3), Cell::real(ms(other), 3),
            Cell::real(pct(host, idle), 2), Cell::real(pct(kernel, idle), 2), Cell::real(pct(other, idle), 2),
            Cell::integer(gaps), Cell::integer(unknown)})
        row.push_back(std::move(c));
      t.rows.push_back(std::move(row));
    }
    t.notes.push_back(
        "gap: from the latest end on the stream to the next start; host wait: the next work's launch "
        "call started after the stream went idle; kernel wait: shorter than kernel_wait_us=" +
        format_number(kernel_wait_us) + " with the work already launched; other: the rest");
    if (!in_scope.empty()) t.notes.push_back(ranks::kScopeNote);
    if (min_gap > 0)
      t.notes.push_back("gaps of min_gap_us=" + format_number(min_gap_us) + " or less are not idle");
    AnalysisResult r;
    r.tables.push_back(std::move(t));
    return r;
  }

 private:
  static AnalysisResult missing_text(std::string why) {
    AnalysisResult r;
    r.missing_input = std::move(why);
    return r;
  }
  static std::string format_number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }
};

// Merged [start, end) intervals, sorted.
using Intervals = std::vector<std::pair<int64_t, int64_t>>;
Intervals merged(Intervals v) {
  std::sort(v.begin(), v.end());
  Intervals out;
  for (const auto& [s, e] : v) {
    if (e <= s) continue;
    if (!out.empty() && s <= out.back().second)
      out.back().second = std::max(out.back().second, e);
    else
      out.emplace_back(s, e);
  }
  return out;
}
int64_t length(const Intervals& v) {
  int64_t n = 0;
  for (const auto& [s, e] : v) n += e - s;
  return n;
}
// Time of [s, e) covered by the merged intervals m.
int64_t covered(const Intervals& m, int64_t s, int64_t e) {
  auto it = std::upper_bound(m.begin(), m.end(), std::make_pair(s, INT64_MAX));
  if (it != m.begin()) --it;
  int64_t n = 0;
  for (; it != m.end() && it->first < e; ++it)
    n += std::max<int64_t>(0, std::min(e, it->second) - std::max(s, it->first));
  return n;
}
int64_t intersection(const Intervals& a, const Intervals& b) {
  int64_t n = 0;
  for (const auto& [s, e] : a) n += covered(b, s, e);
  return n;
}

// HTA's communication-computation overlap: per rank, the share of the time a collective runs (on
// any stream of the rank) during which a compute kernel also runs; per collective name, the same
// for its calls.
class CommOverlap : public Analysis {
 public:
  std::string_view name() const override { return "comm_overlap"; }
  std::string_view description() const override {
    return "communication-computation overlap per rank (HTA): the share of collective time overlapped by "
           "compute kernels, per rank and per collective (--param top=50, scope=trace|steps)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const trace::Trace& trace = input.trace;
    const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
    std::vector<char> in_scope;
    std::string error;
    if (!ranks::device_scope(input, owners, &in_scope, &error)) {
      AnalysisResult bad;
      bad.missing_input = "comm_overlap: " + error;
      return bad;
    }
    std::map<int64_t, Intervals> compute, comm;
    // (owner, name): by name text, not string id, so that a rank's rows come in the same order in its
    // own trace and in a merged one (strata.dask combines the ranks' rows).
    std::map<std::pair<int64_t, std::string_view>, std::vector<const SpanRecord*>> calls;
    for (size_t i = 0; i < trace.spans.size(); ++i) {
      const SpanRecord& s = trace.spans[i];
      if (!ranks::occupies_stream(s) || !ranks::counts(in_scope, i)) continue;
      const ActivityType a = s.activity_type();
      const int64_t o = owners[s.process];
      if (a == ActivityType::kCollective) {
        comm[o].emplace_back(s.start_ns, s.end_ns);
        calls[{o, trace.strings.get(s.name)}].push_back(&s);
      } else if (a == ActivityType::kKernel || a == ActivityType::kGraph) {
        compute[o].emplace_back(s.start_ns, s.end_ns);
      }
    }
    if (comm.empty()) return missing("no collective kernels (NCCL/RCCL) on any device: nothing to overlap");
    Table per_rank =
        make_table("comm_overlap", "Communication-computation overlap per rank",
                   {"rank", "compute_ms", "communication_ms", "overlapped_ms", "exposed_ms", "overlap_pct"});
    std::map<int64_t, Intervals> compute_merged;
    for (auto& [o, v] : comm) {
      const Intervals c = merged(std::move(v));
      const Intervals k = merged(compute[o]);
      const int64_t both = intersection(c, k), comm_ns = length(c);
      per_rank.rows.push_back({ranks::rank_cell(o), Cell::real(ms(length(k)), 3), Cell::real(ms(comm_ns), 3),
                               Cell::real(ms(both), 3), Cell::real(ms(comm_ns - both), 3),
                               Cell::real(pct(both, comm_ns), 2)});
      compute_merged[o] = k;
    }
    per_rank.notes.push_back(
        "overlap: time a collective and a compute kernel (kernel, graph) both run on the rank's devices, "
        "over the "
        "time a collective runs; exposed: collective time with no compute");
    if (!in_scope.empty()) per_rank.notes.push_back(ranks::kScopeNote);
    Table per_call = make_table("comm_overlap_by_collective", "Overlap per collective name and rank",
                                {"rank", "collective", "calls", "time_ms", "overlapped_ms", "overlap_pct"});
    for (const auto& [key, list] : calls) {
      const Intervals& k = compute_merged[key.first];
      int64_t time = 0, both = 0;
      for (const SpanRecord* s : list) {
        time += std::max<int64_t>(0, s->end_ns - s->start_ns);
        both += s->end_ns > s->start_ns ? covered(k, s->start_ns, s->end_ns) : 0;
      }
      per_call.rows.push_back({ranks::rank_cell(key.first), Cell::text(std::string(key.second)),
                               Cell::integer(static_cast<int64_t>(list.size())), Cell::real(ms(time), 3),
                               Cell::real(ms(both), 3), Cell::real(pct(both, time), 2)});
    }
    std::stable_sort(per_call.rows.begin(), per_call.rows.end(), [](const auto& a, const auto& b) {
      return std::get<double>(a[3].value) > std::get<double>(b[3].value);
    });
    keep_top(&per_call, input.params, 50);
    AnalysisResult r;
    r.tables.push_back(std::move(per_rank));
    r.tables.push_back(std::move(per_call));
    return r;
  }
};

}  // namespace

std::unique_ptr<Analysis> make_idle_time() { return std::make_unique<IdleTime>(); }
STRATA_REGISTER_ANALYSIS(make_idle_time, 2100);
std::unique_ptr<Analysis> make_comm_overlap() { return std::make_unique<CommOverlap>(); }
STRATA_REGISTER_ANALYSIS(make_comm_overlap, 2200);

}  // namespace strata::analysis
