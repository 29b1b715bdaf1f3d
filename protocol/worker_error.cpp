#include "protocol/worker_error.hpp"

#include "protocol/sse.hpp"
#include "protocol/upstream_error.hpp"

#include <cctype>
#include <nlohmann/json.hpp>
#include <string>

namespace troupe::protocol {

namespace {

/// Longest piece of a worker's text quoted to the client.
constexpr std::size_t max_quote = 512;

/// The message of an error body (`error_message_of`), else the text itself.
std::string message_of(std::string_view body) {
  if (auto m = error_message_of(body); !m.empty()) {
    return m;
  }
  while (!body.empty() && std::isspace(static_cast<unsigned char>(body.back()))) {
    body.remove_suffix(1);
  }
  return std::string(utf8_prefix(body, max_quote));
}

} // namespace

api_error worker_error(unsigned status, std::string_view body, std::string_view who) {
  auto msg = std::string(who) + " answered HTTP " + std::to_string(status);
  auto quoted = message_of(body);
  if (quoted.size() > max_quote) {
    quoted = std::string(utf8_prefix(quoted, max_quote)); // never half a character
  }
  if (!quoted.empty()) {
    msg += ": " + quoted;
  }
  return {worker_status(status).code, std::move(msg), {}};
}

std::optional<api_error> stream_error(std::string_view sse_body, std::string_view who) {
  std::optional<api_error> found;
  sse_framer framer;
  auto on_event = [&](std::string_view raw) {
    if (found) {
      return;
    }
    auto ev = parse_sse_event(raw);
    auto j = nlohmann::json::parse(ev.data, nullptr, false);
    bool is_error =
        ev.event == "error" || (j.is_object() && j.contains("error") && !j["error"].is_null());
    if (!is_error) {
      return;
    }
    auto msg = std::string(who) + " failed mid-stream";
    auto quoted = message_of(ev.data);
    if (!quoted.empty()) {
      msg += ": " + quoted;
    }
    found = api_error{error_code::bad_gateway, std::move(msg), {}};
  };
  framer.feed(sse_body, on_event);
  if (auto rest = framer.pending(); !rest.empty()) {
    on_event(rest);
  }
  return found;
}

} // namespace troupe::protocol
