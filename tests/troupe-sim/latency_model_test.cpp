#include "apps/troupe-sim/latency_model.hpp"

#include <catch2/catch.hpp>

using namespace troupe::sim;
using std::chrono::microseconds;

TEST_CASE("time to first token: base plus uncached prompt tokens", "[latency_model]") {
  latency_knobs k{10, 50, 5, 0};
  CHECK(time_to_first_token(k, 0, 1) == microseconds{10'000});
  CHECK(time_to_first_token(k, 100, 1) == microseconds{15'000});
  CHECK(inter_token_latency(k, 1) == microseconds{5'000});
}

TEST_CASE("concurrency slows every latency down by the load factor", "[latency_model]") {
  latency_knobs k{10, 0, 4, 0.5};
  CHECK(load_factor(k, 0) == 1.0);
  CHECK(load_factor(k, 1) == 1.0);
  CHECK(load_factor(k, 3) == 2.0);
  CHECK(time_to_first_token(k, 0, 3) == microseconds{20'000});
  CHECK(inter_token_latency(k, 5) == microseconds{12'000});
}

TEST_CASE("zero knobs are instant, huge ones are clamped", "[latency_model]") {
  latency_knobs zero{};
  CHECK(is_instant(zero));
  CHECK(time_to_first_token(zero, 100000, 50) == microseconds{0});
  CHECK_FALSE(is_instant({0, 1, 0, 0}));
  CHECK(duration_from_ms(1e18) == microseconds{86'400'000'000LL});
  CHECK(duration_from_ms(-5) == microseconds{0});
  CHECK(duration_from_ms(2.5) == microseconds{2'500});
}
