#pragma once

#include <chrono>

namespace troupe::actors {

/// A uniform draw in [-1, 1] from a per-thread generator: the `unit` of a jitter (retry
/// backoffs, health-check intervals).
double jitter_draw();

/// `interval` moved by `share` of itself scaled by `unit` in [-1, 1] (clamped, as is `share`
/// to [0, 1]), rounded to whole milliseconds and never below 1 ms.
///
/// Health checks: workers registered together (by `--worker-urls`, or a burst of `POST
/// /workers`) would otherwise be checked together every interval: at 4,000 workers a wave of
/// 4,000 probes on the io thread at once, which the requests that arrive meanwhile wait
/// behind. With a jitter the waves spread out, a little more every interval, and a worker is
/// still checked at least every `interval * (1 + share)`. A share of 0 gives `interval`.
std::chrono::milliseconds jittered(std::chrono::milliseconds interval, double share, double unit);

/// How finely jittered health checks are gathered: each falls on the next multiple of this
/// since the clock's epoch, so the io thread wakes for checks at most ten times a second
/// however many workers there are (at 4,000 workers and 60 s, ~7 checks a tick), instead of
/// once per check (each wake-up followed by the io loop's busy poll).
inline constexpr std::chrono::milliseconds health_check_grid{100};

/// The delay from `now` (time since the clock's epoch) to the first multiple of `grid` at or
/// after `now + delay`, rounded up to whole milliseconds.
std::chrono::milliseconds delay_to_grid(std::chrono::nanoseconds now,
                                        std::chrono::milliseconds delay,
                                        std::chrono::milliseconds grid = health_check_grid);

} // namespace troupe::actors
