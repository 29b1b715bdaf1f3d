#pragma once

// Freed memory handed back to the system on a timer. `troupe` allocates with jemalloc, which
// returns the pages a burst freed (4,000 workers' discoveries at start-up, a flood of large
// prompts) only from inside later allocation calls: a gateway that goes quiet after a burst
// keeps the burst's pages. jemalloc's own background thread would return them, but its
// wake-ups cost a c=1 request ~10% on a 2-core host; one call a second from the io loop
// costs nothing measurable (docs/performance.md, "The same memory by flag or by POST").

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>

namespace troupe::gateway {

/// Asks the allocator, every `interval`, to return the freed pages its decay schedule says
/// are due (jemalloc's `arena.<all>.decay`: pages unused for ~10 s). Does nothing where the
/// allocator is not jemalloc (sanitizer builds, `-DTROUPE_JEMALLOC=OFF`).
class allocator_decay {
public:
  allocator_decay(boost::asio::io_context& ioc, std::chrono::milliseconds interval);

  /// Starts the timer (where the allocator is jemalloc).
  void start();
  /// Stops it: the wait under way ends within `interval` without a decay and is not renewed.
  /// Safe from any io thread (the timer itself is only touched by its own handler).
  void stop() noexcept;

  /// Whether the process allocates with jemalloc (its `mallctl` is linked in).
  static bool available() noexcept;

  /// Runs one decay now; false when the allocator is not jemalloc or refused the call.
  static bool decay_now() noexcept;

  /// Decays the timer has run.
  std::uint64_t runs() const noexcept { return runs_; }

private:
  void arm();

  boost::asio::steady_timer timer_;
  std::chrono::milliseconds interval_;
  bool started_ = false;
  std::atomic<bool> stopped_{false};
  std::uint64_t runs_ = 0;
};

} // namespace troupe::gateway
