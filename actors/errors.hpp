#pragma once

#include "protocol/error.hpp"
#include "transport/http_types.hpp"

#include <caf/error.hpp>
#include <string>

namespace troupe::actors {

/// An `api_error` as a `caf::error` (category `troupe`), so actors can fail a request with it.
caf::error to_caf_error(const protocol::api_error& err);

/// Shorthand for `to_caf_error({code, message})`.
caf::error make_caf_error(protocol::error_code code, std::string message);

/// The client-facing error for `err`: ours unchanged; CAF's own (a dead actor, a broken
/// promise) as an internal error naming it.
protocol::api_error to_api_error(const caf::error& err);

/// Renders errors of category `troupe` for logs (installed into the actor system config).
std::string render_caf_error(std::uint8_t code, caf::atom_value category,
                             const caf::message& context);

/// A complete error response in `format`, tagged with `request_id`: what the client gets when
/// the gateway answers an error itself (the body is `protocol::render_error_body`).
transport::response make_error_response(const protocol::api_error& err, protocol::api_format format,
                                        const std::string& request_id, unsigned version = 11);

/// A complete JSON response.
transport::response make_json_response(unsigned status, std::string body,
                                       const std::string& request_id = {});

} // namespace troupe::actors
