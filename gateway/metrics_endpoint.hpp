#pragma once

#include "services/metrics.hpp"
#include "transport/http_server.hpp"

#include <memory>

namespace troupe::gateway {

/// The handler of the metrics port: `GET /metrics` answers the text exposition of `m`
/// (Prometheus format 0.0.4); anything else is 404 or 405. Served by a transport::http_server
/// on the io threads rather than prometheus-cpp's civetweb exposer, whose stop takes up to
/// two seconds (its accept loop polls in 2 s quanta) on every shutdown.
transport::request_handler make_metrics_handler(std::shared_ptr<const services::metrics> m);

} // namespace troupe::gateway
