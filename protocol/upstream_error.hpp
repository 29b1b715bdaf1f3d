#pragma once

#include "protocol/error.hpp"

#include <cstddef>
#include <string>
#include <string_view>

namespace troupe::protocol {

/// The longest prefix of `text` of at most `max` bytes that does not end inside a UTF-8
/// sequence: a character cut by `max`, or by the end of `text`, is left out whole. Malformed
/// bytes inside the text count as one character each.
std::string_view utf8_prefix(std::string_view text, std::size_t max) noexcept;

/// True when `body` is an error body of `format` already: OpenAI `{"error":{...}}`, Anthropic
/// `{"type":"error","error":{...}}`.
bool is_error_body(std::string_view body, api_format format);

/// What an HTTP error status a worker answered means to the gateway: the one mapping of
/// worker statuses (`worker_status`), used when the gateway relays the worker's answer
/// (`client_error_body`) and when it answers for the worker (`worker_error`).
struct worker_status_info {
  unsigned status; ///< 0 in the rows for any other status of a class (4xx, 5xx).
  /// The gateway's error when it answers for the worker: a client error stays a client error
  /// (400, 404, 413, 422, 429), 503 and 504 keep their meaning, anything else is a bad gateway.
  error_code code;
  std::string_view openai_type;    ///< OpenAI `error.type` of the status, relayed.
  std::string_view anthropic_type; ///< Anthropic `error.type` of the status, relayed.
};

/// The row of `status` (>= 400).
const worker_status_info& worker_status(unsigned status) noexcept;

/// The error `type` of `format` that goes with an HTTP status a worker answered (400 ->
/// `invalid_request_error`, 429 -> `rate_limit_error`, 5xx -> `server_error` / `api_error`, ...).
std::string_view error_type_for_status(unsigned status, api_format format) noexcept;

/// The message inside a worker's error body: `error.message` (OpenAI, Anthropic), `error` as a
/// string, `message` (SGLang, vLLM), `detail` (FastAPI); empty when there is none.
std::string error_message_of(std::string_view body);

/// What the client gets for a worker's error response (status >= 400) on a proxied route: the
/// body unchanged when it is complete and in the route's format already; otherwise an error of
/// `format` with the worker's status, whose message carries the worker's own
/// (`error_message_of`, else the raw text) cut at `excerpt_limit` bytes on a character
/// boundary. `truncated` says the gateway stopped reading the body at its size limit.
std::string client_error_body(unsigned status, std::string_view body, bool truncated,
                              api_format format, std::size_t excerpt_limit = 1024);

} // namespace troupe::protocol
