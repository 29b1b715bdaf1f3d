#include "transport/poll_window.hpp"

#include <algorithm>

namespace troupe::transport {

poll_window::poll_window(duration cap, duration start) noexcept
    : cap_(std::max(cap, duration::zero())), window_(std::clamp(start, duration::zero(), cap_)) {}

bool poll_window::missed(duration idle) noexcept {
  auto before = window_;
  if (idle <= cap_) {
    // A poll within the cap would have caught it: cover it next time, with a quarter to spare
    // (and at least double, so a run of misses reaches the cap in a few steps).
    window_ = std::min(cap_, std::max({floor, window_ * 2, idle + idle / 4}));
  } else {
    // No allowed poll would have: the time polled was spent for nothing.
    window_ /= 2;
    if (window_ < floor) {
      window_ = duration::zero();
    }
  }
  return window_ != before;
}

} // namespace troupe::transport
