#pragma once

#include <span>
#include <string>
#include <string_view>

namespace troupe::protocol {

/// Every error the gateway reports to a client. Client errors first, then server errors.
/// `error_table` maps each to an HTTP status and to both wire formats.
enum class error_code {
  bad_request,            ///< Malformed request: syntax, missing or ill-typed field.
  invalid_json,           ///< The body is not JSON.
  unauthorized,           ///< Missing or wrong API key.
  not_found,              ///< No route for the path, or no such resource.
  model_not_found,        ///< No registered worker serves the requested model.
  method_not_allowed,     ///< The path exists, the method does not.
  conflict,               ///< The resource exists already (a worker url registered twice).
  payload_too_large,      ///< Body over `--max-payload-size`.
  too_many_requests,      ///< Admission control refused the request (or a worker did: its 429).
  queue_timeout,          ///< Admission control: no slot freed within `--queue-timeout-secs`.
  header_too_large,       ///< The request head is over the size or field-count limit (431).
  request_header_timeout, ///< The request head was not complete within its timeout (408).
  client_closed,          ///< The client went away before the response ended (logged, never sent).
  internal_error,         ///< A bug or an unexpected state in the gateway.
  /// The workers serving the model cannot serve the operation at all (embeddings on a model
  /// only prefill/decode pairs serve): 501, as smg answers.
  not_implemented,
  bad_gateway,         ///< The worker was unreachable, reset the connection or answered garbage.
  upstream_too_large,  ///< The worker's response was larger than the gateway accepts.
  no_worker_available, ///< The model is known, but no healthy worker can take the request.
  service_unavailable, ///< The gateway is not ready (no healthy worker at all) or shutting down.
  /// The gateway could not open a connection to a worker for lack of its own resources (file
  /// descriptors, local ports, memory): 503, not the worker's failure.
  out_of_resources,
  gateway_timeout, ///< The request deadline passed.
};

/// Static facts about one error code.
struct error_info {
  error_code code;
  std::string_view name;           ///< Stable snake_case name, e.g. for `error_type` labels.
  unsigned http_status;            ///< Status sent to the client.
  std::string_view openai_type;    ///< OpenAI `error.type`.
  std::string_view anthropic_type; ///< Anthropic `error.type`.
};

/// The facts about `code`.
const error_info& info(error_code code) noexcept;

/// Every code's facts, in enum order.
std::span<const error_info> error_codes() noexcept;

/// Stable snake_case name of `code`.
std::string_view to_string(error_code code) noexcept;

/// HTTP status for `code`.
inline unsigned http_status(error_code code) noexcept {
  return info(code).http_status;
}

/// The wire format an endpoint speaks.
enum class api_format {
  openai,    ///< OpenAI and SGLang routes: `{"error":{"message","type","param","code"}}`.
  anthropic, ///< `/v1/messages`: `{"type":"error","error":{"type","message"}}`.
};

/// A client-facing error: what the client is told. What is logged may say more.
struct api_error {
  error_code code = error_code::internal_error;
  std::string message;
  std::string param; ///< The offending field, when there is one (OpenAI `param`).
};

/// The JSON body for `err` in `format`.
std::string render_error_body(const api_error& err, api_format format);

/// One SSE event carrying `err`, for a stream that already started.
std::string render_error_event(const api_error& err, api_format format);

} // namespace troupe::protocol
