// Benchmark timing: the median/spread maths with known answers, the iteration count, and calibration
// on warm calls (a slow first call must not shrink every repetition to one call).
#include "lowerbound/harness/backend.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace strata::lowerbound {
namespace {

TEST(Backend, MedianAndInterquartileRangeKnownAnswers) {
  // Odd count: sorted {1, 2, 3, 4, 5}; quartiles at positions 1 and 3.
  RepetitionStats odd = summarize_repetitions({5, 1, 4, 2, 3});
  EXPECT_DOUBLE_EQ(odd.median_ns, 3);
  EXPECT_DOUBLE_EQ(odd.spread_ns, 4 - 2);
  // Even count: sorted {1, 2, 3, 10}; median at 1.5 -> 2.5; Q1 at 0.75 -> 1.75; Q3 at 2.25 -> 3 + 0.25 * 7.
  RepetitionStats even = summarize_repetitions({10, 3, 1, 2});
  EXPECT_DOUBLE_EQ(even.median_ns, 2.5);
  EXPECT_DOUBLE_EQ(even.spread_ns, 4.75 - 1.75);
  // An outlier moves neither the median nor the IQR of 5 values much: sorted {100, 101, 102, 103, 1e6}.
  RepetitionStats outlier = summarize_repetitions({103, 1e6, 100, 102, 101});
  EXPECT_DOUBLE_EQ(outlier.median_ns, 102);
  EXPECT_DOUBLE_EQ(outlier.spread_ns, 2);
  RepetitionStats one = summarize_repetitions({42});
  EXPECT_DOUBLE_EQ(one.median_ns, 42);
  EXPECT_DOUBLE_EQ(one.spread_ns, 0);
  RepetitionStats none = summarize_repetitions({});
  EXPECT_DOUBLE_EQ(none.median_ns, 0);
  EXPECT_DOUBLE_EQ(none.spread_ns, 0);
}

TEST(Backend, IterationsCoverTheMinimumRepetitionTime) {
  MeasureOptions o;
  o.min_repetition_ns = 2'000'000;
  o.max_iterations = 1000;
  EXPECT_EQ(iterations_for(20'000, o), 100);
  EXPECT_EQ(iterations_for(30'000, o), 67);    // ceil(66.7): a repetition never falls short
  EXPECT_EQ(iterations_for(3'000'000, o), 1);  // slower than a repetition: one call
  EXPECT_EQ(iterations_for(10, o), 1000);      // capped
  EXPECT_EQ(iterations_for(0, o), 1000);       // unmeasurably fast: the cap
}

void spin_for(std::chrono::nanoseconds d) {
  auto end = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < end) {
  }
}

TEST(Backend, CalibratesOnWarmCallsNotTheColdOne) {
  // A call whose first run is slow (first-touch pages, JIT compilation) and whose warm runs take 20 us:
  // sized from the cold call, a 2 ms repetition would be 1 call; from warm calls, about 100.
  int calls = 0;
  auto call = [&] {
    if (calls++ == 0)
      std::this_thread::sleep_for(std::chrono::milliseconds(30));
    else
      spin_for(std::chrono::microseconds(20));
  };
  MeasureOptions o;
  o.repetitions = 3;
  o.min_repetition_ns = 2'000'000;
  o.max_iterations = 1000;
  Measurement m = measure_calls(call, o);
  // At most 100 (a warm call takes at least 20 us); well above 1 unless every calibration batch was
  // slowed down 10-fold.
  EXPECT_LE(m.iterations, 100);
  EXPECT_GE(m.iterations, 10);
  EXPECT_EQ(m.repetitions, 3);
  ASSERT_EQ(m.per_call_ns.size(), 3u);
  EXPECT_GE(m.median_ns, 20'000);
  // The cold call is in no repetition: the median is a warm call's time, far below 30 ms.
  EXPECT_LT(m.median_ns, 1'000'000);
  RepetitionStats expected = summarize_repetitions(m.per_call_ns);
  EXPECT_DOUBLE_EQ(m.median_ns, expected.median_ns);
  EXPECT_DOUBLE_EQ(m.spread_ns, expected.spread_ns);
  EXPECT_GE(calls, 1 + 3 * m.iterations);
}

}  // namespace
}  // namespace strata::lowerbound
