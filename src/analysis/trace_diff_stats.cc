#include "analysis/trace_diff_stats.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace strata::analysis {
namespace {

// Bootstrap resamples: 2,000, fewer for a large input (at most kBootstrapDraws values drawn in all,
// and never fewer than 200), so that a trace of a million steps is not a minute's work.
int bootstrap_resamples(size_t draws_per_resample) {
  constexpr double kBootstrapDraws = 2e7;
  const double fit = kBootstrapDraws / static_cast<double>(std::max<size_t>(1, draws_per_resample));
  return static_cast<int>(std::clamp(fit, 200.0, 2000.0));
}

// Time ratios NEW/BASE and their weights; interquartile_mean: their mean over the middle half of the
// weight (sorted by ratio, a quarter cut at each end: an item whose change is its own does not move
// it), `skip` left out.
struct Ratio {
  double ratio, weight;
  size_t item;
};

double interquartile_mean(const std::vector<Ratio>& r, size_t skip) {
  double total = 0;
  for (size_t k = 0; k < r.size(); ++k) total += k == skip ? 0 : r[k].weight;
  const double lo = total / 4, hi = 3 * total / 4;
  double seen = 0, sum = 0, kept = 0;
  for (size_t k = 0; k < r.size(); ++k) {
    if (k == skip) continue;
    const double from = seen, to = seen + r[k].weight;
    seen = to;
    const double in = std::max(0.0, std::min(to, hi) - std::max(from, lo));  // this ratio's weight inside
    sum += in * r[k].ratio;
    kept += in;
  }
  return kept > 0 ? sum / kept : 1.0;
}

// The upper quartile of sorted ratios (nearest rank), `skip` left out.
double upper_quartile(const std::vector<Ratio>& r, size_t skip) {
  const size_t n = r.size() - (skip < r.size() ? 1 : 0);
  if (n == 0) return 1.0;
  size_t want = (3 * n + 3) / 4 - 1, seen = 0;  // ceil(0.75 n) - 1
  for (size_t k = 0; k < r.size(); ++k) {
    if (k == skip) continue;
    if (seen++ == want) return r[k].ratio;
  }
  return r.back().ratio;
}

}  // namespace

// Interval of mean(next) / mean(base) at level 1 - alpha: a percentile bootstrap that resamples the
// recordings of each side, then the steps within each (so the variance between recordings counts).
// Fixed seed: the same input gives the same output.
std::pair<double, double> ratio_interval(const std::vector<std::vector<double>>& a,
                                         const std::vector<std::vector<double>>& b, double alpha) {
  size_t draws = 0;
  for (const auto* side : {&a, &b})
    for (const std::vector<double>& rec : *side) draws += rec.size();
  const int resamples = bootstrap_resamples(draws);
  std::mt19937_64 rng(0x5eed34);
  auto resampled_mean = [&](const std::vector<std::vector<double>>& side) {
    double sum = 0;
    size_t count = 0;
    for (size_t r = 0; r < side.size(); ++r) {
      const std::vector<double>& rec = side[rng() % side.size()];
      for (size_t s = 0; s < rec.size(); ++s, ++count) sum += rec[rng() % rec.size()];
    }
    return count ? sum / static_cast<double>(count) : 0.0;
  };
  std::vector<double> ratios;
  ratios.reserve(static_cast<size_t>(resamples));
  for (int k = 0; k < resamples; ++k) {
    const double ma = resampled_mean(a), mb = resampled_mean(b);
    if (ma > 0) ratios.push_back(mb / ma);
  }
  if (ratios.empty()) return {1, 1};
  std::sort(ratios.begin(), ratios.end());
  auto at = [&](double q) {
    const double pos = q * static_cast<double>(ratios.size() - 1);
    return ratios[static_cast<size_t>(std::lround(pos))];
  };
  return {at(alpha / 2), at(1 - alpha / 2)};
}

// An item's time per call (BASE's; NEW's for an added one).
double per_call_ns(const DiffItem& i) {
  if (i.base_ns > 0 && i.base_count > 0) return i.base_ns / i.base_count;
  return i.new_count > 0 ? i.new_ns / i.new_count : i.new_ns;
}

// The factors: the whole one (the interquartile mean of the matched items' ratios, each item one
// vote), and each item's own, the same over the matched items whose time per call is within
// kNeighborSpan of its own (at most kNeighbors each side, itself left out): on a loaded machine short ops
// (dispatch, small tensors) slow down more than long ones (0.02 ms ops 30-80% slower while 1 ms ops were 0-3%
// slower, in the same pair of recordings), so an op is judged against ops of its own size. With fewer than
// kMinItemsForFactor neighbours, the whole factor (without the item). factor_high: the upper quartile of
// the same ratios, what the gate judges an item against (ops of one size still answer a busier machine
// differently: a convolution 13-50% slower while a max-pool and a Python loop next to it were not).
// Returns the whole factor.
double speed_factors(std::vector<DiffItem>& items, bool device) {
  std::vector<Ratio> r;
  for (size_t n = 0; n < items.size(); ++n) {
    const DiffItem& i = items[n];
    if (i.device != device || i.status != DiffStatus::kMatched || i.base_ns <= 0 || i.new_ns <= 0) continue;
    if (i.name == kBetweenOps) continue;  // not an op: it neither sets nor takes an op's factor
    // Each item one vote: an op holding a third of the time that got slower would otherwise set much
    // of the factor its neighbours are judged against.
    r.push_back({i.new_ns / i.base_ns, 1.0, n});
  }
  if (r.size() < kMinItemsForFactor) {
    for (DiffItem& i : items)
      if (i.device == device) i.factor = i.factor_high = 1;
    return 1;
  }
  std::sort(r.begin(), r.end(), [](const Ratio& x, const Ratio& y) { return x.ratio < y.ratio; });
  const double whole = interquartile_mean(r, r.size()), whole_high = upper_quartile(r, r.size());
  std::vector<std::pair<double, size_t>> by_size;  // log time per call, index into r
  for (size_t k = 0; k < r.size(); ++k) by_size.emplace_back(std::log(per_call_ns(items[r[k].item])), k);
  std::sort(by_size.begin(), by_size.end());
  const double span = std::log(kNeighborSpan);
  std::vector<Ratio> near;
  for (size_t n = 0; n < items.size(); ++n) {
    DiffItem& i = items[n];
    if (i.device != device) continue;
    i.factor = whole;
    i.factor_high = whole_high;
    // The time outside every op is a kind of its own (on a device-bound step, the host waiting for the
    // device): judged against the whole factor.
    if (i.name == kBetweenOps || per_call_ns(i) <= 0) continue;
    const double x = std::log(per_call_ns(i));
    const auto mid = std::lower_bound(by_size.begin(), by_size.end(), std::pair{x, size_t{0}});
    near.clear();
    size_t own = r.size();
    for (auto it = mid;
         it != by_size.end() && it - mid < static_cast<std::ptrdiff_t>(kNeighbors) && it->first - x <= span;
         ++it)
      r[it->second].item == n ? void(own = it->second) : near.push_back(r[it->second]);
    for (auto it = mid; it != by_size.begin() && mid - it < static_cast<std::ptrdiff_t>(kNeighbors);) {
      --it;
      if (x - it->first > span) break;
      r[it->second].item == n ? void(own = it->second) : near.push_back(r[it->second]);
    }
    if (near.size() >= kMinItemsForFactor) {
      std::sort(near.begin(), near.end(), [](const Ratio& p, const Ratio& q) { return p.ratio < q.ratio; });
      i.factor = interquartile_mean(near, near.size());
      i.factor_high = upper_quartile(near, near.size());
    } else if (own < r.size()) {
      i.factor = interquartile_mean(r, own);
      i.factor_high = upper_quartile(r, own);
    }
  }
  return whole;
}

// The total's factor: what the items' own factors make of BASE's time (their mean, weighted by it).
double effective_factor(const std::vector<DiffItem>& items, bool device) {
  double base = 0, expected = 0;
  for (const DiffItem& i : items)
    if (i.device == device && i.base_ns > 0) base += i.base_ns, expected += i.factor * i.base_ns;
  return base > 0 ? expected / base : 1.0;
}

// Interval (level 1 - alpha) of the total's change beyond the speed factor when the items are the
// samples: two processes of one program differ per op beyond any common factor (one op 5% slower, the
// next 5% faster), and the total's excess is then a weighted mean of such deviations. Resampling the
// items (each with its own factor) gives how far that alone moves it: a change spread over many
// items stays above zero, one op's chance deviation does not. Fixed seed.
std::pair<double, double> excess_interval_over_items(const std::vector<DiffItem>& items, bool device,
                                                     double alpha) {
  std::vector<const DiffItem*> pool;
  for (const DiffItem& i : items)
    if (i.device == device && (i.base_ns > 0 || i.new_ns > 0)) pool.push_back(&i);
  if (pool.size() < kMinItemsForFactor) return {-1e9, 1e9};
  const int resamples = bootstrap_resamples(pool.size());
  std::mt19937_64 rng(0x17e35);
  std::vector<double> excess;
  for (int k = 0; k < resamples; ++k) {
    double expected = 0, next = 0;
    for (size_t n = 0; n < pool.size(); ++n) {
      const DiffItem& i = *pool[rng() % pool.size()];
      expected += i.factor * i.base_ns;
      next += i.new_ns;
    }
    if (expected > 0) excess.push_back(100 * (next / expected - 1));
  }
  if (excess.empty()) return {-1e9, 1e9};
  std::sort(excess.begin(), excess.end());
  auto at = [&](double q) {
    return excess[static_cast<size_t>(std::lround(q * static_cast<double>(excess.size() - 1)))];
  };
  return {at(alpha / 2), at(1 - alpha / 2)};
}

}  // namespace strata::analysis
