// The statistics of `strata diff` (trace_diff.h, docs/diff.md): the speed factors each item is judged
// against, and the bootstrap intervals of the totals.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "analysis/trace_diff.h"

namespace strata::analysis {

// An item's time per call (BASE's; NEW's for an added one).
double per_call_ns(const DiffItem& item);

// Sets factor and factor_high of every item of the domain (host or device); returns the whole factor.
double speed_factors(std::vector<DiffItem>& items, bool device);

// The total's factor: what the items' own factors make of BASE's time (their mean, weighted by it).
double effective_factor(const std::vector<DiffItem>& items, bool device);

// Interval of mean(next) / mean(base) at level 1 - alpha, per recording then per step.
std::pair<double, double> ratio_interval(const std::vector<std::vector<double>>& base,
                                         const std::vector<std::vector<double>>& next, double alpha);

// Interval (percent) of the total's change beyond the factor with the items as the samples.
std::pair<double, double> excess_interval_over_items(const std::vector<DiffItem>& items, bool device,
                                                     double alpha);

}  // namespace strata::analysis
