#pragma once

#include <atomic>
#include <cstdint>

namespace troupe::transport {

/// What a server's listener and connections count about connections and request heads.
/// Written by the server (relaxed atomics, once per connection or per refusal: never per
/// request), read by the metrics exporter.
struct connection_stats {
  /// Client connections open now.
  std::atomic<std::int64_t> open{0};
  /// Connections closed at once because `max_connections` were open.
  std::atomic<std::uint64_t> refused{0};
  /// Times accepting failed for lack of resources (file descriptors, memory); the listener
  /// pauses briefly then.
  std::atomic<std::uint64_t> accept_errors{0};
  /// Request heads not complete within the header timeout (answered 408).
  std::atomic<std::uint64_t> header_timeouts{0};
  /// Request heads over the size limit (answered 431).
  std::atomic<std::uint64_t> header_too_large{0};
  /// Request heads with more fields than allowed (answered 431).
  std::atomic<std::uint64_t> too_many_headers{0};
  /// TLS handshakes that failed or did not finish in time (the connection is closed).
  std::atomic<std::uint64_t> tls_handshake_failures{0};
};

} // namespace troupe::transport
