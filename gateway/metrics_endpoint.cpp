#include "gateway/metrics_endpoint.hpp"

namespace troupe::gateway {

namespace http = transport::http;

transport::request_handler make_metrics_handler(std::shared_ptr<const services::metrics> m) {
  return [m = std::move(m)](transport::request&& req, transport::inbound_status status,
                            std::shared_ptr<transport::reply_channel> reply) {
    auto target = std::string_view{req.target()};
    auto path = target.substr(0, target.find('?'));
    transport::response res{http::status::ok, req.version()};
    res.set(http::field::content_type, "text/plain; charset=utf-8");
    if (status != transport::inbound_status::complete) {
      res.result(transport::status_of(status)); // a limit of the server: the request is cut
      res.body() = std::string(http::obsolete_reason(res.result())) + "\n";
    } else if (path != "/metrics") {
      res.result(http::status::not_found);
      res.body() = "not found: the metrics are at /metrics\n";
    } else if (req.method() != http::verb::get && req.method() != http::verb::head) {
      res.result(http::status::method_not_allowed);
      res.set(http::field::allow, "GET, HEAD");
      res.body() = "method not allowed\n";
    } else {
      res.set(http::field::content_type, "text/plain; version=0.0.4; charset=utf-8");
      res.body() = m->scrape();
    }
    reply->respond(std::move(res));
  };
}

} // namespace troupe::gateway
