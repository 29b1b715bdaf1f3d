#include "apps/troupe-sim/simulator.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/api_embeddings.hpp"
#include "apps/troupe-sim/control_api.hpp"
#include "apps/troupe-sim/generation.hpp"
#include "apps/troupe-sim/latency_model.hpp"

#include <boost/asio/steady_timer.hpp>
#include <random>

namespace troupe::sim {

namespace {

namespace http = transport::http;
using verb = http::verb;
using protocol::api_error;
using protocol::api_format;
using protocol::error_code;

constexpr auto openai = api_format::openai;
constexpr auto anthropic = api_format::anthropic;
constexpr auto data_plane = route_kind::data_plane;
constexpr auto info = route_kind::info;
constexpr auto control = route_kind::control;

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

} // namespace

simulator::simulator(net::io_context& ioc, sim_config cfg, std::shared_ptr<spdlog::logger> log)
    : ctx_(std::make_shared<sim_context>(ioc, std::move(cfg), std::move(log))),
      routes_(make_routes()),
      server_(ioc,
              transport::server_options{
                  .host = ctx_->config.host, .port = ctx_->config.port, .use_strands = false},
              [this](transport::request&& req, transport::inbound_status status,
                     std::shared_ptr<sim_reply> reply) {
                handle(std::move(req), status, std::move(reply));
              }),
      started_at_(unix_now()) {
  if (ctx_->config.role == worker_role::prefill) {
    if (ctx_->config.runtime == engine_runtime::vllm) {
      kv_server_ = std::make_unique<kv_server>(ioc, ctx_->config.host, ctx_->config.bootstrap_port,
                                               ctx_->kv);
    } else {
      bootstrap_ = std::make_unique<bootstrap_server>(ioc, ctx_->config.host,
                                                      ctx_->config.bootstrap_port, ctx_->rooms);
    }
  }
}

simulator::~simulator() = default;

std::vector<route<simulator::handler>> simulator::make_routes() {
  auto gen = [this](api_family& family) {
    return [this, &family](exchange& x) { serve_generation(x, family); };
  };
  auto own = [this](void (simulator::*f)(exchange&)) {
    return [this, f](exchange& x) { (this->*f)(x); };
  };
  auto stored = [this](void (responses_api::*f)(exchange&)) {
    return [this, f](exchange& x) { (responses_.*f)(x); };
  };
  // Information and control endpoints read (or change) the worker's state.
  auto ctx = [this](void (*f)(sim_context&, exchange&)) {
    return [this, f](exchange& x) { f(*ctx_, x); };
  };
  auto cctx = [this](void (*f)(const sim_context&, exchange&)) {
    return [this, f](exchange& x) { f(*ctx_, x); };
  };
  auto facts_ctx = [this](void (*f)(const sim_context&, const worker_facts&, exchange&)) {
    return [this, f](exchange& x) { f(*ctx_, facts(), x); };
  };
  return {
      {verb::post, "/generate", openai, data_plane, gen(generate_)},
      {verb::post, "/v1/chat/completions", openai, data_plane, gen(chat_)},
      {verb::post, "/v1/completions", openai, data_plane, gen(completions_)},
      {verb::post, "/v1/messages", anthropic, data_plane, gen(messages_)},
      {verb::post, "/v1/responses", openai, data_plane, own(&simulator::responses_create)},
      {verb::get, "/v1/responses/{}", openai, data_plane, stored(&responses_api::serve_get)},
      {verb::delete_, "/v1/responses/{}", openai, data_plane, stored(&responses_api::serve_delete)},
      {verb::post, "/v1/responses/{}/cancel", openai, data_plane,
       stored(&responses_api::serve_cancel)},
      {verb::get, "/v1/responses/{}/input_items", openai, data_plane,
       stored(&responses_api::serve_input_items)},
      {verb::post, "/v1/embeddings", openai, data_plane, own(&simulator::embeddings)},
      {verb::post, "/v1/rerank", openai, data_plane, own(&simulator::rerank)},
      {verb::post, "/rerank", openai, data_plane, own(&simulator::rerank)},
      {verb::get, "/v1/models", openai, info, facts_ctx(&serve_models)},
      {verb::get, "/v1/models/{}", openai, info, facts_ctx(&serve_model)},
      {verb::get, "/get_model_info", openai, info, cctx(&serve_model_info)},
      {verb::get, "/get_server_info", openai, info, facts_ctx(&serve_server_info)},
      {verb::get, "/server_info", openai, info, facts_ctx(&serve_server_info)},
      {verb::get, "/get_load", openai, info, cctx(&serve_load)},
      {verb::get, "/version", openai, info, cctx(&serve_version)},
      {verb::get, "/health_generate", openai, info, cctx(&serve_health)},
      {verb::get, "/health", openai, control, cctx(&serve_health)},
      {verb::post, "/flush_cache", openai, info, ctx(&serve_flush_cache)},
      {verb::get, "/flush_cache", openai, info, ctx(&serve_flush_cache)},
      {verb::get, "/sim/requests", openai, control, cctx(&serve_sim_requests)},
      {verb::delete_, "/sim/requests", openai, control, ctx(&serve_sim_clear_requests)},
      {verb::get, "/sim/config", openai, control, cctx(&serve_sim_config)},
      {verb::post, "/sim/config", openai, control, ctx(&serve_sim_set_config)},
      {verb::get, "/sim/stats", openai, control, cctx(&serve_sim_stats)},
  };
}

boost::system::error_code simulator::start() {
  if (auto ec = server_.start()) {
    return ec;
  }
  if (bootstrap_) {
    if (auto ec = bootstrap_->start()) {
      return ec;
    }
  }
  if (kv_server_) {
    if (auto ec = kv_server_->start()) {
      return ec;
    }
    ctx_->kv_port = kv_server_->port();
  }
  return {};
}

void simulator::stop() {
  server_.stop();
  if (bootstrap_) {
    bootstrap_->stop();
  }
  if (kv_server_) {
    kv_server_->stop();
  }
}

std::uint16_t simulator::bootstrap_port() const noexcept {
  return bootstrap_ ? bootstrap_->port() : kv_server_ ? kv_server_->port() : 0;
}

void simulator::handle(transport::request&& req, transport::inbound_status status,
                       std::shared_ptr<sim_reply> reply) {
  exchange x{std::move(req), std::move(reply), {}, openai, std::nullopt};
  try {
    const auto path = path_of(x.req.target());
    const auto match = routes_.find(x.req.method(), path);
    const auto kind = match.found ? match.found->kind : route_kind::info;
    if (kind != route_kind::control && path.substr(0, 5) != "/sim/") {
      ctx_->requests.record(x.req, unix_now_precise());
      ctx_->stats.count(path);
    }
    ctx_->logger->debug("#{} {} {}", ++seq_, std::string_view(x.req.method_string()),
                        std::string_view(x.req.target()));
    x.format = match.found ? match.found->format
                           : (path.substr(0, 12) == "/v1/messages" ? anthropic : openai);
    if (!match.found) {
      if (match.path_known) {
        transport::response res{http::status::method_not_allowed, 11};
        res.set(http::field::content_type, "application/json");
        res.set(http::field::allow, match.allow);
        res.body() = protocol::render_error_body(
            make_error(error_code::method_not_allowed, "Method Not Allowed"), x.format);
        return x.reply->respond(std::move(res));
      }
      return respond_error(x, make_error(error_code::not_found, "Not Found: " + std::string(path)));
    }
    if (status == transport::inbound_status::payload_too_large) {
      return respond_error(x, make_error(error_code::payload_too_large, "request body too large"));
    }
    if (status == transport::inbound_status::header_timeout) {
      return respond_error(
          x, make_error(error_code::request_header_timeout, "request head not complete in time"));
    }
    if (status != transport::inbound_status::complete) {
      return respond_error(x, make_error(error_code::header_too_large, "request head too large"));
    }
    x.params = match.params;
    if (match.found->kind == data_plane) {
      return inject_faults(x, match.found->handler);
    }
    match.found->handler(x);
  } catch (const std::exception& e) {
    // A bug: never let it escape into the server's handler.
    ctx_->logger->error("handler failed: {}", e.what());
    if (x.reply) {
      respond_error(x, make_error(error_code::internal_error, "internal simulator error"));
    }
  }
}

void simulator::inject_faults(exchange& x, const handler& next) {
  const auto& cfg = ctx_->config;
  x.token.emplace(std::shared_ptr<sim_stats>(ctx_, &ctx_->stats));
  if (cfg.fail_status != 0) {
    const auto status = static_cast<unsigned>(cfg.fail_status);
    return respond_error(x,
                         make_error(code_for_status(status), "injected failure (fail_status=" +
                                                                 std::to_string(status) + ")"),
                         status);
  }
  if (cfg.error_rate > 0 &&
      std::uniform_real_distribution<double>(0, 1)(ctx_->rng) < cfg.error_rate) {
    return respond_error(x, make_error(error_code::internal_error, "injected error (error_rate)"));
  }
  auto proceed = [this, &next](exchange& x) {
    if (ctx_->config.drop_after_events == 0) {
      return x.reply->abort();
    }
    next(x);
  };
  if (!(cfg.stall_ms > 0)) {
    return proceed(x);
  }
  // Hold the request, then go on; a client that leaves meanwhile releases it at once.
  const auto stall = duration_from_ms(cfg.stall_ms);
  auto timer = std::make_shared<net::steady_timer>(ctx_->ioc, stall);
  x.reply->on_disconnect([weak = std::weak_ptr<net::steady_timer>(timer)] {
    if (auto t = weak.lock()) {
      t->cancel();
    }
  });
  auto held = std::make_shared<exchange>(std::move(x));
  timer->async_wait([this, timer, held, proceed](boost::system::error_code ec) mutable {
    if (ec) {
      return; // the client left: dropping `held` releases its in-flight token
    }
    try {
      proceed(*held);
    } catch (const std::exception& e) {
      ctx_->logger->error("handler failed after stall: {}", e.what());
      held->reply->abort();
    }
  });
}

std::optional<nlohmann::json> simulator::read_json(exchange& x) {
  auto body = nlohmann::json::parse(x.req.body(), nullptr, false);
  if (body.is_discarded()) {
    respond_error(x, make_error(error_code::invalid_json, "the request body is not valid JSON"));
    return std::nullopt;
  }
  if (!body.is_object()) {
    respond_error(x, make_error(error_code::bad_request, "the request body must be a JSON object"));
    return std::nullopt;
  }
  if (auto model = body.find("model"); model != body.end() && !model->is_null()) {
    if (!model->is_string()) {
      respond_error(x, make_error(error_code::bad_request, "'model' must be a string", "model"));
      return std::nullopt;
    }
    if (model->get_ref<const std::string&>() != ctx_->config.model_id) {
      respond_error(x, make_error(error_code::model_not_found,
                                  "The model `" + model->get<std::string>() + "` does not exist.",
                                  "model"));
      return std::nullopt;
    }
  }
  return body;
}

std::optional<gen_request> simulator::prepare(exchange& x, api_family& family,
                                              const nlohmann::json& body) {
  parse_result parsed = [&]() -> parse_result {
    try {
      return family.parse(body, *ctx_);
    } catch (const nlohmann::json::exception& e) {
      return bad_request(std::string("invalid request: ") + e.what());
    }
  }();
  if (auto* err = std::get_if<api_error>(&parsed)) {
    respond_error(x, *err);
    return std::nullopt;
  }
  auto req = std::get<gen_request>(std::move(parsed));
  const bool ok = ctx_->config.runtime == engine_runtime::vllm ? read_kv_params(x, req, body)
                                                               : check_bootstrap(x, req, body);
  if (!ok) {
    return std::nullopt;
  }
  return req;
}

bool simulator::check_bootstrap(exchange& x, const gen_request& req, const nlohmann::json& body) {
  if (ctx_->config.role == worker_role::regular) {
    return true;
  }
  // SGLang's scheduler refuses a disaggregated request without a room, on both sides.
  bool missing = req.bootstrap.size() != req.prompts.size();
  for (const auto& b : req.bootstrap) {
    missing = missing || !b.room;
  }
  if (!missing) {
    return true;
  }
  ++ctx_->stats.rendezvous.rejected;
  const auto rid = body.contains("rid") && body["rid"].is_string() ? body["rid"].get<std::string>()
                                                                   : make_id("", ctx_->rng);
  respond_error(x, bad_request("Invalid request: Disaggregated request received without "
                               "bootstrap room id. req.rid='" +
                                   rid + "'",
                               "bootstrap_room"));
  return false;
}

bool simulator::read_kv_params(exchange& x, gen_request& req, const nlohmann::json& body) {
  auto parsed = parse_kv_transfer_params(body);
  if (auto* err = std::get_if<api_error>(&parsed)) {
    respond_error(x, *err);
    return false;
  }
  req.kv = std::get<std::optional<kv_params>>(std::move(parsed));
  if (!req.kv || !req.kv->do_remote_prefill) {
    return true;
  }
  // A decode leg: the params must say where the blocks are, or the transfer cannot happen.
  auto refuse = [&](std::string why) {
    ++ctx_->stats.kv.fetch_failures;
    respond_error(x, bad_request("Invalid kv_transfer_params: " + why, "kv_transfer_params"));
    return false;
  };
  if (req.prompts.size() != 1) {
    return refuse("a KV transfer serves one prompt, this request has " +
                  std::to_string(req.prompts.size()));
  }
  const auto& kv = *req.kv;
  std::vector<std::string> missing;
  if (!kv.remote_engine_id) {
    missing.emplace_back("remote_engine_id");
  }
  if (ctx_->config.connector == kv_connector::mooncake) {
    if (!kv.transfer_id) {
      missing.emplace_back("transfer_id");
    }
    std::string host;
    std::uint16_t port = 0;
    if (!kv.bootstrap_addr) {
      missing.emplace_back("remote_bootstrap_addr");
    } else if (!split_host_port(*kv.bootstrap_addr, host, port)) {
      return refuse("'remote_bootstrap_addr' must be http://host:port");
    }
  } else {
    for (auto [name, present] : {std::pair{"remote_block_ids", kv.remote_block_ids.has_value()},
                                 std::pair{"remote_host", kv.remote_host.has_value()},
                                 std::pair{"remote_port", kv.remote_port.has_value()}}) {
      if (!present) {
        missing.emplace_back(name);
      }
    }
  }
  if (!missing.empty()) {
    std::string list;
    for (const auto& m : missing) {
      list += (list.empty() ? "" : ", ") + m;
    }
    return refuse("do_remote_prefill without " + list + " (" +
                  std::string(to_string(ctx_->config.connector)) + ")");
  }
  return true;
}

void simulator::serve_generation(exchange& x, api_family& family) {
  auto body = read_json(x);
  if (!body) {
    return;
  }
  if (auto req = prepare(x, family, *body)) {
    generation::start(ctx_, family, std::move(*req), std::move(x.reply), std::move(*x.token));
  }
}

void simulator::respond_after(exchange& x, std::size_t prompt_tokens, std::string body) {
  const auto delay = time_to_first_token(latency(ctx_->config), prompt_tokens, ctx_->stats.active);
  if (delay.count() == 0) {
    return respond(*x.reply, 200, std::move(body));
  }
  auto timer = std::make_shared<net::steady_timer>(ctx_->ioc, delay);
  x.reply->on_disconnect([weak = std::weak_ptr<net::steady_timer>(timer)] {
    if (auto t = weak.lock()) {
      t->cancel();
    }
  });
  timer->async_wait([timer, held = std::make_shared<exchange>(std::move(x)),
                     body = std::move(body)](boost::system::error_code ec) mutable {
    if (!ec) {
      respond(*held->reply, 200, std::move(body));
    }
  });
}

// -- responses --

void simulator::responses_create(exchange& x) {
  auto body = read_json(x);
  if (!body) {
    return;
  }
  auto req = prepare(x, responses_, *body);
  if (!req) {
    return;
  }
  if (!req->extra["background"].get<bool>()) {
    generation::start(ctx_, responses_, std::move(*req), std::move(x.reply), std::move(*x.token));
    return;
  }
  // Background: nobody waits for the generation; the client polls or cancels it.
  req->stream = false;
  auto g = generation::start(ctx_, responses_, std::move(*req), nullptr, std::move(*x.token));
  auto* stored = responses_.store().find(g->state().id);
  if (stored == nullptr) {
    return respond_error(x,
                         make_error(error_code::internal_error, "background response not stored"));
  }
  if (!g->ended()) {
    stored->running = g;
  }
  respond(*x.reply, 200, dump(stored->response));
}

// -- one prefill, no tokens out --

void simulator::embeddings(exchange& x) {
  auto body = read_json(x);
  if (!body) {
    return;
  }
  auto parsed = parse_embeddings(*body, ctx_->config.embedding_dim, ctx_->config.model_id);
  if (auto* err = std::get_if<api_error>(&parsed)) {
    return respond_error(x, *err);
  }
  const auto& req = std::get<embeddings_request>(parsed);
  respond_after(x, req.tokens(), render_embeddings(req));
}

void simulator::rerank(exchange& x) {
  auto body = read_json(x);
  if (!body) {
    return;
  }
  auto parsed = parse_rerank(*body, ctx_->config.model_id);
  if (auto* err = std::get_if<api_error>(&parsed)) {
    return respond_error(x, *err);
  }
  const auto& req = std::get<rerank_request>(parsed);
  respond_after(x, req.tokens(), render_rerank(req, make_id("rerank-", ctx_->rng)));
}

worker_facts simulator::facts() const noexcept {
  return {port(), bootstrap_port(), started_at_};
}

} // namespace troupe::sim
