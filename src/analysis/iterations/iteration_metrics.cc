#include "analysis/iterations/iteration_metrics.h"

#include <algorithm>
#include <cmath>

namespace strata::analysis::iterations {
namespace {

std::optional<int64_t> bytes_of(const trace::Trace& trace, uint32_t span_index) {
  for (std::string_view key : {"bytes", "memory bytes", "size"}) {
    auto attr = trace.find_attr(span_index, key);
    if (!attr) continue;
    if (attr->type == static_cast<uint8_t>(AttrType::kInt)) return attr->value.i;
    if (attr->type == static_cast<uint8_t>(AttrType::kDouble) ||
        attr->type == static_cast<uint8_t>(AttrType::kMetric))
      return static_cast<int64_t>(attr->value.d);
  }
  return std::nullopt;
}

double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + mid, v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + mid)) / 2;
  return m;
}

// Robust outliers: farther than 3.5 scaled MADs from the median, and more than 10% of it (so a
// perfectly steady loop with a zero MAD does not flag nanosecond jitter).
std::vector<bool> robust_outliers(const std::vector<double>& values) {
  std::vector<bool> out(values.size(), false);
  if (values.size() < 5) return out;
  const double med = median_of(values);
  std::vector<double> dev;
  dev.reserve(values.size());
  for (double v : values) dev.push_back(std::fabs(v - med));
  const double mad = 1.4826 * median_of(dev);
  for (size_t i = 0; i < values.size(); ++i) {
    const double d = std::fabs(values[i] - med);
    out[i] = d > 3.5 * mad && d > 0.1 * std::fabs(med);
  }
  return out;
}

// Union of [start, end) intervals, sorted and disjoint.
std::vector<std::pair<int64_t, int64_t>> merged(const std::vector<CopyEvent>& copies) {
  std::vector<std::pair<int64_t, int64_t>> v;
  v.reserve(copies.size());
  for (const CopyEvent& c : copies) v.emplace_back(c.start_ns, c.end_ns);
  std::sort(v.begin(), v.end());
  std::vector<std::pair<int64_t, int64_t>> out;
  for (const auto& [s, e] : v) {
    if (!out.empty() && s <= out.back().second) {
      out.back().second = std::max(out.back().second, e);
    } else {
      out.emplace_back(s, e);
    }
  }
  return out;
}

int64_t covered_ns(const std::vector<std::pair<int64_t, int64_t>>& unions, int64_t from, int64_t to) {
  if (to <= from) return 0;
  auto it = std::lower_bound(unions.begin(), unions.end(), std::make_pair(from, INT64_MIN),
                             [](const auto& a, const auto& b) { return a.second < b.first; });
  int64_t total = 0;
  for (; it != unions.end() && it->first < to; ++it)
    total += std::max<int64_t>(0, std::min(it->second, to) - std::max(it->first, from));
  return total;
}

}  // namespace

void main_sequence(const trace::Trace& trace, const Classification& classes, std::vector<uint32_t>* spans,
                   std::vector<int64_t>* gap_before_ns) {
  spans->clear();
  gap_before_ns->clear();
  if (classes.main_track < 0) return;
  const TrackInfo& main = classes.tracks[classes.main_track];
  int64_t last_end = INT64_MIN;
  for (uint32_t i : main.op_spans) {
    const SpanRecord& s = trace.spans[i];
    const CopyDirection dir = span_copy_direction(s, classes.device_trace);
    if (dir == CopyDirection::kHostToDevice || dir == CopyDirection::kDeviceToHost ||
        dir == CopyDirection::kHostToHost)
      continue;  // copies form the copy "stream", even when they share the main stream
    spans->push_back(i);
    gap_before_ns->push_back(last_end == INT64_MIN ? 0 : std::max<int64_t>(0, s.start_ns - last_end));
    last_end = std::max(last_end, s.end_ns);
  }
}

std::vector<CopyEvent> input_copies(const trace::Trace& trace, const Classification& classes) {
  std::vector<CopyEvent> out;
  if (classes.main_track < 0) return out;
  const TrackKey& main = classes.tracks[classes.main_track].key;
  for (const TrackInfo& track : classes.tracks) {
    if (track.key.process != main.process) continue;
    if (classes.device_trace ? track.key.device_id != main.device_id : !(track.key == main)) continue;
    const CopyDirection wanted =
        classes.device_trace ? CopyDirection::kHostToDevice : CopyDirection::kHostToHost;
    for (uint32_t i : track.op_spans) {
      const SpanRecord& s = trace.spans[i];
      if (span_copy_direction(s, classes.device_trace) != wanted) continue;
      out.push_back({s.start_ns, s.end_ns, bytes_of(trace, i).value_or(-1)});
    }
  }
  std::sort(out.begin(), out.end(),
            [](const CopyEvent& a, const CopyEvent& b) { return a.start_ns < b.start_ns; });
  return out;
}

namespace {

using CopyUnion = std::vector<std::pair<int64_t, int64_t>>;

// Iteration t's times from its ops (`seq`: the main sequence's spans), and its interval since the
// previous iteration (`previous`, null for the first) with the input copies that overlap it.
IterationMetrics measure_iteration(const trace::Trace& trace, const std::vector<uint32_t>& seq,
                                   const IterationMatch& m, size_t t, const IterationMetrics* previous,
                                   const CopyUnion& copy_union) {
  IterationMetrics it;
  it.index = static_cast<int64_t>(t);
  it.loop = m.loop;
  it.first_op = m.first_op;
  it.last_op = m.last_op;
  it.ops = m.last_op - m.first_op + 1;
  it.inner_extra_ops = m.inner_extra_ops;
  it.trailing_extra_ops = m.trailing_extra_ops;
  it.start_ns = trace.spans[seq[m.first_op]].start_ns;
  int64_t end = INT64_MIN;
  int gaps = 0;
  for (int64_t j = m.first_op; j <= m.last_op; ++j) {
    const SpanRecord& s = trace.spans[seq[j]];
    if (j > m.first_op) {
      it.op_gap_ns += std::max<int64_t>(0, s.start_ns - end);
      ++gaps;
    }
    it.busy_ns += s.duration_ns();
    end = std::max(end, s.end_ns);
  }
  it.end_ns = end;
  it.time_ns = end - it.start_ns;
  it.avg_op_gap_ns = gaps > 0 ? static_cast<double>(it.op_gap_ns) / gaps : 0.0;
  if (previous != nullptr) {
    const int64_t prev_end = previous->end_ns;
    it.interval_ns = std::max<int64_t>(0, it.start_ns - prev_end);
    it.copy_in_interval_ns = covered_ns(copy_union, prev_end, it.start_ns);
    it.overlap = *it.interval_ns > 0 ? static_cast<double>(it.copy_in_interval_ns) / *it.interval_ns : 0.0;
  }
  return it;
}

// How far back the first iteration's copies are looked for: one median interval of its loop (of all
// loops when its loop has none); 0 without any interval.
int64_t first_copy_window(const std::vector<IterationMetrics>& iterations) {
  if (iterations.empty()) return 0;
  std::vector<double> same_loop, all;
  for (const IterationMetrics& it : iterations) {
    if (!it.interval_ns) continue;
    all.push_back(static_cast<double>(*it.interval_ns));
    if (it.loop == iterations.front().loop) same_loop.push_back(static_cast<double>(*it.interval_ns));
  }
  return static_cast<int64_t>(std::llround(median_of(same_loop.empty() ? all : same_loop)));
}

// The copies (sorted by start) that start from `window_start` to the iteration's end, and their
// bytes. Bytes are known when every copy says its size (none copied: 0, when the trace gives sizes at
// all); a partial sum would understate the iteration.
void count_feeding_copies(const std::vector<CopyEvent>& copies, bool trace_says_bytes, int64_t window_start,
                          IterationMetrics* it) {
  auto first_copy = std::lower_bound(copies.begin(), copies.end(), window_start,
                                     [](const CopyEvent& c, int64_t v) { return c.start_ns < v; });
  bool all_known = trace_says_bytes;
  int64_t bytes = 0;
  for (auto c = first_copy; c != copies.end() && c->start_ns < it->end_ns; ++c) {
    ++it->copies;
    if (c->bytes >= 0) {
      bytes += c->bytes;
    } else {
      all_known = false;
    }
  }
  it->copy_bytes = all_known ? bytes : -1;
}

// Loop l's statistics over its iterations (times, intervals, gaps, copies), flagging in `iterations`
// the ones whose time or interval is an outlier.
LoopSummary summarize_loop(int32_t l, int64_t cycle_ops, std::vector<IterationMetrics>& iterations) {
  LoopSummary s;
  s.loop = l;
  s.cycle_ops = cycle_ops;
  std::vector<size_t> members;
  for (size_t t = 0; t < iterations.size(); ++t)
    if (iterations[t].loop == s.loop) members.push_back(t);
  s.iterations = static_cast<int64_t>(members.size());
  if (members.empty()) return s;
  std::vector<double> times, intervals;
  std::vector<size_t> interval_members;
  double interval_sum = 0, bytes_sum = 0;
  int64_t gap_sum = 0, gap_pairs = 0, bytes_known = 0, interval_total = 0, copy_total = 0;
  for (size_t t : members) {
    const IterationMetrics& it = iterations[t];
    s.flagged += it.flagged() ? 1 : 0;
    times.push_back(static_cast<double>(it.time_ns));
    gap_sum += it.op_gap_ns;
    gap_pairs += std::max<int64_t>(0, it.ops - 1);
    if (it.copy_bytes >= 0) {
      bytes_sum += static_cast<double>(it.copy_bytes);
      ++bytes_known;
    }
    if (it.interval_ns) {
      intervals.push_back(static_cast<double>(*it.interval_ns));
      interval_members.push_back(t);
      interval_sum += static_cast<double>(*it.interval_ns);
      interval_total += *it.interval_ns;
      copy_total += it.copy_in_interval_ns;
      if (*it.interval_ns > s.max_interval_ns || s.max_interval_iteration < 0) {
        s.max_interval_ns = *it.interval_ns;
        s.max_interval_iteration = it.index;
      }
      s.total_ns += it.time_ns + *it.interval_ns;
      s.busy_ns += it.busy_ns;
      s.op_gap_ns += it.op_gap_ns;
      s.interval_copy_ns += it.copy_in_interval_ns;
      s.interval_host_ns += *it.interval_ns - it.copy_in_interval_ns;
    }
  }
  double sum = 0, sq = 0;
  for (double v : times) sum += v;
  s.mean_time_ns = sum / static_cast<double>(times.size());
  for (double v : times) sq += (v - s.mean_time_ns) * (v - s.mean_time_ns);
  s.stddev_time_ns = times.size() > 1 ? std::sqrt(sq / static_cast<double>(times.size() - 1)) : 0.0;
  s.median_time_ns = median_of(times);
  s.min_time_ns = *std::min_element(times.begin(), times.end());
  s.max_time_ns = *std::max_element(times.begin(), times.end());
  s.mean_interval_ns = intervals.empty() ? 0.0 : interval_sum / static_cast<double>(intervals.size());
  s.avg_overlap =
      interval_total > 0 ? static_cast<double>(copy_total) / static_cast<double>(interval_total) : 0.0;
  s.avg_op_gap_ns = gap_pairs > 0 ? static_cast<double>(gap_sum) / static_cast<double>(gap_pairs) : 0.0;
  s.avg_copy_bytes = bytes_known > 0 ? bytes_sum / static_cast<double>(bytes_known) : -1.0;
  const std::vector<bool> time_out = robust_outliers(times);
  for (size_t k = 0; k < members.size(); ++k)
    if (time_out[k]) {
      iterations[members[k]].time_outlier = true;
      ++s.time_outliers;
    }
  const std::vector<bool> interval_out = robust_outliers(intervals);
  for (size_t k = 0; k < interval_members.size(); ++k)
    if (interval_out[k]) {
      iterations[interval_members[k]].interval_outlier = true;
      ++s.interval_outliers;
    }
  return s;
}

}  // namespace

MetricsResult compute_metrics(const trace::Trace& trace, const Classification& classes,
                              std::vector<uint32_t> sequence_spans, const MiningResult& mining) {
  MetricsResult r;
  r.sequence_spans = std::move(sequence_spans);
  r.copies = input_copies(trace, classes);
  const CopyUnion copy_union = merged(r.copies);
  for (size_t t = 0; t < mining.iterations.size(); ++t)
    r.iterations.push_back(measure_iteration(trace, r.sequence_spans, mining.iterations[t], t,
                                             t > 0 ? &r.iterations.back() : nullptr, copy_union));

  // Copies feeding each iteration: those starting in its interval or inside it (copies issued during
  // an iteration feed it too: the paper's "per iteration"). The first iteration has no previous end:
  // everything since the trace began would include the set-up (weights, the data set moved to the
  // device), so its window reaches back one median interval of its loop (of all loops when its loop
  // has none), the time its successors take to be fed. No interval anywhere: only the copies inside.
  const bool trace_says_bytes =
      std::any_of(r.copies.begin(), r.copies.end(), [](const CopyEvent& c) { return c.bytes >= 0; });
  const int64_t first_window = first_copy_window(r.iterations);
  for (size_t t = 0; t < r.iterations.size(); ++t) {
    IterationMetrics& it = r.iterations[t];
    const int64_t window_start = t > 0                                     ? r.iterations[t - 1].end_ns
                                 : it.start_ns >= INT64_MIN + first_window ? it.start_ns - first_window
                                                                           : INT64_MIN;
    count_feeding_copies(r.copies, trace_says_bytes, window_start, &it);
  }

  for (size_t l = 0; l < mining.loops.size(); ++l)
    r.loops.push_back(summarize_loop(static_cast<int32_t>(l),
                                     static_cast<int64_t>(mining.loops[l].cycle.size()), r.iterations));
  return r;
}

}  // namespace strata::analysis::iterations
