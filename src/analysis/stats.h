// Summary statistics for repeated measurements (runs, evaluations, op instances). One place, so
// every analysis summarizes the same way: XSP III-D reports the trimmed mean across runs; Zins
// reports mean, count and standard deviation per op.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::analysis {

struct Summary {
  size_t count = 0;
  double total = 0;
  double mean = 0;
  double trimmed_mean = 0;  // mean after dropping floor(trim * count) values at each end
  double median = 0;
  double min = 0;
  double max = 0;
  double stddev = 0;   // sample standard deviation (n - 1); 0 for fewer than two values
  size_t trimmed = 0;  // values dropped at each end for the trimmed mean
};

// Summarizes `values` (order does not matter; the span is copied, not reordered). `trim` is the
// fraction dropped at each end, clamped to [0, 0.5); when it would drop everything, the median
// is used. An empty input gives an all-zero Summary with count 0.
Summary summarize(std::span<const double> values, double trim = 0.1);

// The q-th percentile (q in [0, 100]) of values sorted ascending, interpolating linearly between
// the closest ranks (NumPy's default); 0 for an empty input.
double percentile_sorted(std::span<const double> sorted, double q);

// The median of `values` in any order (the mean of the two middle ones for an even count); 0 for none.
double median(std::vector<double> values);

// The statistic used as the headline value of repeated measurements (--param stat=...).
enum class Statistic { kTrimmedMean, kMean, kMedian, kMin, kMax };
std::optional<Statistic> parse_statistic(std::string_view text);
std::string_view statistic_name(Statistic s);
double pick(const Summary& s, Statistic which);

}  // namespace strata::analysis
