#include "actors/request.hpp"
#include "gateway/endpoints/endpoints.hpp"
#include "gateway/request_admission.hpp"

namespace troupe::gateway {

namespace {

using protocol::operation;

/// The handler of a proxied route. `limited` routes pass admission control first.
endpoint_handler proxy(operation op, bool limited) {
  return [op, limited](http_context& ctx) {
    auto in = std::make_shared<actors::inbound_request>();
    in->op = op;
    in->req = std::move(ctx.req);
    in->reply = std::move(ctx.reply);
    in->request_id = std::move(ctx.request_id);
    in->received = ctx.received;
    in->params = std::move(ctx.params);
    if (limited) {
      admit_request(ctx.svc, std::move(in));
    } else {
      actors::spawn_request(ctx.svc, std::move(in));
    }
  };
}

} // namespace

void add_data_plane_routes(route_table& routes) {
  // The data plane is data: each operation's row (protocol/routes.cpp) names its routes and
  // whether admission control limits them; one handler serves them all.
  for (const auto& op : protocol::operations()) {
    auto method = transport::http::string_to_verb(op.method);
    for (auto path : op.paths) {
      routes.add(method, std::string(path), proxy(op.op, op.limited), op.format);
    }
  }
}

} // namespace troupe::gateway
