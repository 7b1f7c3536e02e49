#include "collect/clock.h"

#include <time.h>

#include "strata/detail/hot_path.h"

namespace strata::collect {

int64_t monotonic_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t realtime_ns() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

namespace {
// A (ticks, ns) pair read as close together as possible: the tick read bracketed by two clock reads,
// keeping the tightest of a few tries so preemption does not skew the calibration.
void paired_reading(uint64_t* ticks, int64_t* ns) {
  int64_t best_gap = INT64_MAX;
  for (int i = 0; i < 5; ++i) {
    int64_t a = monotonic_ns();
    uint64_t t = detail::now_ticks();
    int64_t b = monotonic_ns();
    if (b - a < best_gap) {
      best_gap = b - a;
      *ticks = t;
      *ns = a + (b - a) / 2;
    }
  }
}
}  // namespace

void TickClock::calibrate(int64_t window_ns) {
  paired_reading(&tick0_, &mono0_);
#if defined(__x86_64__)
  uint64_t t1 = 0;
  int64_t m1 = 0;
  timespec pause{0, static_cast<long>(window_ns)};
  nanosleep(&pause, nullptr);
  paired_reading(&t1, &m1);
  if (t1 > tick0_ && m1 > mono0_) ns_per_tick_ = static_cast<double>(m1 - mono0_) / static_cast<double>(t1 - tick0_);
#else
  (void)window_ns;
  ns_per_tick_ = 1.0;  // now_ticks() is CLOCK_MONOTONIC in ns on other architectures
#endif
}

}  // namespace strata::collect
