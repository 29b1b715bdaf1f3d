#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

namespace troupe::transport {

/// The producer of a streamed response body as the client's connection sees it (an upstream
/// exchange reading a worker's stream). The connection pauses it while more than its
/// high-water mark of bytes waits to be written to the client and resumes it once that
/// drained to the low-water mark; a paused producer reads nothing more from its own source,
/// so TCP flow control holds the worker back. Both are called on the connection's strand;
/// an implementation moves to its own executor.
class flow_source {
public:
  virtual ~flow_source() = default;

  /// Stop producing after the piece in hand.
  virtual void pause() = 0;

  /// Produce again. Never runs the producer inline: its next read is posted.
  virtual void resume() = 0;
};

/// Bytes queued per connection are published to `client_flow_stats::queued_bytes` rounded
/// down to this step: a connection that keeps up (the common case) never touches the shared
/// counter.
constexpr std::size_t queued_report_step = 64 * 1024;

/// What a server's connections hold for slow clients, summed over connections. Written by
/// the connections, read by the metrics exporter.
struct client_flow_stats {
  /// Bytes of responses waiting to be written to clients, each connection's share rounded
  /// down to `queued_report_step`.
  std::atomic<std::int64_t> queued_bytes{0};
  /// Times a stream's producer was paused because its client fell behind.
  std::atomic<std::uint64_t> pauses{0};
  /// Streams paused now.
  std::atomic<std::int64_t> paused{0};
  /// Clients dropped because a write to them made no progress for the write timeout.
  std::atomic<std::uint64_t> write_timeouts{0};
};

} // namespace troupe::transport
