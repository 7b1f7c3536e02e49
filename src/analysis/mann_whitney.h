// Mann-Whitney U test (Wilcoxon rank-sum) of two independent samples, two-sided: does one tend to
// be larger than the other? For `strata diff`, so run-to-run noise is not called a regression.
#pragma once

#include <span>
#include <vector>

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

// The same test on samples given as their positive values and a count of zeros each (the per-step
// times of an op that runs in few of many steps): equal to mann_whitney_u on the samples written out,
// in time that goes with the positive values, not the zeros (the zeros are one tie at the bottom).
MannWhitney mann_whitney_u_sparse(std::span<const double> a_positive, size_t a_zeros,
                                  std::span<const double> b_positive, size_t b_zeros);

// Benjamini-Hochberg over m tests: which p-values are discoveries at false discovery rate `alpha`
// (sorted ascending, the largest rank k with p_(k) <= alpha * k / m and every rank up to it).
std::vector<bool> benjamini_hochberg(std::span<const double> p, double alpha);

}  // namespace strata::analysis
