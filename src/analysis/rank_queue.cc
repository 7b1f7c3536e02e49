// Queue length per device stream (HTA's augmented counter): how many pieces of work (kernels,
// collectives, copies, memsets) had been launched on the stream and had not finished, over time.
// Work enters the queue when its launch call starts (or when it starts, if that is earlier: clocks
// of host and device may disagree; or when its launch is unknown) and leaves when it ends. CUDA
// blocks the launching thread once a stream holds 1024 pending operations.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "analysis/analysis_util.h"
#include "analysis/rank_util.h"

namespace strata::analysis {
namespace {

using ranks::ms;

struct StreamKey {
  int64_t owner = 0;
  uint16_t device = 0;
  uint32_t stream = 0;
  auto operator<=>(const StreamKey&) const = default;
};

struct Queue {
  std::vector<std::pair<int64_t, int32_t>> events;  // (time, +1 enter / -1 leave)
  int64_t items = 0, launch_unknown = 0;
};

// A stretch of time [start, end) during which the queue held `length` items.
struct Segment {
  int64_t start, end;
  int64_t length;
};

// The queue's piecewise-constant length, as stretches of positive duration: a state that lasts no
// time (work ending at the instant the next is launched) is not a length the queue held.
std::vector<Segment> segments(std::vector<std::pair<int64_t, int32_t>>& events) {
  std::sort(events.begin(), events.end());
  std::vector<Segment> out;
  int64_t length = 0;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    length += events[i].second;
    const int64_t dt = events[i + 1].first - events[i].first;
    if (dt <= 0) continue;
    if (!out.empty() && out.back().length == length && out.back().end == events[i].first)
      out.back().end = events[i + 1].first;
    else
      out.push_back({events[i].first, events[i + 1].first, length});
  }
  return out;
}

constexpr int64_t kMaxBuckets = 100000;  // per stream, for the time series

class QueueLength : public Analysis {
 public:
  std::string_view name() const override { return "queue_length"; }
  std::string_view description() const override {
    return "queue length per rank and stream (HTA): launched-but-unfinished work over time, summarized, with "
           "the "
           "time at each length and a time series (--param bucket_us=N; buckets from origin_ns, default the "
           "earliest span)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    double bucket_us = 0;
    std::string error;
    if (!ranks::number_param(input.params, "bucket_us", 0, 0, &bucket_us, &error)) {
      AnalysisResult r;
      r.missing_input = "queue_length: " + error;
      return r;
    }
    const int64_t bucket = std::llround(bucket_us * 1e3);
    const trace::Trace& trace = input.trace;
    const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
    std::map<StreamKey, Queue> queues;
    for (size_t i = 0; i < trace.spans.size(); ++i) {
      const SpanRecord& s = trace.spans[i];
      if (!ranks::occupies_stream(s) || s.end_ns < s.start_ns) continue;
      const int32_t call = ranks::launch_call(trace, input.tree, i);
      Queue& q = queues[{owners[s.process], s.device, s.stream}];
      const int64_t enter =
          call >= 0 ? std::min(trace.spans[static_cast<size_t>(call)].start_ns, s.start_ns) : s.start_ns;
      q.events.emplace_back(enter, +1);
      q.events.emplace_back(s.end_ns, -1);
      ++q.items;
      q.launch_unknown += call < 0;
    }
    if (queues.empty()) return missing(ranks::kNeedDeviceWork);
    int64_t origin = ranks::trace_origin(trace);
    if (!series_origin(input.params, &origin, &error)) {
      AnalysisResult r;
      r.missing_input = "queue_length: " + error;
      return r;
    }
    Table summary = make_table("queue_length", "Queue length per rank and stream",
                               {"rank", "device", "stream", "items", "launch_unknown", "window_ms",
                                "max_length", "mean_length", "time_at_max_ms", "time_queued_pct"});
    Table histogram = make_table("queue_length_histogram", "Time at each queue length",
                                 {"rank", "device", "stream", "length", "time_ms", "time_pct"});
    Table series = make_table("queue_length_series", "Queue length over time",
                              {"rank", "device", "stream", "bucket_start_ms", "mean_length", "max_length"});
    for (auto& [key, q] : queues) {
      const std::vector<Segment> segs = segments(q.events);
      const int64_t window = q.events.back().first - q.events.front().first;
      std::map<int64_t, int64_t> time_at;
      double weighted = 0;
      for (const Segment& s : segs) {
        time_at[s.length] += s.end - s.start;
        weighted += static_cast<double>(s.length) * static_cast<double>(s.end - s.start);
      }
      const int64_t max_length = time_at.empty() ? 0 : time_at.rbegin()->first;
      const int64_t queued = window - (time_at.count(0) ? time_at[0] : 0);
      std::vector<Cell> row = {ranks::rank_cell(key.owner),
                               Cell::integer(key.device),
                               Cell::integer(key.stream),
                               Cell::integer(q.items),
                               Cell::integer(q.launch_unknown),
                               Cell::real(ms(window), 3),
                               Cell::integer(max_length),
                               Cell::real(window > 0 ? weighted / static_cast<double>(window) : 0, 3),
                               Cell::real(ms(time_at.empty() ? 0 : time_at.rbegin()->second), 3),
                               Cell::real(ranks::pct(queued, window), 2)};
      summary.rows.push_back(std::move(row));
      for (const auto& [length, time] : time_at)
        histogram.rows.push_back({ranks::rank_cell(key.owner), Cell::integer(key.device),
                                  Cell::integer(key.stream), Cell::integer(length), Cell::real(ms(time), 3),
                                  Cell::real(ranks::pct(time, window), 2)});
      if (bucket > 0 && !segs.empty()) {
        if (std::string why = add_series(key, segs, origin, bucket, &series); !why.empty()) {
          AnalysisResult r;
          r.missing_input = "queue_length: bucket_us=" + input.params.get("bucket_us", "") + why;
          return r;
        }
      }
    }
    summary.notes.push_back(
        "work enters the queue when its launch call starts and leaves when it ends; window: first entry to "
        "last "
        "exit; CUDA blocks the launching thread at 1024 pending operations per stream");
    AnalysisResult r;
    r.tables.push_back(std::move(summary));
    r.tables.push_back(std::move(histogram));
    if (bucket > 0) r.tables.push_back(std::move(series));
    return r;
  }

 private:
  // --param origin_ns: where the series' buckets start, in the trace's clock (strata.dask passes the
  // earliest span of all ranks, which a worker holding one rank cannot know); by default the
  // trace's earliest span. Not after that span: a bucket index is never negative.
  static bool series_origin(const Params& params, int64_t* origin, std::string* error) {
    const std::string text = params.get("origin_ns", "");
    if (text.empty()) return true;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || errno == ERANGE) {
      *error = "origin_ns='" + text + "': expected an integer (nanoseconds in the trace's clock)";
      return false;
    }
    if (v > *origin) {
      *error = "origin_ns=" + text + " is after the trace's earliest span (" + std::to_string(*origin) +
               " ns): give a time at or before it";
      return false;
    }
    *origin = v;
    return true;
  }

  // Buckets of `bucket` ns counted from the trace's origin (so every stream's buckets line up):
  // mean length over the whole bucket and the largest length held in it. Returns why not, or "".
  static std::string add_series(const StreamKey& key, const std::vector<Segment>& segs, int64_t origin,
                                int64_t bucket, Table* series) {
    const int64_t first = (segs.front().start - origin) / bucket,
                  last = (segs.back().end - 1 - origin) / bucket;
    if (last - first + 1 > kMaxBuckets)
      return " gives " + std::to_string(last - first + 1) + " buckets on one stream (at most " +
             std::to_string(kMaxBuckets) + "): choose a larger bucket";
    std::vector<double> area(static_cast<size_t>(last - first + 1), 0);
    std::vector<int64_t> peak(area.size(), 0);
    for (const Segment& s : segs) {
      for (int64_t b = (s.start - origin) / bucket; b * bucket + origin < s.end; ++b) {
        const int64_t lo = std::max(s.start, origin + b * bucket),
                      hi = std::min(s.end, origin + (b + 1) * bucket);
        const size_t at = static_cast<size_t>(b - first);
        area[at] += static_cast<double>(s.length) * static_cast<double>(hi - lo);
        peak[at] = std::max(peak[at], s.length);
      }
    }
    for (size_t at = 0; at < area.size(); ++at)
      series->rows.push_back(
          {ranks::rank_cell(key.owner), Cell::integer(key.device), Cell::integer(key.stream),
           Cell::real(ms((first + static_cast<int64_t>(at)) * bucket), 3),
           Cell::real(area[at] / static_cast<double>(bucket), 3), Cell::integer(peak[at])});
    return "";
  }
};

}  // namespace

std::unique_ptr<Analysis> make_queue_length() { return std::make_unique<QueueLength>(); }
STRATA_REGISTER_ANALYSIS(make_queue_length, 2600);

}  // namespace strata::analysis
