#include "protocol/error.hpp"

#include <array>
#include <nlohmann/json.hpp>

namespace troupe::protocol {

namespace {

using ec = error_code;

// One row per enum value, in enum order (checked below and by tests/protocol/error_test.cpp).
constexpr auto error_table = std::to_array<error_info>({
    {ec::bad_request, "bad_request", 400, "invalid_request_error", "invalid_request_error"},
    {ec::invalid_json, "invalid_json", 400, "invalid_request_error", "invalid_request_error"},
    {ec::unauthorized, "unauthorized", 401, "authentication_error", "authentication_error"},
    {ec::not_found, "not_found", 404, "invalid_request_error", "not_found_error"},
    {ec::model_not_found, "model_not_found", 404, "invalid_request_error", "not_found_error"},
    {ec::method_not_allowed, "method_not_allowed", 405, "invalid_request_error",
     "invalid_request_error"},
    {ec::conflict, "conflict", 409, "invalid_request_error", "invalid_request_error"},
    {ec::payload_too_large, "payload_too_large", 413, "invalid_request_error", "request_too_large"},
    {ec::too_many_requests, "too_many_requests", 429, "rate_limit_error", "rate_limit_error"},
    {ec::queue_timeout, "queue_timeout", 408, "timeout_error", "timeout_error"},
    {ec::header_too_large, "header_too_large", 431, "invalid_request_error",
     "invalid_request_error"},
    {ec::request_header_timeout, "request_header_timeout", 408, "timeout_error", "timeout_error"},
    {ec::client_closed, "client_closed", 499, "invalid_request_error", "invalid_request_error"},
    {ec::internal_error, "internal_error", 500, "server_error", "api_error"},
    {ec::not_implemented, "not_implemented", 501, "invalid_request_error", "invalid_request_error"},
    {ec::bad_gateway, "bad_gateway", 502, "server_error", "api_error"},
    {ec::upstream_too_large, "upstream_too_large", 502, "server_error", "api_error"},
    {ec::no_worker_available, "no_worker_available", 503, "server_error", "overloaded_error"},
    {ec::service_unavailable, "service_unavailable", 503, "server_error", "overloaded_error"},
    {ec::out_of_resources, "out_of_resources", 503, "server_error", "overloaded_error"},
    {ec::gateway_timeout, "gateway_timeout", 504, "server_error", "timeout_error"},
});

constexpr bool in_enum_order() {
  for (std::size_t i = 0; i < error_table.size(); ++i) {
    if (static_cast<std::size_t>(error_table[i].code) != i) {
      return false;
    }
  }
  return true;
}

static_assert(in_enum_order(), "one row per error code, in enum order");

nlohmann::json openai_body(const api_error& err) {
  const auto& i = info(err.code);
  return {{"error",
           {{"message", err.message},
            {"type", i.openai_type},
            {"param", err.param.empty() ? nlohmann::json() : nlohmann::json(err.param)},
            {"code", i.name}}}};
}

nlohmann::json anthropic_body(const api_error& err) {
  const auto& i = info(err.code);
  return {{"type", "error"}, {"error", {{"type", i.anthropic_type}, {"message", err.message}}}};
}

} // namespace

const error_info& info(error_code code) noexcept {
  return error_table[static_cast<std::size_t>(code)];
}

std::span<const error_info> error_codes() noexcept {
  return error_table;
}

std::string_view to_string(error_code code) noexcept {
  return info(code).name;
}

std::string render_error_body(const api_error& err, api_format format) {
  auto body = format == api_format::anthropic ? anthropic_body(err) : openai_body(err);
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::string render_error_event(const api_error& err, api_format format) {
  auto body = render_error_body(err, format);
  if (format == api_format::anthropic) {
    return "event: error\ndata: " + body + "\n\n";
  }
  return "data: " + body + "\n\n";
}

} // namespace troupe::protocol
