#pragma once

#include <string>

#include "actors/fleet.hpp"
#include "transport/http_types.hpp"

namespace troupe::actors {

/// The request headers a worker gets: an allowlist of the client's (never hop-by-hop), the
/// request id, and the worker's own credentials when it has an api key (which then replace
/// the client's).
transport::header_list upstream_headers(const transport::request& req, const worker_entry& worker,
                                        const std::string& request_id);

} // namespace troupe::actors
