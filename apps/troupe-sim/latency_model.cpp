#include "apps/troupe-sim/latency_model.hpp"

#include <algorithm>
#include <cmath>

namespace troupe::sim {

namespace {

// Longer waits are clamped: a day is "forever" for a test, and the clock arithmetic stays safe.
constexpr double max_us = 86'400.0 * 1e6;

std::chrono::microseconds to_us(double us) noexcept {
  if (!(us > 0)) {
    return std::chrono::microseconds{0};
  }
  return std::chrono::microseconds{static_cast<std::int64_t>(std::llround(std::min(us, max_us)))};
}

} // namespace

double load_factor(const latency_knobs& k, std::size_t concurrent) noexcept {
  const double extra = concurrent > 1 ? static_cast<double>(concurrent - 1) : 0.0;
  return std::max(0.0, 1.0 + k.load_slowdown * extra);
}

std::chrono::microseconds time_to_first_token(const latency_knobs& k, std::size_t uncached_tokens,
                                              std::size_t concurrent) noexcept {
  const double us =
      k.ttft_base_ms * 1000.0 + static_cast<double>(uncached_tokens) * k.prefill_us_per_token;
  return to_us(us * load_factor(k, concurrent));
}

std::chrono::microseconds inter_token_latency(const latency_knobs& k,
                                              std::size_t concurrent) noexcept {
  return to_us(k.itl_ms * 1000.0 * load_factor(k, concurrent));
}

std::chrono::microseconds duration_from_ms(double ms) noexcept {
  return to_us(ms * 1000.0);
}

bool is_instant(const latency_knobs& k) noexcept {
  return !(k.ttft_base_ms > 0) && !(k.prefill_us_per_token > 0) && !(k.itl_ms > 0);
}

} // namespace troupe::sim
