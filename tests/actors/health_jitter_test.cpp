#include "actors/health_jitter.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <random>
#include <set>

using std::chrono::milliseconds;
using troupe::actors::health_jitter_random;
using troupe::actors::jittered_interval;

TEST_CASE("jittered_interval without a jitter is the interval", "[health_jitter]") {
  for (std::uint64_t r : {std::uint64_t{0}, std::uint64_t{1}, std::uint64_t{12345},
                          std::numeric_limits<std::uint64_t>::max()}) {
    CHECK(jittered_interval(milliseconds{60000}, 0, r) == milliseconds{60000});
  }
}

TEST_CASE("jittered_interval stays within the jitter, both ends reached", "[health_jitter]") {
  const milliseconds interval{10000};
  // The offset is random % (2 * span + 1) - span: the extremes of the range are its ends.
  CHECK(jittered_interval(interval, 10, 0) == milliseconds{9000});
  CHECK(jittered_interval(interval, 10, 2000) == milliseconds{11000});
  CHECK(jittered_interval(interval, 10, 1000) == interval);
  std::mt19937_64 gen{42};
  milliseconds lo = interval;
  milliseconds hi = interval;
  std::set<long long> seen;
  for (int i = 0; i < 10000; ++i) {
    auto d = jittered_interval(interval, 10, gen());
    REQUIRE(d >= milliseconds{9000});
    REQUIRE(d <= milliseconds{11000});
    lo = std::min(lo, d);
    hi = std::max(hi, d);
    seen.insert(d.count());
  }
  // Spread over the range, not bunched: 10,000 draws over 2,001 values.
  CHECK(lo < milliseconds{9100});
  CHECK(hi > milliseconds{10900});
  CHECK(seen.size() > 1500);
}

TEST_CASE("jittered_interval caps the share at 100% and never reaches zero", "[health_jitter]") {
  const milliseconds interval{1000};
  for (std::uint64_t r = 0; r < 5000; r += 7) {
    auto d = jittered_interval(interval, 250, r);
    CHECK(d >= milliseconds{1});
    CHECK(d <= milliseconds{2000});
  }
  CHECK(jittered_interval(milliseconds{1}, 50, 0) == milliseconds{1}); // too short to move
}

TEST_CASE("health_jitter_random is not one value", "[health_jitter]") {
  std::set<std::uint64_t> values;
  for (int i = 0; i < 16; ++i) {
    values.insert(health_jitter_random());
  }
  CHECK(values.size() > 1);
}

TEST_CASE("delay_to_grid lands on the next grid point at or after the due time",
          "[health_jitter]") {
  using std::chrono::nanoseconds;
  using troupe::actors::delay_to_grid;
  const milliseconds grid{100};
  // Due exactly on a grid point: no later.
  CHECK(delay_to_grid(nanoseconds{0}, milliseconds{500}, grid) == milliseconds{500});
  CHECK(delay_to_grid(milliseconds{1000}, milliseconds{500}, grid) == milliseconds{500});
  // Due between two: the next one.
  CHECK(delay_to_grid(milliseconds{1030}, milliseconds{500}, grid) == milliseconds{570});
  CHECK(delay_to_grid(milliseconds{1000}, milliseconds{501}, grid) == milliseconds{600});
  // Sub-millisecond clocks: the delay is rounded up, never before the grid point.
  CHECK(delay_to_grid(nanoseconds{1'000'000'400}, milliseconds{500}, grid) == milliseconds{600});
  CHECK(delay_to_grid(nanoseconds{999'999'600}, milliseconds{500}, grid) == milliseconds{501});
  // Many workers due at scattered times share the ticks of the grid.
  std::set<long long> ticks;
  std::mt19937_64 gen{7};
  for (int i = 0; i < 4000; ++i) {
    auto now = milliseconds{static_cast<long long>(gen() % 60000)};
    auto at = now + delay_to_grid(now, jittered_interval(milliseconds{60000}, 10, gen()), grid);
    REQUIRE(at.count() % 100 == 0);
    ticks.insert(at.count());
  }
  CHECK(ticks.size() <= 1800); // 4,000 checks over at most 66 s / 100 ms ticks
  // No grid: the delay as given.
  CHECK(delay_to_grid(milliseconds{1030}, milliseconds{500}, milliseconds{0}) == milliseconds{500});
}
