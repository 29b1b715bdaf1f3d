#include "actors/request.hpp"
#include "gateway/endpoints/endpoints.hpp"
#include "gateway/request_admission.hpp"

namespace troupe::gateway {

namespace {

using protocol::operation;
using verb = transport::http::verb;

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
  struct row {
    verb method;
    const char* path;
    operation op;
    bool limited; ///< Subject to admission control (`--max-concurrent-requests`).
  };
  // The data plane is data: one row per route, one handler for all of them. Admission
  // control limits the routes that make a model work; lookups of stored responses, a cancel
  // (which frees capacity: it must not wait behind the work it stops) and the info and health
  // routes never queue (docs/architecture.md).
  const row rows[] = {
      {verb::post, "/generate", operation::generate, true},
      {verb::post, "/v1/chat/completions", operation::chat_completions, true},
      {verb::post, "/v1/completions", operation::completions, true},
      {verb::post, "/v1/embeddings", operation::embeddings, true},
      {verb::post, "/v1/rerank", operation::rerank, true},
      {verb::post, "/rerank", operation::rerank, true},
      {verb::post, "/v1/messages", operation::messages, true},
      {verb::post, "/v1/responses", operation::responses_create, true},
      {verb::get, "/v1/responses/{id}", operation::responses_get, false},
      {verb::delete_, "/v1/responses/{id}", operation::responses_delete, false},
      {verb::post, "/v1/responses/{id}/cancel", operation::responses_cancel, false},
      {verb::get, "/v1/responses/{id}/input_items", operation::responses_input_items, false},
      {verb::get, "/get_model_info", operation::get_model_info, false},
      {verb::get, "/get_server_info", operation::get_server_info, false},
      {verb::get, "/health_generate", operation::health_generate, false},
  };
  for (auto& r : rows) {
    routes.add(r.method, r.path, proxy(r.op, r.limited), protocol::info(r.op).format);
  }
}

} // namespace troupe::gateway
