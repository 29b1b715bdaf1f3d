#pragma once

#include "protocol/error.hpp"

#include <optional>
#include <string_view>

namespace troupe::protocol {

/// The client error for a worker that answered HTTP `status` (not 2xx) with `body`; `who` names
/// the worker in the message (e.g. "the decode worker"). The message quotes the worker's own
/// (from an OpenAI, Anthropic or SGLang error body, `error_message_of`, else the start of the
/// text). The code is the status's `worker_status(status).code`.
api_error worker_error(unsigned status, std::string_view body, std::string_view who);

/// The first error event of a streamed answer that started with a success status (engines
/// report a failure after the head that way: SGLang/OpenAI `data: {"error": ...}`, Anthropic
/// `event: error`), as a bad-gateway error naming `who`; nothing when the stream has none.
std::optional<api_error> stream_error(std::string_view sse_body, std::string_view who);

} // namespace troupe::protocol
