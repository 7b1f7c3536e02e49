// The optimal batch size (XSP III-D1) with the noise of its inputs: the rule picks on the headline
// statistics, and the pick is called optimal only when every comparison it rests on is outside the
// noise of the evaluations it compares (a test derived from their counts; src/analysis/README.md,
// "The optimal batch size").
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stats.h"

namespace strata::analysis {

struct BatchRow {
  int64_t batch = 1;
  bool batch_known = false;
  Summary latency_ms;     // across evaluations of this batch size
  double latency = 0;     // headline statistic of latency_ms
  double throughput = 0;  // batch / latency (inputs per second)
  std::vector<size_t> evaluations;
  std::vector<double> samples_ms;  // each evaluation's latency, in the order of `evaluations`
  size_t runs = 0;                 // distinct processes the evaluations came from
};

struct BatchRule {
  double threshold = 0.05;                  // doubling must raise throughput by at least this fraction
  std::optional<double> latency_target_ms;  // instead: the largest batch meeting this latency
  double alpha = 0.05;                      // significance level of each comparison
};

// One comparison the choice rests on: batch `from` against the doubled (or next larger) batch `to`
// (throughput rule), or batch `from` against the latency target (`to` = -1).
struct BatchComparison {
  int from = -1;
  int to = -1;
  double effect =
      0;         // throughput gain of `to` over `from` (a fraction); target rule: statistic - target (ms)
  double p = 1;  // two-sided: Mann-Whitney U (throughput rule), sign test (latency target)
  bool significant = false;  // p < alpha and the test's direction agrees with the statistics'
  double best_p = 1;         // the smallest p these sample counts can give (1: no test is possible)
};

struct BatchChoice {
  int pick = -1;         // what the rule picks on the headline statistics (the XSP rule), -1: none
  bool decided = false;  // every comparison the pick rests on is significant
  std::vector<BatchComparison> comparisons;  // the ones the pick rests on, in the order made
  std::vector<std::string> notes;            // the verdict first, then how noisy its inputs were
};

// rows: ascending batch sizes, each with its samples.
BatchChoice choose_batch(const std::vector<BatchRow>& rows, const BatchRule& rule);

// The fewest evaluations per batch size (equal counts) whose exact Mann-Whitney test can reach
// p < alpha (2 / C(2n, n) < alpha); 0 when none up to 25 can.
size_t min_evaluations_for(double alpha);

}  // namespace strata::analysis
