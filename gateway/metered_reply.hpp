#pragma once

#include "services/metrics.hpp"
#include "transport/reply_channel.hpp"

#include <chrono>
#include <memory>
#include <string_view>

namespace troupe::gateway {

/// Wraps a request's reply channel so that the end of its response is counted in `m`
/// (`troupe_http_requests_total`, `troupe_http_request_duration_seconds`): when a complete
/// response is sent, when a stream ends, or, for a response that never ended (the client
/// left), when the channel is released, as status 499. `method` and `path` must outlive the
/// channel (static strings, route patterns).
std::shared_ptr<transport::reply_channel>
make_metered_reply(std::shared_ptr<transport::reply_channel> inner,
                   std::shared_ptr<services::metrics> m, std::string_view method,
                   std::string_view path, std::chrono::steady_clock::time_point received);

} // namespace troupe::gateway
