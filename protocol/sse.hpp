#pragma once

#include <string>
#include <string_view>

namespace troupe::protocol {

/// Reassembles a byte stream into complete server-sent events. An event ends with a blank
/// line (`\n\n` or `\r\n\r\n`); pieces of a stream may split it anywhere.
class sse_framer {
public:
  /// Appends `bytes` and calls `on_event(std::string_view)` for every event completed by them;
  /// the view includes the event's terminating blank line and is valid during the call only.
  template <class F> void feed(std::string_view bytes, F&& on_event) {
    buf_.append(bytes);
    std::size_t start = 0;
    for (;;) {
      auto end = find_event_end(start);
      if (end == std::string::npos) {
        break;
      }
      on_event(std::string_view{buf_}.substr(start, end - start));
      start = end;
    }
    buf_.erase(0, start);
    scan_from_ = buf_.empty() ? 0 : buf_.size();
  }

  /// Bytes of an event not yet terminated.
  std::string_view pending() const { return buf_; }

private:
  std::size_t find_event_end(std::size_t start) const;

  std::string buf_;
  std::size_t scan_from_ = 0;
};

/// The fields of one SSE event that the gateway cares about.
struct sse_event {
  std::string event; ///< The `event:` field, empty when absent.
  std::string data;  ///< The `data:` lines joined with `\n`.
};

/// Parses one raw event (as delivered by `sse_framer`).
sse_event parse_sse_event(std::string_view raw);

/// Frames `data` (and an optional event name) as one SSE event.
std::string format_sse_event(std::string_view data, std::string_view event = {});

/// True for the `data: [DONE]` terminator of OpenAI streams.
bool is_done_event(std::string_view raw);

/// True when a Content-Type value names an SSE stream (case-insensitive, parameters ignored).
bool is_event_stream(std::string_view content_type);

} // namespace troupe::protocol
