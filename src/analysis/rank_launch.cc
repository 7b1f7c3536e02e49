// Launch statistics (HTA's CUDA kernel launch statistics) and the kernel-duration distribution
// across ranks (HTA's kernel duration distribution, as a rank-outlier view). Device work is joined
// with the runtime call that launched it through the span tree's correlation links.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <stdexcept>
#include <string>

#include "analysis/analysis_util.h"
#include "analysis/rank_partials.h"
#include "analysis/rank_util.h"
#include "analysis/stats.h"

namespace strata::analysis {
namespace {

using ranks::ms;
using ranks::us;

using wire::kTruncated;
using wire::put;
using wire::put_text;
using wire::take;
using wire::take_text;

struct Launch {
  int64_t owner = 0;
  uint32_t span = 0;  // the device work
  uint32_t call = 0;  // the host call that launched it
  int64_t delay = 0;  // work start - call start
  int64_t cpu = 0;    // the call's duration
  int64_t gpu = 0;    // the work's duration
  bool short_kernel = false, delay_outlier = false, cpu_outlier = false;
};

struct RankLaunches {
  std::vector<size_t> launches;  // into the Launch list
  int64_t unlinked = 0;
  double threshold_ns = 0, cpu_threshold_ns = 0;
  ranks::MedianMad delay, cpu;
};

// launch_stats's partial. Per owner, its summary row's values, unrounded; per owner, its launches
// with the longest delays (the top that --param top keeps, all with top=0), named and timed; and the
// trace's earliest start, the origin of call_start_ms. All a rank's values depend on its spans only.
struct LaunchSummary {
  int64_t owner = 0, launches = 0, unlinked = 0, outliers = 0, negative = 0, short_kernels = 0,
          cpu_outliers = 0;
  double delay_p50 = 0, delay_p90 = 0, delay_max = 0, delay_mad = 0, threshold = 0, cpu_p50 = 0, gpu_p50 = 0,
         cpu_threshold = 0;
};

struct LaunchRow {
  int64_t owner = 0, call_start = 0, work_start = 0, delay = 0, cpu = 0, gpu = 0;
  std::string work, activity, call;
  uint8_t flags = 0;  // 1 short, 2 delay outlier, 4 cpu outlier
};

struct LaunchPartial {
  bool has_spans = false;
  int64_t origin = 0;
  std::vector<LaunchSummary> summaries;
  std::vector<LaunchRow> rows;
};

bool launch_params(const Params& params, double* k, double* min_mad_us, std::string* error) {
  return ranks::number_param(params, "k", 5, 0, k, error) &&
         ranks::number_param(params, "min_mad_us", 1, 0, min_mad_us, error);
}

// The launches of `trace` (device work with its launch call) and the per-owner statistics and flags.
std::vector<Launch> find_launches(const trace::Trace& trace, double k, double min_mad_us,
                                  std::map<int64_t, RankLaunches>* per_rank) {
  const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
  const trace::SpanTree& tree = trace.tree();
  std::vector<Launch> launches;
  for (size_t i = 0; i < trace.spans.size(); ++i) {
    const SpanRecord& s = trace.spans[i];
    if (!ranks::occupies_stream(s)) continue;
    const int64_t o = owners[s.process];
    const int32_t call = ranks::launch_call(trace, tree, i);
    if (call < 0) {
      ++(*per_rank)[o].unlinked;
      continue;
    }
    const SpanRecord& c = trace.spans[static_cast<size_t>(call)];
    Launch l{o,
             static_cast<uint32_t>(i),
             static_cast<uint32_t>(call),
             s.start_ns - c.start_ns,
             c.duration_ns(),
             s.duration_ns()};
    l.short_kernel = l.gpu < l.cpu;
    (*per_rank)[o].launches.push_back(launches.size());
    launches.push_back(l);
  }
  const double floor_ns = min_mad_us * 1e3;
  for (auto& [o, r] : *per_rank) {
    std::vector<double> delays, cpu;
    for (size_t li : r.launches) {
      delays.push_back(static_cast<double>(launches[li].delay));
      cpu.push_back(static_cast<double>(launches[li].cpu));
    }
    r.delay = ranks::median_mad(std::move(delays));
    r.threshold_ns = r.delay.median + k * std::max(r.delay.mad, floor_ns);
    r.cpu = ranks::median_mad(std::move(cpu));
    r.cpu_threshold_ns = r.cpu.median + k * std::max(r.cpu.mad, floor_ns);
    for (size_t li : r.launches) {
      launches[li].delay_outlier = static_cast<double>(launches[li].delay) > r.threshold_ns;
      launches[li].cpu_outlier = static_cast<double>(launches[li].cpu) > r.cpu_threshold_ns;
    }
  }
  return launches;
}

LaunchSummary summarize(int64_t owner, const RankLaunches& r, const std::vector<Launch>& launches) {
  LaunchSummary s;
  s.owner = owner, s.unlinked = r.unlinked, s.launches = static_cast<int64_t>(r.launches.size());
  if (s.launches == 0) return s;
  std::vector<double> delay, cpu, gpu;
  for (size_t li : r.launches) {
    const Launch& l = launches[li];
    delay.push_back(static_cast<double>(l.delay));
    cpu.push_back(static_cast<double>(l.cpu));
    gpu.push_back(static_cast<double>(l.gpu));
    s.outliers += l.delay_outlier, s.negative += l.delay < 0, s.short_kernels += l.short_kernel;
    s.cpu_outliers += l.cpu_outlier;
  }
  s.delay_max = *std::max_element(delay.begin(), delay.end());
  s.delay_p50 = r.delay.median, s.delay_p90 = ranks::percentile(delay, 90), s.delay_mad = r.delay.mad;
  s.threshold = r.threshold_ns, s.cpu_threshold = r.cpu_threshold_ns;
  s.cpu_p50 = ranks::percentile(cpu, 50), s.gpu_p50 = ranks::percentile(std::move(gpu), 50);
  return s;
}

// The launch table's order: longest delay first; ties by the work's start, then owner (the merged
// trace's order, which a partial of one rank cannot know, is close to this: spans sorted by start).
bool launch_row_before(const LaunchRow& a, const LaunchRow& b) {
  if (a.delay != b.delay) return a.delay > b.delay;
  if (a.work_start != b.work_start) return a.work_start < b.work_start;
  return a.owner < b.owner;
}

std::string launch_partial(const trace::Trace& trace, const Params& params) {
  double k = 0, min_mad_us = 0;
  std::string error;
  if (!launch_params(params, &k, &min_mad_us, &error)) return {};  // the combine reports it
  std::map<int64_t, RankLaunches> per_rank;
  const std::vector<Launch> launches = find_launches(trace, k, min_mad_us, &per_rank);
  std::string out;
  put(&out, static_cast<uint8_t>(!trace.spans.empty()));
  put(&out, ranks::trace_origin(trace));
  put(&out, static_cast<uint64_t>(per_rank.size()));
  for (const auto& [o, r] : per_rank) {
    const LaunchSummary s = summarize(o, r, launches);
    for (int64_t v :
         {s.owner, s.launches, s.unlinked, s.outliers, s.negative, s.short_kernels, s.cpu_outliers})
      put(&out, v);
    for (double v : {s.delay_p50, s.delay_p90, s.delay_max, s.delay_mad, s.threshold, s.cpu_p50, s.gpu_p50,
                     s.cpu_threshold})
      put(&out, v);
  }
  // Each owner's longest delays in table order: the table's top N are among them.
  std::vector<LaunchRow> rows;
  for (const Launch& l : launches) {
    const SpanRecord& s = trace.spans[l.span];
    const SpanRecord& c = trace.spans[l.call];
    rows.push_back({l.owner, c.start_ns, s.start_ns, l.delay, l.cpu, l.gpu, std::string(trace.name(s)),
                    std::string(activity_name(s.activity)), std::string(trace.name(c)),
                    static_cast<uint8_t>(l.short_kernel | l.delay_outlier << 1 | l.cpu_outlier << 2)});
  }
  std::stable_sort(rows.begin(), rows.end(), launch_row_before);
  const int64_t top = params.get_int("top", 50);
  std::map<int64_t, int64_t> kept;
  for (const LaunchRow& r : rows) {
    if (top > 0 && kept[r.owner]++ >= top) continue;
    for (int64_t v : {r.owner, r.call_start, r.work_start, r.delay, r.cpu, r.gpu}) put(&out, v);
    put_text(&out, r.work), put_text(&out, r.activity), put_text(&out, r.call);
    put(&out, r.flags);
  }
  return out;
}

LaunchPartial read_launch_partials(std::span<const std::string_view> partials) {
  LaunchPartial all;
  all.origin = INT64_MAX;
  std::map<int64_t, bool> seen;
  for (std::string_view in : partials) {
    if (in.empty()) continue;
    if (take<uint8_t>(&in) != 0) {
      all.has_spans = true;
      all.origin = std::min(all.origin, take<int64_t>(&in));
    } else {
      take<int64_t>(&in);
    }
    const auto n = take<uint64_t>(&in);
    for (uint64_t i = 0; i < n; ++i) {
      LaunchSummary s;
      for (int64_t* v :
           {&s.owner, &s.launches, &s.unlinked, &s.outliers, &s.negative, &s.short_kernels, &s.cpu_outliers})
        *v = take<int64_t>(&in);
      for (double* v : {&s.delay_p50, &s.delay_p90, &s.delay_max, &s.delay_mad, &s.threshold, &s.cpu_p50,
                        &s.gpu_p50, &s.cpu_threshold})
        *v = take<double>(&in);
      if (seen[s.owner])
        throw std::runtime_error("launch_stats: " + ranks::owner_label(s.owner) +
                                 " is in two partials (each rank must come from one file)");
      seen[s.owner] = true;
      all.summaries.push_back(s);
    }
    while (!in.empty()) {
      LaunchRow r;
      for (int64_t* v : {&r.owner, &r.call_start, &r.work_start, &r.delay, &r.cpu, &r.gpu})
        *v = take<int64_t>(&in);
      r.work = take_text(&in), r.activity = take_text(&in), r.call = take_text(&in);
      r.flags = take<uint8_t>(&in);
      all.rows.push_back(std::move(r));
    }
  }
  if (!all.has_spans) all.origin = 0;
  std::stable_sort(all.summaries.begin(), all.summaries.end(),
                   [](const LaunchSummary& a, const LaunchSummary& b) { return a.owner < b.owner; });
  std::stable_sort(all.rows.begin(), all.rows.end(), launch_row_before);
  return all;
}

std::vector<Cell> summary_row(const LaunchSummary& s) {
  if (s.launches == 0)
    return {ranks::rank_cell(s.owner),
            Cell::integer(0),
            Cell::integer(s.unlinked),
            Cell::empty(),
            Cell::empty(),
            Cell::empty(),
            Cell::empty(),
            Cell::empty(),
            Cell::integer(0),
            Cell::integer(0),
            Cell::integer(0),
            Cell::empty(),
            Cell::empty(),
            Cell::empty(),
            Cell::empty(),
            Cell::integer(0)};
  return {ranks::rank_cell(s.owner),
          Cell::integer(s.launches),
          Cell::integer(s.unlinked),
          Cell::real(s.delay_p50 / 1e3, 3),
          Cell::real(s.delay_p90 / 1e3, 3),
          Cell::real(s.delay_max / 1e3, 3),
          Cell::real(s.delay_mad / 1e3, 3),
          Cell::real(s.threshold / 1e3, 3),
          Cell::integer(s.outliers),
          Cell::integer(s.negative),
          Cell::integer(s.short_kernels),
          Cell::real(ranks::pct(s.short_kernels, s.launches), 2),
          Cell::real(s.cpu_p50 / 1e3, 3),
          Cell::real(s.gpu_p50 / 1e3, 3),
          Cell::real(s.cpu_threshold / 1e3, 3),
          Cell::integer(s.cpu_outliers)};
}

std::string format_number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

AnalysisResult combine_launch_partials(std::span<const std::string_view> partials, const Params& params) {
  double k = 0, min_mad_us = 0;
  std::string error;
  if (!launch_params(params, &k, &min_mad_us, &error)) {
    AnalysisResult r;
    r.missing_input = "launch_stats: " + error;
    return r;
  }
  const LaunchPartial all = read_launch_partials(partials);
  int64_t total = 0;
  for (const LaunchSummary& s : all.summaries) total += s.launches;
  if (total == 0)
    return missing(
        "no device work linked to the runtime call that launched it (correlation ids): import a "
        "Kineto/nsys GPU trace with cuda_runtime events, or record with --level device");
  Table summary = make_table(
      "launch_stats", "Launch statistics per rank",
      {"rank", "launches", "unlinked", "delay_p50_us", "delay_p90_us", "delay_max_us", "delay_mad_us",
       "outlier_threshold_us", "delay_outliers", "negative_delays", "short_kernels", "short_pct",
       "cpu_p50_us", "gpu_p50_us", "cpu_outlier_threshold_us", "cpu_outliers"});
  for (const LaunchSummary& s : all.summaries) summary.rows.push_back(summary_row(s));
  summary.notes.push_back(
      "unlinked: device work with no launch call in the trace (not counted in the statistics)");
  // The launches with the longest delays (--param top=N, 0: all), flags included.
  Table t = make_table("launch_stats_launches", "Launches by launch delay",
                       {"rank", "work", "activity", "call", "call_start_ms", "launch_delay_us", "cpu_us",
                        "gpu_us", "short", "delay_outlier", "cpu_outlier"});
  const int64_t top = params.get_int("top", 50);
  const size_t shown = top > 0 ? std::min(all.rows.size(), static_cast<size_t>(top)) : all.rows.size();
  for (size_t j = 0; j < shown; ++j) {
    const LaunchRow& l = all.rows[j];
    t.rows.push_back({ranks::rank_cell(l.owner), Cell::text(l.work), Cell::text(l.activity),
                      Cell::text(l.call), Cell::real(ms(l.call_start - all.origin), 3),
                      Cell::real(us(l.delay), 3), Cell::real(us(l.cpu), 3), Cell::real(us(l.gpu), 3),
                      Cell::integer(l.flags & 1), Cell::integer((l.flags >> 1) & 1),
                      Cell::integer((l.flags >> 2) & 1)});
  }
  if (shown < static_cast<size_t>(total))
    t.notes.push_back("top " + std::to_string(shown) + " of " + std::to_string(total) +
                      " launches by delay (--param top=0 shows all)");
  t.notes.push_back(
      "launch delay: device start - launch call start; short: GPU time < the call's CPU time; delay "
      "(cpu) outlier: > median + k*max(MAD, min_mad_us) of the rank's delays (call CPU times), k=" +
      format_number(k) + ", min_mad_us=" + format_number(min_mad_us));
  AnalysisResult result;
  result.tables.push_back(std::move(summary));
  result.tables.push_back(std::move(t));
  return result;
}

// Per launch: delay = device start - call start, CPU time of the call, GPU time of the work. Flags
// (HTA's three): a short kernel runs for less time on the GPU than its launch took on the CPU; a
// delay outlier exceeds the rank's median delay by more than k MADs, a CPU outlier the rank's median
// call time (the MAD floored at min_mad_us, since whole-microsecond timestamps often give a MAD of 0).
// The local run is the split run with one partial (rank_partials.h).
class LaunchStats : public Analysis {
 public:
  std::string_view name() const override { return "launch_stats"; }
  std::string_view description() const override {
    return "launch statistics per rank (HTA): launch delay, CPU and GPU time per launch; short kernels and "
           "delay outliers (> median + k*MAD; --param k=5, min_mad_us=1, top=50)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const std::string partial = launch_partial(input.trace, input.params);
    const std::string_view one[] = {partial};
    return combine_launch_partials(one, input.params);
  }
};

// kernel_distribution's partial: per kernel name and owner, the count, total and duration
// percentiles of that owner's kernels and collectives (all the per-rank table needs, and the rank
// medians the spread table compares). Fixed-width binary, host byte order (the workers and the
// driver run the same build): u32 name length, name, then owner, count, total_ns (i64) and sum,
// p50, p90, max (f64, nanoseconds).
struct KernelRankRecord {
  std::string name;
  int64_t owner = 0, count = 0, total_ns = 0;
  double sum = 0, p50 = 0, p90 = 0, max = 0;
};

std::string kernel_partial(const trace::Trace& trace, const Params& /*params*/) {
  const std::vector<int64_t> owners = ranks::owner_of_processes(trace);
  std::map<std::pair<uint32_t, int64_t>, std::vector<double>> durations;  // (name, owner) -> ns
  std::map<std::pair<uint32_t, int64_t>, int64_t> totals;
  for (const SpanRecord& s : trace.spans) {
    if (!ranks::occupies_stream(s)) continue;
    const ActivityType a = s.activity_type();
    if (a != ActivityType::kKernel && a != ActivityType::kCollective) continue;
    durations[{s.name, owners[s.process]}].push_back(static_cast<double>(s.duration_ns()));
    totals[{s.name, owners[s.process]}] += s.duration_ns();
  }
  std::string out;
  for (auto& [key, d] : durations) {
    std::sort(d.begin(), d.end());
    double sum = 0;
    for (double v : d) sum += v;
    const std::string_view name = trace.strings.get(key.first);
    put(&out, static_cast<uint32_t>(name.size()));
    out.append(name);
    put(&out, key.second);
    put(&out, static_cast<int64_t>(d.size()));
    put(&out, totals[key]);
    for (double v : {sum, percentile_sorted(d, 50), percentile_sorted(d, 90), d.back()}) put(&out, v);
  }
  return out;
}

// name -> owner -> record, from all partials; an owner twice under one name is an error (each rank
// belongs to one partial).
using KernelRecords = std::map<std::string, std::map<int64_t, KernelRankRecord>, std::less<>>;

KernelRecords read_kernel_partials(std::span<const std::string_view> partials) {
  KernelRecords records;
  for (std::string_view in : partials) {
    while (!in.empty()) {
      KernelRankRecord r;
      const auto length = take<uint32_t>(&in);
      if (in.size() < length) throw std::runtime_error(kTruncated);
      r.name.assign(in.substr(0, length));
      in.remove_prefix(length);
      r.owner = take<int64_t>(&in), r.count = take<int64_t>(&in), r.total_ns = take<int64_t>(&in);
      r.sum = take<double>(&in), r.p50 = take<double>(&in), r.p90 = take<double>(&in);
      r.max = take<double>(&in);
      auto& by_owner = records[r.name];
      const int64_t owner = r.owner;
      if (!by_owner.emplace(owner, std::move(r)).second)
        throw std::runtime_error("kernel_distribution: " + ranks::owner_label(owner) +
                                 " is in two partials (each rank must come from one file)");
    }
  }
  return records;
}

std::vector<Cell> kernel_spread_row(const std::string& name,
                                    const std::vector<std::pair<int64_t, double>>& medians, int64_t count,
                                    int64_t total_ns) {
  auto lo = medians.begin(), hi = medians.begin();
  for (auto it = medians.begin(); it != medians.end(); ++it) {
    if (it->second < lo->second) lo = it;
    if (it->second > hi->second) hi = it;
  }
  std::vector<double> values;
  for (const auto& m : medians) values.push_back(m.second);
  const ranks::MedianMad mm = ranks::median_mad(values);
  Cell outlier = Cell::empty(), mads = Cell::empty();
  if (medians.size() >= 3 && mm.mad > 0) {
    auto far = medians.begin();
    for (auto it = medians.begin(); it != medians.end(); ++it)
      if (std::fabs(it->second - mm.median) > std::fabs(far->second - mm.median)) far = it;
    outlier = ranks::rank_cell(far->first);
    mads = Cell::real(std::fabs(far->second - mm.median) / mm.mad, 2);
  }
  return {Cell::text(name),
          Cell::integer(static_cast<int64_t>(medians.size())),
          Cell::integer(count),
          Cell::real(total_ns / 1e6, 3),
          Cell::real(lo->second / 1e3, 3),
          ranks::rank_cell(lo->first),
          Cell::real(hi->second / 1e3, 3),
          ranks::rank_cell(hi->first),
          Cell::real(lo->second > 0 ? 100.0 * (hi->second - lo->second) / lo->second : 0, 2),
          outlier,
          mads};
}

// Names ranked by total time over all ranks (ties by name), the top ones shown.
AnalysisResult combine_kernel_partials(std::span<const std::string_view> partials, const Params& params) {
  const KernelRecords records = read_kernel_partials(partials);
  if (records.empty())
    return missing("no kernels on any device: import a Kineto/nsys GPU trace or record with --level device");
  std::vector<std::pair<int64_t, const std::string*>> names;
  for (const auto& [n, by_owner] : records) {
    int64_t total = 0;
    for (const auto& [o, r] : by_owner) total += r.total_ns;
    names.emplace_back(-total, &n);
  }
  std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : *a.second < *b.second;
  });
  const int64_t top = params.get_int("top", 20);
  const size_t shown = top > 0 ? std::min(names.size(), static_cast<size_t>(top)) : names.size();
  Table per_rank = make_table("kernel_distribution", "Kernel durations per rank",
                              {"kernel", "rank", "count", "total_ms", "p50_us", "p90_us", "max_us"});
  Table spread = make_table("kernel_distribution_spread", "Kernel durations across ranks",
                            {"kernel", "ranks", "count", "total_ms", "min_p50_us", "min_p50_rank",
                             "max_p50_us", "max_p50_rank", "spread_pct", "outlier_rank", "outlier_mads"});
  for (size_t j = 0; j < shown; ++j) {
    const std::string& text = *names[j].second;
    std::vector<std::pair<int64_t, double>> medians;  // (owner, p50)
    int64_t count = 0;
    for (const auto& [o, r] : records.find(text)->second) {
      medians.emplace_back(o, r.p50);
      count += r.count;
      per_rank.rows.push_back({Cell::text(text), ranks::rank_cell(o), Cell::integer(r.count),
                               Cell::real(r.sum / 1e6, 3), Cell::real(r.p50 / 1e3, 3),
                               Cell::real(r.p90 / 1e3, 3), Cell::real(r.max / 1e3, 3)});
    }
    spread.rows.push_back(kernel_spread_row(text, medians, count, -names[j].first));
  }
  if (shown < names.size()) {
    const std::string note = "the " + std::to_string(shown) + " of " + std::to_string(names.size()) +
                             " kernels with the most total time (--param top=0 shows all)";
    per_rank.notes.push_back(note);
    spread.notes.push_back(note);
  }
  spread.notes.push_back(
      "spread: (largest - smallest rank median) / smallest; outlier: the rank whose median is furthest "
      "from the "
      "median of the ranks' medians, in MADs of those (empty with fewer than 3 ranks or a MAD of 0)");
  AnalysisResult r;
  r.tables.push_back(std::move(spread));
  r.tables.push_back(std::move(per_rank));
  return r;
}

// Per kernel name and rank: count and duration percentiles; per name across ranks: the ranks' median
// durations side by side, their spread, and the rank furthest from the others (in MADs of the
// ranks' medians). Kernels and collectives only; names ranked by total time over all ranks. The
// local run is the split run with one partial (rank_partials.h).
class KernelDistribution : public Analysis {
 public:
  std::string_view name() const override { return "kernel_distribution"; }
  std::string_view description() const override {
    return "kernel-duration distribution across ranks (HTA): per kernel count, p50, p90, max per rank and "
           "the "
           "spread across ranks, with the outlier rank (--param top=20)";
  }
  AnalysisResult run(const AnalysisInput& input) const override {
    const std::string partial = kernel_partial(input.trace, input.params);
    const std::string_view one[] = {partial};
    return combine_kernel_partials(one, input.params);
  }
};

}  // namespace

std::unique_ptr<Analysis> make_launch_stats() { return std::make_unique<LaunchStats>(); }
STRATA_REGISTER_ANALYSIS(make_launch_stats, 2500);
STRATA_REGISTER_RANK_PARTIAL(launch_stats, "launch_stats", launch_partial, combine_launch_partials);
std::unique_ptr<Analysis> make_kernel_distribution() { return std::make_unique<KernelDistribution>(); }
STRATA_REGISTER_ANALYSIS(make_kernel_distribution, 2400);
STRATA_REGISTER_RANK_PARTIAL(kernel_distribution, "kernel_distribution", kernel_partial,
                             combine_kernel_partials);

}  // namespace strata::analysis
