#include "analysis/mann_whitney.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

namespace strata::analysis {
namespace {

// P(U <= u) under the null hypothesis for sample sizes m, n without ties: counts[m][n][u] of the
// orderings, by counts(m, n, u) = counts(m - 1, n, u - n) + counts(m, n - 1, u) (the largest value
// belongs to the first sample, contributing n pairs, or to the second, contributing none).
double exact_cdf(size_t m, size_t n, double u) {
  const size_t max_u = m * n;
  // layer[j][k]: orderings of i values of the first sample and j of the second with U = k.
  std::vector<std::vector<double>> prev(n + 1, std::vector<double>(max_u + 1, 0.0)), cur = prev;
  for (size_t j = 0; j <= n; ++j) prev[j][0] = 1;  // i = 0: U = 0, one ordering
  for (size_t i = 1; i <= m; ++i) {
    for (size_t j = 0; j <= n; ++j) {
      std::fill(cur[j].begin(), cur[j].end(), 0.0);
      for (size_t k = 0; k <= i * j; ++k) {
        double c = 0;
        if (k >= j) c += prev[j][k - j];
        if (j > 0) c += cur[j - 1][k];
        cur[j][k] = c;
      }
    }
    std::swap(prev, cur);
  }
  double total = 0, below = 0;
  for (size_t k = 0; k <= max_u; ++k) {
    total += prev[n][k];
    if (static_cast<double>(k) <= u + 1e-9) below += prev[n][k];
  }
  return below / total;
}

}  // namespace

MannWhitney mann_whitney_u(std::span<const double> a, std::span<const double> b) {
  MannWhitney r;
  const size_t m = a.size(), n = b.size();
  if (m == 0 || n == 0) return r;
  std::vector<std::pair<double, int>> all;  // value, sample (0: a)
  all.reserve(m + n);
  for (double v : a) all.emplace_back(v, 0);
  for (double v : b) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end());
  const double total = static_cast<double>(m + n);
  double rank_sum_a = 0, tie_term = 0;
  bool ties = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double midrank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_sum_a += midrank;
    if (t > 1) {
      ties = true;
      tie_term += t * t * t - t;
    }
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  r.u = rank_sum_a - dm * (dm + 1) / 2;
  const double mean = dm * dn / 2;
  if (!ties && m <= 25 && n <= 25) {
    const double lower = exact_cdf(m, n, std::min(r.u, dm * dn - r.u));  // the distribution is symmetric
    r.p = std::min(1.0, 2 * lower);
    r.exact = true;
    return r;
  }
  const double variance = dm * dn / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) return r;  // every value equal: no evidence either way
  const double z = std::max(0.0, std::fabs(r.u - mean) - 0.5) / std::sqrt(variance);
  r.p = std::min(1.0, std::erfc(z / std::sqrt(2.0)));
  return r;
}

MannWhitney mann_whitney_u_sparse(std::span<const double> a_positive, size_t a_zeros,
                                  std::span<const double> b_positive, size_t b_zeros) {
  const size_t m = a_positive.size() + a_zeros, n = b_positive.size() + b_zeros, zeros = a_zeros + b_zeros;
  // Without a tie of zeros, or small enough for the exact path: the samples written out.
  if (zeros < 2 || (m <= 25 && n <= 25)) {
    std::vector<double> a(a_positive.begin(), a_positive.end()), b(b_positive.begin(), b_positive.end());
    a.resize(m, 0.0);
    b.resize(n, 0.0);
    return mann_whitney_u(a, b);
  }
  MannWhitney r;
  std::vector<std::pair<double, int>> all;  // positive values, sample (0: a)
  all.reserve(a_positive.size() + b_positive.size());
  for (double v : a_positive) all.emplace_back(v, 0);
  for (double v : b_positive) all.emplace_back(v, 1);
  std::sort(all.begin(), all.end());
  const double z = static_cast<double>(zeros), total = static_cast<double>(m + n);
  // The zeros hold ranks 1..z (midrank (z + 1) / 2); the positive values follow.
  double rank_sum_a = static_cast<double>(a_zeros) * (z + 1) / 2, tie_term = z * z * z - z;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) ++j;
    const double t = static_cast<double>(j - i);
    const double midrank = z + (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;
    for (size_t k = i; k < j; ++k)
      if (all[k].second == 0) rank_sum_a += midrank;
    if (t > 1) tie_term += t * t * t - t;
    i = j;
  }
  const double dm = static_cast<double>(m), dn = static_cast<double>(n);
  r.u = rank_sum_a - dm * (dm + 1) / 2;
  const double variance = dm * dn / 12 * ((total + 1) - tie_term / (total * (total - 1)));
  if (variance <= 0) return r;
  const double zscore = std::max(0.0, std::fabs(r.u - dm * dn / 2) - 0.5) / std::sqrt(variance);
  r.p = std::min(1.0, std::erfc(zscore / std::sqrt(2.0)));
  return r;
}

std::vector<bool> benjamini_hochberg(std::span<const double> p, double alpha) {
  std::vector<size_t> order(p.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) { return p[x] < p[y]; });
  size_t passed = 0;
  const double m = static_cast<double>(p.size());
  for (size_t k = 0; k < order.size(); ++k)
    if (p[order[k]] <= alpha * static_cast<double>(k + 1) / m) passed = k + 1;
  std::vector<bool> out(p.size(), false);
  for (size_t k = 0; k < passed; ++k) out[order[k]] = true;
  return out;
}

}  // namespace strata::analysis
