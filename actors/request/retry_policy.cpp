#include "actors/request/retry_policy.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::actors {

bool retryable_status(unsigned status) noexcept {
  switch (status) {
  case 408:
  case 429:
  case 500:
  case 502:
  case 503:
  case 504:
    return true;
  default:
    return false;
  }
}

std::chrono::milliseconds retry_backoff(const retry_config& cfg, unsigned retry, double unit) {
  auto cap = static_cast<double>(cfg.max_backoff.count());
  // The power is capped before it can overflow: past the cap, every wait is the cap.
  auto base = std::min(cap, static_cast<double>(cfg.initial_backoff.count()) *
                                std::pow(std::max(cfg.multiplier, 1.0), std::min(retry, 64u)));
  auto moved = base * (1.0 + cfg.jitter * std::clamp(unit, -1.0, 1.0));
  return std::chrono::milliseconds(std::max<long long>(0, std::llround(moved)));
}

} // namespace troupe::actors
