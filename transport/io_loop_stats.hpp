#pragma once

#include <atomic>
#include <cstdint>

namespace troupe::transport {

/// What the io threads' loops count (relaxed atomics, read by the metrics exporter).
struct io_loop_stats {
  /// The poll budget the loops run with, in microseconds (0: they sleep at once).
  std::atomic<std::int64_t> budget_us{0};
  /// The poll window the last loop to change it runs with, in microseconds (`budget_us` when
  /// the loops do not adapt it: transport/poll_window.hpp).
  std::atomic<std::int64_t> window_us{0};
  /// Times a loop's adaptive window grew or shrank.
  std::atomic<std::uint64_t> window_changes{0};
  /// Times a loop ran out of work and began polling instead of blocking.
  std::atomic<std::uint64_t> spins{0};
  /// Of those, the ones that found work before the budget ran out (a wake-up saved).
  std::atomic<std::uint64_t> hits{0};
  /// Times a loop ran out of work and blocked at once because other threads wanted a CPU.
  std::atomic<std::uint64_t> vetoes{0};
  /// Time spent polling without work, in nanoseconds.
  std::atomic<std::uint64_t> spin_ns{0};
  /// Handlers run at most before deferred writes are sent (`--send-batch`; 0: none deferred).
  std::atomic<std::int64_t> send_batch{0};
  /// Writes that waited for the end of their pass (transport/send_phase.hpp).
  std::atomic<std::uint64_t> sends_deferred{0};
  /// Flushes that sent at least one of them: deferred / flushes is the mean burst.
  std::atomic<std::uint64_t> send_flushes{0};
};

} // namespace troupe::transport
