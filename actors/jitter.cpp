#include "actors/jitter.hpp"

#include <algorithm>
#include <cmath>
#include <random>

namespace troupe::actors {

double jitter_draw() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  return std::uniform_real_distribution<double>{-1.0, 1.0}(rng);
}

std::chrono::milliseconds jittered(std::chrono::milliseconds interval, double share, double unit) {
  auto moved = static_cast<double>(interval.count()) *
               (1.0 + std::clamp(share, 0.0, 1.0) * std::clamp(unit, -1.0, 1.0));
  return std::chrono::milliseconds{std::max<long long>(1, std::llround(moved))};
}

std::chrono::milliseconds delay_to_grid(std::chrono::nanoseconds now,
                                        std::chrono::milliseconds delay,
                                        std::chrono::milliseconds grid) {
  if (grid.count() <= 0) {
    return delay;
  }
  auto due = now + delay;
  auto g = std::chrono::duration_cast<std::chrono::nanoseconds>(grid);
  auto slots = (due.count() + g.count() - 1) / g.count(); // the clock's epoch is before `now`
  auto target = std::chrono::nanoseconds{slots * g.count()};
  return std::chrono::ceil<std::chrono::milliseconds>(target - now);
}

} // namespace troupe::actors
