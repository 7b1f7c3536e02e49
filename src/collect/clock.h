// Clocks of the collector. Span sites read the CPU's time-stamp counter (cheapest clock on x86);
// the writer converts ticks to CLOCK_MONOTONIC ns with a calibration taken when recording starts.
#pragma once

#include <cstdint>

namespace strata::collect {

int64_t monotonic_ns();
int64_t realtime_ns();

class TickClock {
 public:
  // Measures ticks per ns against CLOCK_MONOTONIC over about `window_ns`.
  void calibrate(int64_t window_ns = 10'000'000);
  int64_t to_ns(uint64_t ticks) const {
    return mono0_ + static_cast<int64_t>(static_cast<double>(static_cast<int64_t>(ticks - tick0_)) * ns_per_tick_);
  }
  double ns_per_tick() const { return ns_per_tick_; }
  uint64_t tick0() const { return tick0_; }
  int64_t mono0() const { return mono0_; }

 private:
  uint64_t tick0_ = 0;
  int64_t mono0_ = 0;
  double ns_per_tick_ = 1.0;
};

}  // namespace strata::collect
