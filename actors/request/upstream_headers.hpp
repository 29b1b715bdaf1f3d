#pragma once

#include "actors/fleet.hpp"
#include "transport/header_block.hpp"
#include "transport/http_types.hpp"

#include <string>
#include <string_view>

namespace troupe::actors {

/// The request headers a worker gets (never hop-by-hop ones, never the gateway's own key sent
/// to an external provider), plus the request id:
/// - an Anthropic provider gets only its credentials (the worker's api key, else the client's
///   `x-api-key`, or its `Authorization: Bearer` key sent as `x-api-key`), `anthropic-version`
///   (`2023-06-01` when absent) and `anthropic-beta`;
/// - any other worker gets an allowlist: `authorization` (replaced by the worker's own key when
///   it has one), `traceparent`, `tracestate`, the routing-key headers and `content-type`.
/// `gateway_key` is the node's `--api-key`: a credential equal to it authenticated the client
/// to this gateway and is not the provider's.
transport::header_block upstream_headers(const transport::request& req, const worker_entry& worker,
                                         const std::string& request_id,
                                         std::string_view gateway_key = {});

} // namespace troupe::actors
