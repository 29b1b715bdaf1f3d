#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "gateway/endpoints/endpoints.hpp"

#include <nlohmann/json.hpp>

namespace troupe::gateway {

namespace {

using verb = transport::http::verb;
using json = nlohmann::json;

void add_worker(http_context& ctx) {
  auto body = json::parse(ctx.req.body(), nullptr, false);
  if (body.is_discarded()) {
    return ctx.error(protocol::error_code::invalid_json, "the request body is not valid JSON");
  }
  std::string why;
  auto spec = protocol::worker_spec_from_json(body, why);
  if (!spec) {
    return ctx.error(protocol::error_code::bad_request, why);
  }
  auto url = spec->url;
  actors::ask(
      ctx.svc->sys, ctx.svc->registry,
      [ctx](const std::string& id) {
        auto res = actors::make_json_response(
            202, json{{"id", id}, {"status", "accepted"}, {"location", "/workers/" + id}}.dump(),
            ctx.request_id);
        res.set(transport::http::field::location, "/workers/" + id);
        ctx.reply->respond(std::move(res));
      },
      [ctx](caf::error& e) {
        auto err = actors::to_api_error(e);
        ctx.error(err.code, err.message, err.param);
      },
      add_atom_v, std::move(*spec));
}

void list_workers(http_context& ctx) {
  auto fleet = ctx.svc->fleet->get();
  json workers = json::array();
  for (auto& w : fleet->workers) {
    workers.push_back(to_json(*w));
  }
  ctx.json(200, json{{"workers", std::move(workers)},
                     {"total", fleet->workers.size()},
                     {"version", fleet->version}}
                    .dump());
}

void get_worker(http_context& ctx) {
  auto fleet = ctx.svc->fleet->get();
  if (auto* w = fleet->find(ctx.params.at(0))) {
    return ctx.json(200, to_json(*w).dump());
  }
  ctx.error(protocol::error_code::not_found, "no worker with id '" + ctx.params.at(0) + "'");
}

void remove_worker(http_context& ctx) {
  auto id = ctx.params.at(0);
  actors::ask(
      ctx.svc->sys, ctx.svc->registry,
      [ctx, id](bool existed) {
        if (!existed) {
          return ctx.error(protocol::error_code::not_found, "no worker with id '" + id + "'");
        }
        ctx.json(200, json{{"id", id}, {"status", "removed"}}.dump());
      },
      [ctx](caf::error& e) {
        auto err = actors::to_api_error(e);
        ctx.error(err.code, err.message, err.param);
      },
      remove_atom_v, id);
}

} // namespace

void add_worker_routes(route_table& routes) {
  routes.add(verb::post, "/workers", add_worker);
  routes.add(verb::get, "/workers", list_workers);
  routes.add(verb::get, "/workers/{id}", get_worker);
  routes.add(verb::delete_, "/workers/{id}", remove_worker);
}

} // namespace troupe::gateway
