#include "analysis/iterations/diagnosis.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <tuple>
#include <vector>

#include "analysis/run_recognition.h"
#include "core/level.h"

namespace strata::analysis::iterations {
namespace {

std::string fmt(const char* format, double a, double b = 0, double c = 0, double d = 0) {
  char buf[256];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

// Time the loop's iterations after its first spend in DataLoader waits (ops of the sequence).
int64_t data_wait_ns(const trace::Trace& trace, const MetricsResult& metrics, int32_t loop) {
  int64_t total = 0;
  bool first = true;
  for (const IterationMetrics& it : metrics.iterations) {
    if (it.loop != loop) continue;
    if (first) {
      first = false;
      continue;
    }
    for (int64_t op = it.first_op; op <= it.last_op && op >= 0; ++op) {
      if (static_cast<size_t>(op) >= metrics.sequence_spans.size()) break;
      const SpanRecord& sp = trace.spans[metrics.sequence_spans[static_cast<size_t>(op)]];
      if (scope_role(trace.name(sp)) == ScopeRole::kDataWait) total += sp.duration_ns();
    }
  }
  return total;
}

}  // namespace

std::string_view verdict_name(Verdict verdict, bool device_trace) {
  switch (verdict) {
    case Verdict::kInputBound:
      return "input-bound";
    case Verdict::kHostBound:
      return "host-bound";
    case Verdict::kCopyBound:
      return "copy-bound";
    case Verdict::kDeviceBound:
      return device_trace ? "device-bound" : "op-bound";
    case Verdict::kBalanced:
      return "balanced";
  }
  return "balanced";
}

namespace {

// Shares of the loop's wall time, and how the intervals compare with the gaps between ops.
struct LoopShares {
  double total = 1;      // the loop's time, ns (at least 1)
  double host = 0;       // intervals without copies, and gaps between ops inside iterations
  double copy = 0;       // copies inside intervals
  double busy = 0;       // ops executing
  double input = 0;      // DataLoader waits
  double interval = 0;   // intervals, with or without copies
  double gap_ratio = 0;  // the avg interval over the avg gap between ops (0: no gap)
};

LoopShares loop_shares(const trace::Trace& trace, const MetricsResult& metrics, int32_t loop,
                       const LoopSummary& s) {
  LoopShares shares;
  shares.total = static_cast<double>(std::max<int64_t>(1, s.total_ns));
  shares.host = static_cast<double>(s.interval_host_ns + s.op_gap_ns) / shares.total;
  shares.copy = static_cast<double>(s.interval_copy_ns) / shares.total;
  shares.busy = static_cast<double>(s.busy_ns) / shares.total;
  shares.input = static_cast<double>(data_wait_ns(trace, metrics, loop)) / shares.total;
  shares.gap_ratio = s.avg_op_gap_ns > 0 ? s.mean_interval_ns / s.avg_op_gap_ns : 0.0;
  shares.interval = static_cast<double>(s.interval_host_ns + s.interval_copy_ns) / shares.total;
  return shares;
}

// Every cause with its share and the figures behind it, largest share first.
std::vector<RankedCause> rank_causes(const LoopSummary& s, const LoopShares& shares, bool device_trace) {
  constexpr double ms = 1e-6, us = 1e-3;
  const char* ops_word = device_trace ? "device ops" : "ops";
  std::vector<RankedCause> ranked;
  // Ops back to back inside iterations: any interval is >> the (zero) gap between them.
  const std::string versus_gap = s.avg_op_gap_ns > 0 ? fmt("%.0fx the avg gap between ops, %.1f us",
                                                           shares.gap_ratio, s.avg_op_gap_ns * us)
                                                     : std::string("no gap between ops inside iterations");
  ranked.push_back(
      {Verdict::kHostBound, shares.host,
       fmt("avg interval %.3f ms (", s.mean_interval_ns * ms) + versus_gap +
           fmt("), avg overlap %.1f%%", 100.0 * s.avg_overlap) +
           fmt("; intervals without copies %.1f%% of the loop, gaps between ops inside iterations %.1f%%",
               100.0 * static_cast<double>(s.interval_host_ns) / shares.total,
               100.0 * static_cast<double>(s.op_gap_ns) / shares.total)});
  std::string copy_evidence =
      fmt("copies cover %.1f%% of the interval time (avg overlap); max interval %.3f ms",
          100.0 * s.avg_overlap, static_cast<double>(s.max_interval_ns) * ms);
  if (s.avg_copy_bytes >= 0)
    copy_evidence += s.avg_copy_bytes >= 1e6
                         ? fmt("; avg %.1f MB copied per iteration", s.avg_copy_bytes / 1e6)
                         : fmt("; avg %.1f KB copied per iteration", s.avg_copy_bytes / 1e3);
  ranked.push_back({Verdict::kCopyBound, shares.copy, copy_evidence});
  ranked.push_back(
      {Verdict::kDeviceBound, shares.busy,
       std::string(ops_word) + fmt(" execute %.1f%% of the loop's time (median iteration %.3f ms)",
                                   100.0 * shares.busy, s.median_time_ns * ms)});
  if (shares.input > 0)
    ranked.push_back(
        {Verdict::kInputBound, shares.input,
         fmt("waits for the DataLoader (enumerate(DataLoader)#... scopes) hold %.1f%% of the loop's time",
             100.0 * shares.input)});
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const RankedCause& a, const RankedCause& b) { return a.share > b.share; });
  return ranked;
}

// The verdict and the rule that gave it. DeepProf's reading first (see the header): is the
// bottleneck outside the iterations (interval >> op gap, and intervals a material part of the loop)?
// Then copies decide between copy- and host-bound: negligible when the interval is >> the copy time
// inside it. Otherwise the dominant part, if any. Needs d->ranked.
void decide_verdict(const LoopSummary& s, const LoopShares& shares, const DiagnosisOptions& options,
                    Diagnosis* d) {
  const double interval_share = shares.interval;
  const double gap_ratio = shares.gap_ratio;
  const bool outside = interval_share >= options.interval_share &&
                       (s.avg_op_gap_ns <= 0 ? s.mean_interval_ns > 0 : gap_ratio >= options.much_larger);
  const double copy_limit = 1.0 / options.much_larger;
  if (shares.input >= options.input_share) {
    d->verdict = Verdict::kInputBound;
    d->reason = fmt("waits for the DataLoader hold %.1f%% of the loop's time (>= %.0f%%)",
                    100.0 * shares.input, 100.0 * options.input_share);
  } else if (outside) {
    d->verdict = s.avg_overlap > copy_limit ? Verdict::kCopyBound : Verdict::kHostBound;
    d->reason =
        fmt("intervals hold %.1f%% of the loop (>= %.0f%%) and the avg interval is ", 100.0 * interval_share,
            100.0 * options.interval_share) +
        (s.avg_op_gap_ns > 0 ? fmt("%.0fx the avg gap between ops (>= %.0fx)", gap_ratio, options.much_larger)
                             : std::string(">> the gaps between ops (none)")) +
        ": the bottleneck is outside the iterations; " +
        fmt(s.avg_overlap > copy_limit
                ? "copies cover %.1f%% of the interval time (> %.0f%%): the transfers are a material part of "
                  "it"
                : "copies cover %.1f%% of the interval time (<= %.0f%%): negligible, the host works",
            100.0 * s.avg_overlap, 100.0 * copy_limit);
  } else if (d->ranked.front().share >= options.dominant_share) {
    d->verdict = d->ranked.front().verdict;
    d->reason = fmt("%.1f%% of the loop's time (>= %.0f%%)", 100.0 * d->ranked.front().share,
                    100.0 * options.dominant_share) +
                (interval_share >= options.interval_share
                     ? fmt("; intervals (%.1f%%) are only %.1fx the avg gap between ops (< %.0fx)",
                           100.0 * interval_share, gap_ratio, options.much_larger)
                     : fmt("; intervals hold %.1f%% of it (< %.0f%%)", 100.0 * interval_share,
                           100.0 * options.interval_share));
  } else {
    d->verdict = Verdict::kBalanced;
    d->reason = fmt("no part holds %.0f%% of the loop's time and the intervals (%.1f%%) do not dominate",
                    100.0 * options.dominant_share, 100.0 * interval_share);
  }
}

// The spans inside the loop's intervals (any thread and level of the main process, the op sequence
// excluded), by name and level, the most time inside first (ties: the shortest spans), at most `top`.
std::vector<GapSpan> spans_in_intervals(const trace::Trace& trace, const Classification& classes,
                                        const MetricsResult& metrics, int32_t loop, size_t top) {
  std::vector<std::pair<int64_t, int64_t>> windows;
  for (const IterationMetrics& it : metrics.iterations)
    if (it.loop == loop && it.interval_ns && *it.interval_ns > 0)
      windows.emplace_back(it.start_ns - *it.interval_ns, it.start_ns);
  std::sort(windows.begin(), windows.end());
  // A bitmap, not a hash set: the op sequence can hold millions of spans.
  std::vector<bool> in_sequence(trace.spans.size(), false);
  for (uint32_t i : metrics.sequence_spans)
    if (i < in_sequence.size()) in_sequence[i] = true;
  const uint16_t process = classes.main_track >= 0 ? classes.tracks[classes.main_track].key.process : 0;
  std::map<std::pair<std::string, uint8_t>, GapSpan> by_name;
  for (uint32_t i = 0; i < trace.spans.size() && !windows.empty(); ++i) {
    const SpanRecord& sp = trace.spans[i];
    if (sp.process != process || in_sequence[i] || sp.level == static_cast<uint8_t>(Level::kIteration) ||
        sp.level == static_cast<uint8_t>(Level::kDevice) || sp.end_ns <= sp.start_ns)
      continue;
    auto w = std::upper_bound(windows.begin(), windows.end(), std::make_pair(sp.start_ns, INT64_MAX));
    if (w != windows.begin()) --w;
    int64_t inside = 0;
    for (; w != windows.end() && w->first < sp.end_ns; ++w)
      inside += std::max<int64_t>(0, std::min(w->second, sp.end_ns) - std::max(w->first, sp.start_ns));
    if (inside <= 0) continue;
    GapSpan& g = by_name[{std::string(trace.name(sp)), sp.level}];
    g.name = std::string(trace.name(sp));
    g.level = level_name(sp.level);
    g.in_interval_ns += inside;
    g.span_ns += sp.end_ns - sp.start_ns;
    ++g.count;
  }
  std::vector<GapSpan> gap_spans;
  for (auto& [key, g] : by_name) gap_spans.push_back(std::move(g));
  // Ties (spans that hold every interval whole, as enclosing module calls and a helper thread's wait
  // do) go to the shortest: a thread waiting for the whole run says nothing about the gaps.
  std::sort(gap_spans.begin(), gap_spans.end(), [](const GapSpan& a, const GapSpan& b) {
    return std::tie(b.in_interval_ns, a.span_ns, a.name, a.level) <
           std::tie(a.in_interval_ns, b.span_ns, b.name, b.level);
  });
  if (gap_spans.size() > top) gap_spans.resize(top);
  return gap_spans;
}

// What to look at next for the verdict (`untraced`: no span was recorded inside the intervals).
std::string next_step_for(Verdict verdict, const LoopSummary& s, bool untraced) {
  switch (verdict) {
    case Verdict::kHostBound: {
      std::string step =
          s.interval_host_ns >= s.op_gap_ns
              ? "the host works between iterations: look at the training loop's code outside the model "
                "(data loading, logging, graph rebuilding); the spans inside the intervals are listed"
              : "the host cannot issue ops fast enough inside iterations: fewer, larger ops (fusion, "
                "larger batch, CUDA graphs) or less Python per op";
      if (untraced)
        step +=
            "; no span was recorded inside the intervals, so that time is untraced host code: record with "
            "--sample (CPU stacks at the deepest level; `strata profile --by op` shows the time outside any "
            "op by function), or wrap the loop's data loading/logging code in strata.span(...)";
      return step;
    }
    case Verdict::kCopyBound:
      return "input copies fill the intervals: copy less per step (smaller or pre-sliced batches, keep data "
             "on the device), overlap copies with compute (pinned memory, non_blocking, prefetch)";
    case Verdict::kDeviceBound:
      return "the ops themselves dominate: profile the heaviest ops/kernels (strata analyze --analysis "
             "kernels_by_name or op_stats)";
    case Verdict::kBalanced:
      return "no single part dominates: see the ranked shares";
    case Verdict::kInputBound:
      return "the loop waits for its input: give the DataLoader worker processes (num_workers > 0) or more "
             "of "
             "them, or make __getitem__/collate cheaper (strata summary shows the data phase per step)";
  }
  return "";
}

}  // namespace

Diagnosis diagnose(const trace::Trace& trace, const Classification& classes, const MetricsResult& metrics,
                   int32_t loop, const DiagnosisOptions& options) {
  Diagnosis d;
  d.loop = loop;
  d.device_trace = classes.device_trace;
  if (loop < 0 || static_cast<size_t>(loop) >= metrics.loops.size()) return d;
  const LoopSummary& s = metrics.loops[loop];
  const LoopShares shares = loop_shares(trace, metrics, loop, s);
  d.ranked = rank_causes(s, shares, classes.device_trace);
  decide_verdict(s, shares, options, &d);
  // The verdict leads the ranking; the rest stay in order of share.
  std::stable_partition(d.ranked.begin(), d.ranked.end(),
                        [&](const RankedCause& c) { return c.verdict == d.verdict; });
  d.gap_spans = spans_in_intervals(trace, classes, metrics, loop, options.top_gap_spans);
  d.next_step = next_step_for(d.verdict, s, d.gap_spans.empty());
  return d;
}

}  // namespace strata::analysis::iterations
