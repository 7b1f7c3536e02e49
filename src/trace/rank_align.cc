#include "trace/rank_align.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_map>

namespace strata::trace {
namespace {

// Matched ends a slope is fitted from (fewer: the offset alone).
constexpr size_t kMinSlopePoints = 5;

struct Pair {
  int64_t rank_end;
  int64_t ref_end;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  return (hi + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
}

double mad(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> dev(v.size());
  for (size_t i = 0; i < v.size(); ++i) dev[i] = std::fabs(v[i] - m);
  return median(std::move(dev));
}

// Collective kernel ends per rank and name, in time order.
using EndsByName = std::map<uint32_t, std::vector<int64_t>>;

// Pairs of one name: the k-th end on the rank with the (k+s)-th on the reference, for the shift s
// that makes the differences most consistent (ranks whose profiling windows start at different
// calls). At least half the shorter list must pair.
void match_name(const std::vector<int64_t>& rank, const std::vector<int64_t>& ref, std::vector<Pair>* out) {
  const int64_t nr = static_cast<int64_t>(rank.size()), nf = static_cast<int64_t>(ref.size());
  const int64_t need = std::max<int64_t>(1, (3 * std::min(nr, nf) + 3) / 4);
  const int64_t max_shift = std::min<int64_t>(16, std::max(nr, nf) - 1);
  // The spread of each shift; the smallest |shift| whose spread is near the best wins: a training
  // loop repeats, so a shift by one step's calls can fit as well, and ranks profiled by one
  // schedule start at the same call.
  std::vector<std::pair<int64_t, double>> spreads;
  double best = INFINITY;
  std::vector<double> d;
  for (int64_t step = 0; step <= 2 * max_shift; ++step) {
    const int64_t s = (step % 2 == 0 ? 1 : -1) * ((step + 1) / 2);  // 0, -1, 1, -2, 2, ...
    d.clear();
    for (int64_t i = std::max<int64_t>(0, -s); i < nr && i + s < nf; ++i)
      d.push_back(time_difference(ref[static_cast<size_t>(i + s)], rank[static_cast<size_t>(i)]));
    if (static_cast<int64_t>(d.size()) < need) continue;
    const double spread = d.size() > 1 ? mad(d) : 0;
    spreads.push_back({s, spread});
    best = std::min(best, spread);
  }
  if (!std::isfinite(best)) return;
  int64_t best_shift = 0;
  for (const auto& [s, spread] : spreads)
    if (spread <= 1.5 * best + 1000) {
      best_shift = s;
      break;
    }
  for (int64_t i = std::max<int64_t>(0, -best_shift); i < nr && i + best_shift < nf; ++i)
    out->push_back({rank[static_cast<size_t>(i)], ref[static_cast<size_t>(i + best_shift)]});
}

struct Fit {
  double c = 0, e = 0;  // ref - t = c + e (t - x0)
  int64_t x0 = 0;
  int64_t bound_ns = -1;
  double sigma_ns = 0;  // spread of the kept ends about the line
  uint32_t rejected = 0;
  bool slope = false;
};

// Robust line through (x, y): Theil-Sen, outliers beyond 4 robust sigmas dropped, least squares on
// the rest; offset only when the points cannot carry a slope.
Fit fit_clock(const std::vector<Pair>& pairs) {
  Fit f;
  const size_t n = pairs.size();
  f.x0 = pairs.front().rank_end;
  int64_t quantum = 1000;
  for (const Pair& p : pairs)
    if (p.rank_end % 1000 != 0 || p.ref_end % 1000 != 0) quantum = 1;
  std::vector<double> x(n), y(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = time_difference(pairs[i].rank_end, f.x0);
    y[i] = time_difference(pairs[i].ref_end, pairs[i].rank_end);
  }
  const double x_range = *std::max_element(x.begin(), x.end()) - *std::min_element(x.begin(), x.end());
  f.slope = n >= kMinSlopePoints && x_range > 0;
  if (f.slope) {
    std::vector<size_t> order(n);
    for (size_t i = 0; i < n; ++i) order[i] = i;
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
    std::vector<double> slopes;
    auto add = [&](size_t a, size_t b) {
      if (x[b] != x[a]) slopes.push_back((y[b] - y[a]) / (x[b] - x[a]));
    };
    if (n <= 400) {
      for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) add(i, j);
    } else {
      for (size_t i = 0; i + n / 2 < n; ++i) add(order[i], order[i + n / 2]);
    }
    f.e = slopes.empty() ? 0 : median(std::move(slopes));
  }
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = y[i] - f.e * x[i];
  f.c = median(r);
  for (size_t i = 0; i < n; ++i) r[i] -= f.c;
  const double sigma = 1.4826 * mad(r);
  const double limit = std::max(4 * sigma, static_cast<double>(quantum));
  std::vector<size_t> in;
  for (size_t i = 0; i < n; ++i)
    if (std::fabs(r[i]) <= limit) in.push_back(i);
  f.rejected = static_cast<uint32_t>(n - in.size());
  const double m = static_cast<double>(in.size());
  double xm = 0, ym = 0;
  for (size_t i : in) xm += x[i] / m, ym += y[i] / m;
  double sxx = 0, sxy = 0, x_far = 0;
  for (size_t i : in) {
    sxx += (x[i] - xm) * (x[i] - xm);
    sxy += (x[i] - xm) * (y[i] - ym);
    x_far = std::max(x_far, std::fabs(x[i] - xm));
  }
  f.slope = f.slope && in.size() >= kMinSlopePoints && sxx > 0;
  f.e = f.slope ? sxy / sxx : 0;
  f.c = ym - f.e * xm;
  double ss = 0;
  for (size_t i : in) ss += std::pow(y[i] - f.c - f.e * x[i], 2);
  const double dof = m - (f.slope ? 2 : 1);
  if (dof < 1) return f;  // one match: no spread to state a bound from
  const double s = std::sqrt(ss / dof);
  f.sigma_ns = s;
  // A 99% confidence band for the whole line over the matched window (Working-Hotelling:
  // sqrt(2 F(0.99; 2, dof)), with F's closed form for 2 numerator degrees of freedom), so a few
  // matches give a wide bound rather than an optimistic one.
  const double band = std::sqrt(2 * (dof / 2) * (std::pow(0.01, -2 / dof) - 1));
  double bound = f.slope ? band * s * std::sqrt(1 / m + x_far * x_far / sxx)
                         : band * s / std::sqrt(m) + kAssumedMaxDriftPpm * 1e-6 * x_far;
  bound += quantum / 2.0;
  f.bound_ns = static_cast<int64_t>(std::ceil(bound));
  return f;
}

int64_t corrected(const Fit& f, int64_t t) {
  return add_time_ns(t, clamp_to_time_ns(f.c + f.e * time_difference(t, f.x0)));
}

std::string format_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v == 0 ? 0.0 : v);  // never "-0"
  return buf;
}

void store(Process* p, const RankClock& c, int64_t reference) {
  p->properties.set("clock.method", c.method);
  p->properties.set("clock.reference_rank", std::to_string(reference));
  p->properties.set_int("clock.offset_ns", static_cast<int64_t>(std::llround(c.offset_ns)));
  p->properties.set("clock.drift_ppm", format_double(c.drift_ppm));
  p->properties.set_int("clock.uncertainty_ns", c.uncertainty_ns);
  p->properties.set_int("clock.matched", c.matched);
  p->properties.set_int("clock.rejected", c.rejected);
  p->properties.set_int("clock.residual_p90_ns", c.residual_p90_ns);
}

}  // namespace

int64_t process_rank(const Process& process) {
  if (auto rank = process.properties.get_int("rank")) return *rank;
  // Kineto traces imported before the importer stated ranks keep Kineto's distributedInfo object
  // ({"backend": "nccl", "rank": 0, "world_size": 128}) as it was.
  const auto info = process.properties.get("import.meta.distributedInfo");
  if (!info) return -1;
  const size_t at = info->find("\"rank\"");
  if (at == std::string_view::npos) return -1;
  size_t i = info->find(':', at);
  if (i == std::string_view::npos) return -1;
  for (++i; i < info->size() && (*info)[i] == ' ';) ++i;
  int64_t rank = -1;
  auto [ptr, ec] = std::from_chars(info->data() + i, info->data() + info->size(), rank);
  return ec == std::errc() && rank >= 0 ? rank : -1;
}

size_t make_pids_unique_across_ranks(Trace* trace) {
  std::map<int64_t, int64_t> rank_of_pid;
  std::set<int64_t> taken;
  for (const Process& p : trace->processes) taken.insert(p.pid);
  size_t renumbered = 0;
  for (Process& p : trace->processes) {
    const int64_t rank = process_rank(p);
    auto [it, fresh] = rank_of_pid.emplace(p.pid, rank);
    if (fresh || it->second == rank) continue;
    int64_t pid = p.pid + (std::max<int64_t>(rank, 0) + 1) * (int64_t{1} << 22);
    while (taken.count(pid)) pid += int64_t{1} << 22;
    p.properties.set_int("pid.recorded", p.pid);
    p.pid = pid;
    taken.insert(pid);
    rank_of_pid.emplace(pid, rank);
    ++renumbered;
  }
  return renumbered;
}

std::vector<RankClock> align_rank_clocks(Trace* trace, const AlignOptions& options) {
  std::map<int64_t, std::vector<uint16_t>> processes_of;  // rank -> processes
  for (size_t p = 0; p < trace->processes.size(); ++p) {
    const int64_t rank = process_rank(trace->processes[p]);
    if (rank >= 0) processes_of[rank].push_back(static_cast<uint16_t>(p));
  }
  std::vector<RankClock> out;
  if (processes_of.empty()) return out;
  const int64_t reference =
      processes_of.count(options.reference_rank) ? options.reference_rank : processes_of.begin()->first;
  std::vector<int64_t> rank_of_process(trace->processes.size(), -1);
  for (const auto& [rank, procs] : processes_of)
    for (uint16_t p : procs) rank_of_process[p] = rank;
  std::unordered_map<int64_t, EndsByName> ends;
  for (const SpanRecord& s : trace->spans)
    if (s.activity_type() == ActivityType::kCollective && rank_of_process[s.process] >= 0)
      ends[rank_of_process[s.process]][s.name].push_back(s.end_ns);
  for (auto& [rank, by_name] : ends)
    for (auto& [name, list] : by_name) std::sort(list.begin(), list.end());
  auto host_of = [&](int64_t rank) {
    for (uint16_t p : processes_of[rank])
      if (!trace->processes[p].host.empty()) return trace->processes[p].host;
    return std::string();
  };
  const std::string reference_host = host_of(reference);
  std::vector<Fit> fits;
  for (const auto& [rank, procs] : processes_of) {
    RankClock c;
    c.rank = rank;
    c.host = host_of(rank);
    Fit fit;
    std::vector<Pair> pairs;
    for (const auto& [name, list] : ends[rank]) {
      auto it = ends[reference].find(name);
      if (it != ends[reference].end()) match_name(list, it->second, &pairs);
    }
    c.matched = static_cast<uint32_t>(pairs.size());
    if (rank == reference) {
      c.method = "reference", c.uncertainty_ns = 0;
    } else if (options.same_host_shares_clock && !c.host.empty() && c.host == reference_host) {
      c.method = "same_host", c.uncertainty_ns = 0;
    } else if (pairs.empty()) {
      c.method = "none";
    } else {
      std::sort(pairs.begin(), pairs.end(),
                [](const Pair& a, const Pair& b) { return a.rank_end < b.rank_end; });
      fit = fit_clock(pairs);
      c.method = fit.slope ? "fit" : "offset_only";
      c.rejected = fit.rejected;
      // Ends that scatter by more than max_sigma_ns about any line, or a majority of outliers, are
      // not simultaneous events (point-to-point kernels, unmatched windows): nothing is moved.
      if (fit.sigma_ns > options.max_sigma_ns || 10 * fit.rejected > 4 * pairs.size()) {
        c.method = "unreliable";
        fit = Fit{};
      }
      c.offset_ns = fit.c, c.drift_ppm = -fit.e * 1e6 / (1 + fit.e);
      c.uncertainty_ns = fit.bound_ns;
    }
    if (!pairs.empty()) {
      std::vector<double> err(pairs.size());
      for (size_t i = 0; i < pairs.size(); ++i)
        err[i] = std::fabs(time_difference(corrected(fit, pairs[i].rank_end), pairs[i].ref_end));
      const size_t k = std::min(err.size() - 1, (err.size() * 9) / 10);
      std::nth_element(err.begin(), err.begin() + static_cast<std::ptrdiff_t>(k), err.end());
      c.residual_p90_ns = static_cast<int64_t>(std::llround(err[k]));
    }
    for (uint16_t p : procs) store(&trace->processes[p], c, reference);
    out.push_back(std::move(c));
    fits.push_back(fit);
  }
  if (!options.apply) return out;
  std::vector<int> fit_of_process(trace->processes.size(), -1);
  size_t k = 0;
  for (const auto& [rank, procs] : processes_of) {
    if (out[k].method == "fit" || out[k].method == "offset_only")
      for (uint16_t p : procs) fit_of_process[p] = static_cast<int>(k);
    ++k;
  }
  for (SpanRecord& s : trace->spans) {
    const int f = fit_of_process[s.process];
    if (f < 0) continue;
    s.start_ns = corrected(fits[static_cast<size_t>(f)], s.start_ns);
    s.end_ns = corrected(fits[static_cast<size_t>(f)], s.end_ns);
  }
  trace->invalidate_structure();
  return out;
}

}  // namespace strata::trace
