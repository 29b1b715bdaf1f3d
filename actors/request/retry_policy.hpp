#pragma once

// When a failed attempt is tried again on another worker, and how long the request waits
// first (smg's retry flags; docs/configuration.md, "Routing").

#include <chrono>

namespace troupe::actors {

/// `--retry-*` and `--disable-retries`.
struct retry_config {
  unsigned max_retries = 5;                      ///< Other workers tried; 0: none.
  std::chrono::milliseconds initial_backoff{50}; ///< Wait before the first retry on a status.
  std::chrono::milliseconds max_backoff{30000};  ///< Longest wait before a retry.
  double multiplier = 1.5;                       ///< Each further wait, this many times longer.
  double jitter = 0.2; ///< Each wait moved by up to this share of itself, either way.
};

/// True for a worker's answer that says it did not do the work and another worker may:
/// 408, 429, 500, 502, 503, 504 (smg's list).
bool retryable_status(unsigned status) noexcept;

/// The wait before retry number `retry` (0 for the first): `initial * multiplier^retry`,
/// capped at `max_backoff`, then moved by `jitter` scaled by `unit` in [-1, 1] (a random draw
/// by the caller). Never negative.
std::chrono::milliseconds retry_backoff(const retry_config& cfg, unsigned retry, double unit);

} // namespace troupe::actors
