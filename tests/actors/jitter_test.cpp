#include "actors/jitter.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <random>
#include <set>

using std::chrono::milliseconds;
using troupe::actors::jitter_draw;
using troupe::actors::jittered;

TEST_CASE("jittered without a jitter is the interval", "[jitter]") {
  for (double unit : {-1.0, 0.0, 0.37, 1.0}) {
    CHECK(jittered(milliseconds{60000}, 0.0, unit) == milliseconds{60000});
  }
}

TEST_CASE("jittered stays within the jitter, both ends reached", "[jitter]") {
  const milliseconds interval{10000};
  // The draw's ends are the range's ends.
  CHECK(jittered(interval, 0.1, -1.0) == milliseconds{9000});
  CHECK(jittered(interval, 0.1, 1.0) == milliseconds{11000});
  CHECK(jittered(interval, 0.1, 0.0) == interval);
  std::mt19937_64 gen{42};
  std::uniform_real_distribution<double> unit{-1.0, 1.0};
  milliseconds lo = interval;
  milliseconds hi = interval;
  std::set<long long> seen;
  for (int i = 0; i < 10000; ++i) {
    auto d = jittered(interval, 0.1, unit(gen));
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

TEST_CASE("jittered caps the share at 100% and never reaches zero", "[jitter]") {
  const milliseconds interval{1000};
  for (double u = -1.5; u <= 1.5; u += 0.01) {
    auto d = jittered(interval, 2.5, u);
    CHECK(d >= milliseconds{1});
    CHECK(d <= milliseconds{2000});
  }
  CHECK(jittered(milliseconds{1}, 0.5, -1.0) == milliseconds{1}); // too short to move
}

TEST_CASE("jitter_draw is not one value, and stays in [-1, 1]", "[jitter]") {
  std::set<double> values;
  for (int i = 0; i < 16; ++i) {
    auto u = jitter_draw();
    CHECK(u >= -1.0);
    CHECK(u <= 1.0);
    values.insert(u);
  }
  CHECK(values.size() > 1);
}

TEST_CASE("delay_to_grid lands on the next grid point at or after the due time", "[jitter]") {
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
  std::uniform_real_distribution<double> unit{-1.0, 1.0};
  for (int i = 0; i < 4000; ++i) {
    auto now = milliseconds{static_cast<long long>(gen() % 60000)};
    auto at = now + delay_to_grid(now, jittered(milliseconds{60000}, 0.1, unit(gen)), grid);
    REQUIRE(at.count() % 100 == 0);
    ticks.insert(at.count());
  }
  CHECK(ticks.size() <= 1800); // 4,000 checks over at most 66 s / 100 ms ticks
  // No grid: the delay as given.
  CHECK(delay_to_grid(milliseconds{1030}, milliseconds{500}, milliseconds{0}) == milliseconds{500});
}
