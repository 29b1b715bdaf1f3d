#pragma once

#include <cstdint>
#include <random>

namespace troupe::actors {

/// The random engine of the policies' draws: SplitMix64 (Steele, Lea and Flood, "Fast
/// splittable pseudorandom number generators", 2014), 64 bits of state, full period 2^64,
/// passes BigCrush. A draw is an add and two multiply-xorshift rounds, ~8 instructions, where
/// `std::mt19937_64` costs ~44 with its twist amortized: a strategy drawing 32 workers of a large
/// fleet spent ~1,400 instructions a request in the engine alone (`bench/fleet_cost.py`). For
/// load balancing only, never for secrets or ids. A UniformRandomBitGenerator, so the standard
/// distributions and `std::shuffle` take it.
class pick_rng {
public:
  using result_type = std::uint64_t;

  explicit pick_rng(std::uint64_t seed) noexcept : state_(seed) {}

  /// Seeded from `std::random_device` (64 bits of it).
  static pick_rng seeded() {
    std::random_device rd;
    return pick_rng{(std::uint64_t{rd()} << 32) ^ rd()};
  }

  static constexpr result_type min() noexcept { return 0; }
  static constexpr result_type max() noexcept { return ~result_type{0}; }

  result_type operator()() noexcept {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }

private:
  std::uint64_t state_;
};

} // namespace troupe::actors
