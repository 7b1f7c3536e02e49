#include "analysis/stats.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace strata::analysis {

Summary summarize(std::span<const double> values, double trim) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::vector<double> v(values.begin(), values.end());
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  s.min = v.front();
  s.max = v.back();
  // Kahan-free plain sums are fine here: values are latencies of similar magnitude.
  for (double x : v) s.total += x;
  s.mean = s.total / static_cast<double>(n);
  s.median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  if (n > 1) {
    double ss = 0;
    for (double x : v) ss += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(n - 1));
  }
  if (!(trim > 0)) trim = 0;  // also catches NaN
  trim = std::min(trim, 0.4999);
  s.trimmed = static_cast<size_t>(std::floor(trim * static_cast<double>(n)));
  if (2 * s.trimmed >= n) {
    s.trimmed_mean = s.median;
  } else {
    double sum = 0;
    for (size_t i = s.trimmed; i < n - s.trimmed; ++i) sum += v[i];
    s.trimmed_mean = sum / static_cast<double>(n - 2 * s.trimmed);
  }
  return s;
}

double percentile_sorted(std::span<const double> sorted, double q) {
  if (sorted.empty()) return 0;
  q = std::clamp(q, 0.0, 100.0);
  const double rank = q / 100.0 * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(rank));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - static_cast<double>(lo));
}

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return percentile_sorted(values, 50);
}

std::optional<Statistic> parse_statistic(std::string_view text) {
  if (text == "trimmed_mean" || text == "trimmed") return Statistic::kTrimmedMean;
  if (text == "mean") return Statistic::kMean;
  if (text == "median") return Statistic::kMedian;
  if (text == "min") return Statistic::kMin;
  if (text == "max") return Statistic::kMax;
  return std::nullopt;
}

std::string_view statistic_name(Statistic s) {
  switch (s) {
    case Statistic::kTrimmedMean:
      return "trimmed_mean";
    case Statistic::kMean:
      return "mean";
    case Statistic::kMedian:
      return "median";
    case Statistic::kMin:
      return "min";
    case Statistic::kMax:
      return "max";
  }
  return "?";
}

double pick(const Summary& s, Statistic which) {
  switch (which) {
    case Statistic::kTrimmedMean:
      return s.trimmed_mean;
    case Statistic::kMean:
      return s.mean;
    case Statistic::kMedian:
      return s.median;
    case Statistic::kMin:
      return s.min;
    case Statistic::kMax:
      return s.max;
  }
  return s.trimmed_mean;
}

}  // namespace strata::analysis
