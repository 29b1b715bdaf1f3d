#include "actors/health_jitter.hpp"

#include <algorithm>
#include <random>

namespace troupe::actors {

std::chrono::milliseconds jittered_interval(std::chrono::milliseconds interval,
                                            unsigned jitter_percent, std::uint64_t random) {
  auto percent = std::min(jitter_percent, 100u);
  auto span = interval.count() * static_cast<std::int64_t>(percent) / 100; // either way
  if (span <= 0) {
    return interval;
  }
  auto width = static_cast<std::uint64_t>(2 * span + 1); // -span .. +span
  auto offset = static_cast<std::int64_t>(random % width) - span;
  return std::max(std::chrono::milliseconds{1}, interval + std::chrono::milliseconds{offset});
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

std::uint64_t health_jitter_random() {
  thread_local std::mt19937_64 gen{std::random_device{}()};
  return gen();
}

} // namespace troupe::actors
