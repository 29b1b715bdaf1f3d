#pragma once

#include <chrono>
#include <cstddef>

namespace troupe::sim {

/// The knobs of the latency model (all may change at run time).
struct latency_knobs {
  double ttft_base_ms = 0;         ///< Fixed part of the time to first token.
  double prefill_us_per_token = 0; ///< Prefill cost per uncached prompt token.
  double itl_ms = 0;               ///< Time between two output tokens.
  double load_slowdown = 0;        ///< Extra slowdown per concurrent request beyond the first.
};

/// The factor every latency is multiplied by when `concurrent` requests are in flight:
/// 1 + load_slowdown × (concurrent − 1).
double load_factor(const latency_knobs& k, std::size_t concurrent) noexcept;

/// Time to first token: (ttft_base + uncached × prefill_per_token) × load factor.
std::chrono::microseconds time_to_first_token(const latency_knobs& k, std::size_t uncached_tokens,
                                              std::size_t concurrent) noexcept;

/// Time between two output tokens: itl × load factor.
std::chrono::microseconds inter_token_latency(const latency_knobs& k,
                                              std::size_t concurrent) noexcept;

/// `ms` milliseconds as a duration, clamped to [0, one day].
std::chrono::microseconds duration_from_ms(double ms) noexcept;

/// True when every request is answered without waiting (the benchmark setting).
bool is_instant(const latency_knobs& k) noexcept;

} // namespace troupe::sim
