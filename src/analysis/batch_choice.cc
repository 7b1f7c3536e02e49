#include "analysis/batch_choice.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>

#include "analysis/mann_whitney.h"

namespace strata::analysis {
namespace {

std::string format(const char* fmt, auto... args) {
  char buf[400];
  std::snprintf(buf, sizeof(buf), fmt, args...);
  return buf;
}

std::string batch_str(const BatchRow& r) { return std::to_string(r.batch); }

// The smallest two-sided Mann-Whitney p that samples of these sizes can give: the two samples
// entirely apart (no ties).
double best_mann_whitney_p(size_t m, size_t n) {
  if (m == 0 || n == 0) return 1;
  std::vector<double> a(m), b(n);
  for (size_t i = 0; i < m; ++i) a[i] = static_cast<double>(n + i);
  for (size_t i = 0; i < n; ++i) b[i] = static_cast<double>(i);
  return mann_whitney_u(a, b).p;
}

// P(X <= k) for X ~ Binomial(n, 1/2), through log-gamma so that thousands of evaluations work.
double binomial_half_cdf(size_t n, size_t k) {
  double total = 0;
  const double dn = static_cast<double>(n);
  for (size_t i = 0; i <= k && i <= n; ++i) {
    const double di = static_cast<double>(i);
    total +=
        std::exp(std::lgamma(dn + 1) - std::lgamma(di + 1) - std::lgamma(dn - di + 1) - dn * std::log(2.0));
  }
  return std::min(1.0, total);
}

// Throughput rule: does batch `to` raise throughput over batch `from` by `threshold` or more? Each
// evaluation's throughput of `to` against each of `from` scaled by 1 + threshold.
BatchComparison compare_throughput(const std::vector<BatchRow>& rows, int from, int to,
                                   const BatchRule& rule) {
  const BatchRow& a = rows[static_cast<size_t>(from)];
  const BatchRow& b = rows[static_cast<size_t>(to)];
  BatchComparison c;
  c.from = from;
  c.to = to;
  c.effect = a.throughput > 0 ? b.throughput / a.throughput - 1 : 0;
  std::vector<double> larger, scaled;
  for (double ms : b.samples_ms) larger.push_back(static_cast<double>(b.batch) / ms);
  for (double ms : a.samples_ms) scaled.push_back(static_cast<double>(a.batch) / ms * (1 + rule.threshold));
  MannWhitney mw = mann_whitney_u(larger, scaled);
  c.p = mw.p;
  c.best_p = best_mann_whitney_p(larger.size(), scaled.size());
  const bool test_says_gain = mw.u > static_cast<double>(larger.size() * scaled.size()) / 2;
  const bool statistic_says_gain = c.effect >= rule.threshold;
  c.significant = mw.p < rule.alpha && test_says_gain == statistic_says_gain;
  return c;
}

// Latency target: is the batch's latency below the target? A two-sided sign test of its evaluations
// against the target (evaluations equal to it are left out).
BatchComparison compare_target(const std::vector<BatchRow>& rows, int from, const BatchRule& rule) {
  const BatchRow& r = rows[static_cast<size_t>(from)];
  const double target = *rule.latency_target_ms;
  BatchComparison c;
  c.from = from;
  c.effect = r.latency - target;
  size_t below = 0, above = 0;
  for (double ms : r.samples_ms) {
    if (ms < target) ++below;
    if (ms > target) ++above;
  }
  const size_t n = below + above;
  if (n > 0) {
    c.p = std::min(1.0, 2 * binomial_half_cdf(n, std::min(below, above)));
    c.best_p = std::min(1.0, 2 * std::pow(0.5, static_cast<double>(n)));
  }
  c.significant = c.p < rule.alpha && (below > above) == (r.latency <= target);
  return c;
}

// How noisy the inputs were: evaluations and runs per batch size, the latencies' spread.
std::string noise_note(const std::vector<BatchRow>& rows) {
  size_t min_n = SIZE_MAX, max_n = 0, min_runs = SIZE_MAX, max_runs = 0;
  double min_cv = INFINITY, max_cv = 0;
  for (const BatchRow& r : rows) {
    min_n = std::min(min_n, r.samples_ms.size());
    max_n = std::max(max_n, r.samples_ms.size());
    min_runs = std::min(min_runs, r.runs);
    max_runs = std::max(max_runs, r.runs);
    const double cv = r.latency_ms.mean > 0 ? 100 * r.latency_ms.stddev / r.latency_ms.mean : 0;
    min_cv = std::min(min_cv, cv);
    max_cv = std::max(max_cv, cv);
  }
  auto range = [](size_t lo, size_t hi) {
    return lo == hi ? std::to_string(lo) : std::to_string(lo) + "-" + std::to_string(hi);
  };
  return format("noise: %s evaluations per batch size from %s run(s); latency stddev / mean %.1f-%.1f%%",
                range(min_n, max_n).c_str(), range(min_runs, max_runs).c_str(), min_cv, max_cv);
}

std::string comparisons_note(const std::vector<BatchRow>& rows, const BatchChoice& choice) {
  std::string out = "comparisons (throughput gain of the larger batch, Mann-Whitney p, evaluations):";
  for (const BatchComparison& c : choice.comparisons) {
    const BatchRow& a = rows[static_cast<size_t>(c.from)];
    const BatchRow& b = rows[static_cast<size_t>(c.to)];
    out += format(" %s->%s %+.1f%% p=%.3g (%zu, %zu)%s", batch_str(a).c_str(), batch_str(b).c_str(),
                  100 * c.effect, c.p, a.samples_ms.size(), b.samples_ms.size(),
                  c.significant ? "" : " inside noise");
    if (&c != &choice.comparisons.back()) out += ";";
  }
  return out;
}

// What would let a comparison that could never be significant become one.
std::string too_few(const BatchComparison& c, size_t n_from, size_t n_to, double alpha, bool target) {
  if (c.best_p < alpha) return "";
  if (target)
    return format("; %zu evaluations cannot reach p < %.3g whatever their latencies: record at least %d",
                  n_from, alpha, static_cast<int>(std::ceil(std::log2(2 / alpha) + 1e-9)));
  return format(
      "; %zu and %zu evaluations cannot reach p < %.3g whatever their latencies: record at least %zu "
      "per batch size",
      n_from, n_to, alpha, min_evaluations_for(alpha));
}

void decide_throughput(const std::vector<BatchRow>& rows, const BatchRule& rule, BatchChoice* choice) {
  const int n = static_cast<int>(rows.size());
  for (int i = 0; i < n && choice->pick < 0; ++i) {
    // The doubled batch size, or the next larger one measured.
    int j = i + 1;
    while (j < n && rows[static_cast<size_t>(j)].batch < 2 * rows[static_cast<size_t>(i)].batch) ++j;
    if (j == n) {
      if (i + 1 == n) {
        choice->pick = i;
        break;
      }
      j = n - 1;
    }
    choice->comparisons.push_back(compare_throughput(rows, i, j, rule));
    if (choice->comparisons.back().effect < rule.threshold) choice->pick = i;
  }
  const BatchRow& pick = rows[static_cast<size_t>(choice->pick)];
  const BatchComparison* undecided = nullptr;
  for (const BatchComparison& c : choice->comparisons)
    if (!c.significant && !undecided) undecided = &c;
  choice->decided = undecided == nullptr;
  const double pct = rule.threshold * 100;
  if (!choice->decided) {
    const BatchRow& a = rows[static_cast<size_t>(undecided->from)];
    const BatchRow& b = rows[static_cast<size_t>(undecided->to)];
    choice->notes.push_back(
        format("no optimal batch size: %s -> %s (%+.1f%% throughput, threshold %.1f%%) is inside "
               "the noise (Mann-Whitney p = %.3g over %zu and %zu evaluations, alpha %.3g)%s; on "
               "the statistics alone the rule picks %s",
               batch_str(a).c_str(), batch_str(b).c_str(), 100 * undecided->effect, pct, undecided->p,
               a.samples_ms.size(), b.samples_ms.size(), rule.alpha,
               too_few(*undecided, a.samples_ms.size(), b.samples_ms.size(), rule.alpha, false).c_str(),
               batch_str(pick).c_str()));
  } else if (choice->pick + 1 == n) {
    choice->notes.push_back(
        format("optimal batch size %s: every doubling measured raised throughput by %.1f%% or "
               "more, each outside the noise (Mann-Whitney, alpha %.3g); larger batch sizes "
               "were not measured",
               batch_str(pick).c_str(), pct, rule.alpha));
  } else {
    choice->notes.push_back(
        format("optimal batch size %s: the smallest where doubling raises throughput by less "
               "than %.1f%%, each comparison outside the noise (Mann-Whitney, alpha %.3g)",
               batch_str(pick).c_str(), pct, rule.alpha));
  }
  choice->notes.push_back(comparisons_note(rows, *choice));
}

void decide_target(const std::vector<BatchRow>& rows, const BatchRule& rule, BatchChoice* choice) {
  const double target = *rule.latency_target_ms;
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i].latency <= target) choice->pick = static_cast<int>(i);
  // The pick meets the target and every larger batch misses it; without a pick, every batch misses.
  for (size_t i = static_cast<size_t>(std::max(choice->pick, 0)); i < rows.size(); ++i)
    choice->comparisons.push_back(compare_target(rows, static_cast<int>(i), rule));
  const BatchComparison* undecided = nullptr;
  for (const BatchComparison& c : choice->comparisons)
    if (!c.significant && !undecided) undecided = &c;
  choice->decided = undecided == nullptr;
  if (!choice->decided) {
    const BatchRow& r = rows[static_cast<size_t>(undecided->from)];
    size_t below = 0;
    for (double ms : r.samples_ms) below += ms < target;
    const std::string alone = choice->pick >= 0
                                  ? "the rule picks " + batch_str(rows[static_cast<size_t>(choice->pick)])
                                  : "no batch size meets it";
    choice->notes.push_back(
        format("no optimal batch size: whether batch size %s meets the %.3f ms target is inside "
               "the noise (sign test p = %.3g: %zu of %zu evaluations below it, alpha %.3g)%s; "
               "on the statistics alone %s",
               batch_str(r).c_str(), target, undecided->p, below, r.samples_ms.size(), rule.alpha,
               too_few(*undecided, r.samples_ms.size(), 0, rule.alpha, true).c_str(), alone.c_str()));
  } else if (choice->pick >= 0) {
    choice->notes.push_back(
        format("optimal batch size %s: the largest whose latency meets the %.3f ms target, "
               "outside the noise (sign test, alpha %.3g)",
               batch_str(rows[static_cast<size_t>(choice->pick)]).c_str(), target, rule.alpha));
  } else {
    choice->notes.push_back(
        format("no batch size meets the %.3f ms latency target (each misses it outside the "
               "noise: sign test, alpha %.3g)",
               target, rule.alpha));
  }
}

}  // namespace

size_t min_evaluations_for(double alpha) {
  for (size_t n = 1; n <= 25; ++n)
    if (best_mann_whitney_p(n, n) < alpha) return n;
  return 0;
}

BatchChoice choose_batch(const std::vector<BatchRow>& rows, const BatchRule& rule) {
  BatchChoice choice;
  if (rows.empty()) return choice;
  if (rule.latency_target_ms) {
    decide_target(rows, rule, &choice);
  } else if (rows.size() == 1) {
    choice.pick = 0;
    choice.notes.push_back(
        format("no optimal batch size: only batch size %s was measured (%zu evaluations): "
               "record several batch sizes to choose one",
               batch_str(rows[0]).c_str(), rows[0].samples_ms.size()));
  } else {
    decide_throughput(rows, rule, &choice);
  }
  choice.notes.push_back(noise_note(rows));
  return choice;
}

}  // namespace strata::analysis
