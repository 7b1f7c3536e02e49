// Mann-Whitney U test (Wilcoxon rank-sum) of two independent samples, two-sided: does one tend to
// be larger than the other? For `strata diff`, so run-to-run noise is not called a regression.
#pragma once

#include <span>

namespace strata::analysis {

struct MannWhitney {
  double u = 0;        // U of the first sample: pairs (a, b) with a > b, ties counted 1/2
  double p = 1;        // two-sided p-value
  bool exact = false;  // p from the exact distribution (no ties, small samples), else normal approx.
};

// Exact p when there are no ties and both samples have at most 25 values (the distribution of U by
// the standard recurrence); otherwise the normal approximation with tie correction of the variance
// and a continuity correction. Empty samples give p = 1.
MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b);

}  // namespace strata::analysis
