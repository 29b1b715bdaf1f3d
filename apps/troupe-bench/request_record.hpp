#pragma once

#include "apps/troupe-bench/response_scan.hpp"

#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace troupe::bench {

using bench_clock = std::chrono::steady_clock;

/// How a request ended.
enum class outcome {
  ok,
  connect_error, ///< The connection could not be made.
  timeout,       ///< `--timeout` passed before the response ended.
  closed,        ///< The server closed or reset the connection before the response ended.
  http_error,    ///< A status other than 2xx.
  stream_error,  ///< An error event inside the stream, or the stream ended without its end.
  bad_response,  ///< Not HTTP, or a 2xx body that is not the API's JSON.
};

/// `ok`, `connect_error`, ...
std::string_view to_string(outcome o) noexcept;

/// What one request measured. Times are from `scheduled`: the moment the request was due
/// (an arrival of the open loop, or the release of a closed-loop slot), so waiting for a
/// connection counts as latency (no coordinated omission).
struct request_record {
  std::size_t target = 0; ///< Index of the URL it went to.
  bool measured = true;   ///< False in the warm-up.
  bench_clock::time_point scheduled;
  bench_clock::time_point sent; ///< When its bytes were handed to the socket.
  bench_clock::time_point first_token;
  bench_clock::time_point end;
  outcome result = outcome::ok;
  unsigned status = 0;          ///< HTTP status, 0 when none arrived.
  bool streamed = false;        ///< The response was an event stream.
  std::size_t token_events = 0; ///< Events that carried output.
  std::vector<float> gaps_ms;   ///< Gaps between consecutive token events.
  usage counts;                 ///< What the response reported.
  std::string detail;           ///< Why it failed, for the first failures' report.

  /// Output tokens: the reported count, else the token events.
  long output_tokens() const noexcept {
    return counts.output_tokens >= 0 ? counts.output_tokens : static_cast<long>(token_events);
  }
};

} // namespace troupe::bench
