#include "actors/endpoints/endpoints.hpp"
#include "actors/request.hpp"

namespace troupe::actors {

namespace {

using protocol::operation;
using verb = transport::http::verb;

endpoint_handler proxy(operation op) {
  return [op](http_context& ctx) {
    auto in = std::make_shared<inbound_request>();
    in->op = op;
    in->req = std::move(ctx.req);
    in->reply = std::move(ctx.reply);
    in->request_id = std::move(ctx.request_id);
    in->received = ctx.received;
    in->params = std::move(ctx.params);
    spawn_request(ctx.svc, std::move(in));
  };
}

} // namespace

void add_data_plane_routes(route_table& routes) {
  struct row {
    verb method;
    const char* path;
    operation op;
  };
  // The data plane is data: one row per route, one handler for all of them.
  const row rows[] = {
      {verb::post, "/generate", operation::generate},
      {verb::post, "/v1/chat/completions", operation::chat_completions},
      {verb::post, "/v1/completions", operation::completions},
      {verb::post, "/v1/embeddings", operation::embeddings},
      {verb::post, "/v1/rerank", operation::rerank},
      {verb::post, "/rerank", operation::rerank},
      {verb::post, "/v1/messages", operation::messages},
      {verb::post, "/v1/responses", operation::responses_create},
      {verb::get, "/v1/responses/{id}", operation::responses_get},
      {verb::delete_, "/v1/responses/{id}", operation::responses_delete},
      {verb::post, "/v1/responses/{id}/cancel", operation::responses_cancel},
      {verb::get, "/v1/responses/{id}/input_items", operation::responses_input_items},
      {verb::get, "/get_model_info", operation::get_model_info},
      {verb::get, "/get_server_info", operation::get_server_info},
      {verb::get, "/health_generate", operation::health_generate},
  };
  for (auto& r : rows) {
    routes.add(r.method, r.path, proxy(r.op), protocol::info(r.op).format);
  }
}

} // namespace troupe::actors
