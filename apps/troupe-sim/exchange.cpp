#include "apps/troupe-sim/exchange.hpp"

namespace troupe::sim {

void respond(sim_reply& reply, unsigned status, std::string body, std::string_view content_type) {
  transport::response res{static_cast<transport::http::status>(status), 11};
  if (!body.empty()) {
    res.set(transport::http::field::content_type, content_type);
  }
  res.body() = std::move(body);
  reply.respond(std::move(res));
}

void respond_error(exchange& x, const protocol::api_error& err, unsigned status) {
  respond(*x.reply, status != 0 ? status : protocol::http_status(err.code),
          protocol::render_error_body(err, x.format));
}

protocol::error_code code_for_status(unsigned status) noexcept {
  using protocol::error_code;
  switch (status) {
  case 400:
    return error_code::bad_request;
  case 401:
  case 403:
    return error_code::unauthorized;
  case 404:
    return error_code::not_found;
  case 409:
    return error_code::conflict;
  case 413:
    return error_code::payload_too_large;
  case 429:
    return error_code::too_many_requests;
  case 502:
    return error_code::bad_gateway;
  case 503:
    return error_code::service_unavailable;
  case 504:
    return error_code::gateway_timeout;
  default:
    return status >= 400 && status < 500 ? error_code::bad_request : error_code::internal_error;
  }
}

} // namespace troupe::sim
