#include "actors/request/retry_policy.hpp"

#include <catch2/catch.hpp>

using namespace troupe::actors;
using namespace std::chrono_literals;

TEST_CASE("retry: the statuses that say the worker did not do the work") {
  for (unsigned s : {408u, 429u, 500u, 502u, 503u, 504u}) {
    CHECK(retryable_status(s));
  }
  for (unsigned s : {200u, 201u, 400u, 401u, 403u, 404u, 413u, 422u, 501u, 505u}) {
    CHECK_FALSE(retryable_status(s));
  }
}

TEST_CASE("retry: backoff grows by the multiplier up to the cap (smg's progression)") {
  retry_config cfg; // 50 ms, x1.5, cap 30 s
  CHECK(retry_backoff(cfg, 0, 0) == 50ms);
  CHECK(retry_backoff(cfg, 1, 0) == 75ms);
  CHECK(retry_backoff(cfg, 2, 0) == 113ms); // 112.5, rounded
  CHECK(retry_backoff(cfg, 4, 0) == 253ms);
  CHECK(retry_backoff(cfg, 30, 0) == 30000ms);
  CHECK(retry_backoff(cfg, 1000000, 0) == 30000ms); // no overflow
}

TEST_CASE("retry: jitter moves the wait by at most its share, either way") {
  retry_config cfg;
  cfg.initial_backoff = 100ms;
  cfg.jitter = 0.2;
  CHECK(retry_backoff(cfg, 0, -1.0) == 80ms);
  CHECK(retry_backoff(cfg, 0, 1.0) == 120ms);
  CHECK(retry_backoff(cfg, 0, 5.0) == 120ms); // a draw out of range is clamped
  cfg.jitter = 1.0;
  CHECK(retry_backoff(cfg, 0, -1.0) == 0ms);
  cfg.initial_backoff = 0ms;
  CHECK(retry_backoff(cfg, 3, 1.0) == 0ms); // no backoff configured: none
}
