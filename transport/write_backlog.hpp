#pragma once

#include "transport/flow_control.hpp"

#include <cstddef>

namespace troupe::transport {

/// The unwritten response bytes of one connection, and the pausing of the producer of its
/// stream while they stay above the high-water mark (docs/architecture.md, "Slow clients").
/// Lives on the connection's strand. Shared counters are touched only at a pause, a resume, and
/// when the bytes cross a `queued_report_step`: a connection that keeps up never touches them.
class write_backlog {
public:
  /// Pauses above `high_water` bytes, resumes at half; adds up in `stats` when given.
  write_backlog(std::size_t high_water, client_flow_stats* stats) noexcept
      : high_water_(high_water), stats_(stats) {}

  ~write_backlog() {
    set(0);
    forget_pause();
  }

  write_backlog(const write_backlog&) = delete;
  write_backlog& operator=(const write_backlog&) = delete;

  /// Bytes waiting to be written.
  std::size_t bytes() const noexcept { return bytes_; }

  /// Records `n` unwritten bytes.
  void set(std::size_t n) noexcept;

  /// More than the high-water mark waits.
  bool above_high_water() const noexcept { return bytes_ > high_water_; }

  /// A paused producer may run again.
  bool drained() const noexcept { return paused_ && bytes_ <= high_water_ / 2; }

  /// The producer of the current stream is paused.
  bool paused() const noexcept { return paused_; }

  /// The client is behind: `source` (the current stream's producer, if any) stops reading.
  void pause(flow_source* source) noexcept;

  /// The client caught up: `source` (if still there) reads again.
  void resume(flow_source* source) noexcept;

  /// The stream ended or its client left: nothing of this connection is paused any more
  /// (a paused producer is not resumed: it is done or cancelled).
  void forget_pause() noexcept;

private:
  std::size_t high_water_;
  client_flow_stats* stats_;
  std::size_t bytes_ = 0;    ///< Unwritten bytes.
  std::size_t reported_ = 0; ///< The part of them counted in the stats.
  bool paused_ = false;
};

} // namespace troupe::transport
