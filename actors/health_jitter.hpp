#pragma once

#include <chrono>
#include <cstdint>

namespace troupe::actors {

/// The delay before a worker's next periodic health check: `interval` moved by up to
/// `jitter_percent` of itself, either way, by `random` (any 64-bit value, uniform).
///
/// Workers registered together (by `--worker-urls`, or a burst of `POST /workers`) would
/// otherwise be checked together every interval: at 4,000 workers a wave of 4,000 probes on
/// the io thread at once, which the requests that arrive meanwhile wait behind. With a jitter
/// the waves spread out, a little more every interval, and a worker is still checked at least
/// every `interval * (1 + jitter_percent / 100)`. 0 gives `interval` exactly.
std::chrono::milliseconds jittered_interval(std::chrono::milliseconds interval,
                                            unsigned jitter_percent, std::uint64_t random);

/// How finely jittered checks are gathered: each falls on the next multiple of this since the
/// clock's epoch, so the io thread wakes for checks at most ten times a second however many
/// workers there are (at 4,000 workers and 60 s, ~7 checks a tick), instead of once per check
/// (each wake-up followed by the io loop's busy poll).
inline constexpr std::chrono::milliseconds health_check_grid{100};

/// The delay from `now` (time since the clock's epoch) to the first multiple of `grid` at or
/// after `now + delay`, rounded up to whole milliseconds.
std::chrono::milliseconds delay_to_grid(std::chrono::nanoseconds now,
                                        std::chrono::milliseconds delay,
                                        std::chrono::milliseconds grid = health_check_grid);

/// A uniform 64-bit value for `jittered_interval`, from a per-thread generator.
std::uint64_t health_jitter_random();

} // namespace troupe::actors
