#pragma once

#include "apps/troupe-bench/api.hpp"

#include <string>
#include <string_view>

namespace troupe::bench {

/// Token counts a response reported; −1 where it said nothing.
struct usage {
  long prompt_tokens = -1; ///< Whole prompt, cached part included.
  long cached_tokens = -1; ///< Prompt tokens served from the prefix cache.
  long output_tokens = -1;

  /// Takes every count `other` reports.
  void merge(const usage& other) noexcept;
};

/// What one server-sent event means to a client measuring it.
enum class event_kind {
  other, ///< Framing (role chunk, `ping`, `content_block_start`, ...).
  token, ///< Carries output: the first one is the first token, gaps are inter-token latencies.
  done,  ///< The stream's end (`[DONE]`, `message_stop`, `response.completed`).
  error, ///< An error reported inside the stream.
};

/// One classified event.
struct event_info {
  event_kind kind = event_kind::other;
  usage counts; ///< Counts the event carries, if any (usage chunk, `message_delta`, ...).
};

/// Classifies one raw SSE event (as `protocol::sse_framer` delivers it) of API `a`. Cheap on
/// the common token event (substring looks, no JSON parse); parses only events with counts.
event_info read_event(api_kind a, std::string_view raw);

/// The counts of a whole non-streamed response body; false (and `why`) when the body is not
/// a JSON object or is an error object.
bool read_body(api_kind a, std::string_view body, usage& counts, std::string& why);

} // namespace troupe::bench
