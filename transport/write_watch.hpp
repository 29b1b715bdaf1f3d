#pragma once

#include "transport/http_types.hpp"

#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstddef>
#include <cstdint>

namespace troupe::transport {

/// Bytes in the socket's send queue that the peer has not acknowledged yet, sent or not. Once
/// the peer's receive window is closed, they shrink only as the peer's application reads.
/// 0 where the system cannot tell.
std::size_t unacknowledged_bytes(tcp::socket& socket);

/// The write timeout of one connection (docs/architecture.md, "Slow clients"). While a write
/// is in flight, it looks `looks` times per timeout whether the client made progress since the
/// last look: a part of a write completed (`step`), or the client acknowledged bytes of the
/// socket's send queue. The second matters for a slow reader: the kernel wakes a blocked writer
/// only once a third of the send buffer (up to megabytes) drained, which a client reading a few
/// KiB a second takes minutes to do. That many looks in a row without progress mean one write
/// was stuck for the whole timeout: the client is dropped between one and 1.25 timeouts after
/// its last progress. One timer per connection, armed when a write starts unwatched and left to
/// run out, not re-armed per write: a client that keeps up costs a counter increment per write.
/// An idle connection is not watched. Lives on the connection's strand.
class write_watch {
public:
  /// Looks per timeout.
  static constexpr unsigned looks = 4;

  /// A watch on `ex` dropping clients after `timeout` without progress; 0: never.
  write_watch(net::any_io_executor ex, std::chrono::milliseconds timeout)
      : timer_(std::move(ex)), timeout_(timeout) {}

  /// The watch runs at all.
  bool enabled() const noexcept { return timeout_.count() > 0; }

  /// The timer is armed.
  bool armed() const noexcept { return armed_; }

  /// Progress: a write started, or a part of one was written.
  void step() noexcept { ++steps_; }

  /// A write starts unwatched: remember where it stands, then `wait`.
  void begin(tcp::socket& socket) {
    watched_steps_ = steps_;
    watched_unacked_ = unacknowledged_bytes(socket);
    stalled_looks_ = 0;
  }

  /// Arms the timer for the next look; `handler(error_code)` runs then.
  template <class Handler> void wait(Handler&& handler) {
    armed_ = true;
    timer_.expires_after(timeout_ / looks);
    timer_.async_wait(std::forward<Handler>(handler));
  }

  /// The timer rang: true when the write made no progress for the whole timeout.
  bool look(tcp::socket& socket) {
    armed_ = false;
    auto unacked = unacknowledged_bytes(socket);
    if (steps_ != watched_steps_ || unacked < watched_unacked_) {
      stalled_looks_ = 0;
    } else if (++stalled_looks_ == looks) {
      return true;
    }
    watched_steps_ = steps_;
    watched_unacked_ = unacked;
    return false;
  }

  /// The timer rang for nothing (cancelled, or no write pending any more).
  void disarmed() noexcept { armed_ = false; }

  /// Stops the timer (the connection closes).
  void cancel() {
    if (armed_) {
      timer_.cancel();
    }
  }

private:
  net::steady_timer timer_;
  std::chrono::milliseconds timeout_;
  std::uint64_t steps_ = 0;         ///< Writes started and parts of them completed.
  std::uint64_t watched_steps_ = 0; ///< `steps_` at the last look.
  std::size_t watched_unacked_ = 0; ///< The client's unacknowledged bytes then.
  unsigned stalled_looks_ = 0;      ///< Looks in a row that saw a write make no progress.
  bool armed_ = false;
};

} // namespace troupe::transport
