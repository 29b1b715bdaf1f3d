#include "apps/troupe-sim/simulator.hpp"

#include "apps/troupe-sim/api_common.hpp"
#include "apps/troupe-sim/api_embeddings.hpp"
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

constexpr std::string_view version = "troupe-sim 0.1.0";

void respond(sim_reply& reply, unsigned status, std::string body,
             std::string_view content_type = "application/json") {
  transport::response res{static_cast<http::status>(status), 11};
  if (!body.empty()) {
    res.set(http::field::content_type, content_type);
  }
  res.body() = std::move(body);
  reply.respond(std::move(res));
}

void respond_error(exchange& x, const api_error& err, unsigned status = 0) {
  respond(*x.reply, status != 0 ? status : protocol::http_status(err.code),
          protocol::render_error_body(err, x.format));
}

// The error a status stands for, to render an injected failure in the API's format.
error_code code_for_status(unsigned status) {
  switch (status) {
  case 400:
    return error_code::bad_request;
  case 401:
  case 403:
    return error_code::unauthorized;
  case 404:
    return error_code::not_found;
  case 409:
    return error_code::conflict;
  case 413:
    return error_code::payload_too_large;
  case 429:
    return error_code::too_many_requests;
  case 502:
    return error_code::bad_gateway;
  case 503:
    return error_code::service_unavailable;
  case 504:
    return error_code::gateway_timeout;
  default:
    return status >= 400 && status < 500 ? error_code::bad_request : error_code::internal_error;
  }
}

std::string_view path_of(std::string_view target) {
  return target.substr(0, target.find('?'));
}

} // namespace

simulator::simulator(net::io_context& ioc, sim_config cfg, std::shared_ptr<spdlog::logger> log)
    : ctx_(std::make_shared<sim_context>(ioc, std::move(cfg), std::move(log))),
      routes_(make_routes()),
      server_(ioc, transport::server_options{.host = ctx_->config.host, .port = ctx_->config.port},
              [this](transport::request&& req, transport::inbound_status status,
                     std::shared_ptr<sim_reply> reply) {
                handle(std::move(req), status, std::move(reply));
              }),
      started_at_(unix_now()) {
  if (ctx_->config.role == worker_role::prefill) {
    bootstrap_ = std::make_unique<bootstrap_server>(ioc, ctx_->config.host,
                                                    ctx_->config.bootstrap_port, ctx_->rooms);
  }
}

simulator::~simulator() = default;

std::vector<route<simulator::handler>> simulator::make_routes() {
  auto gen = [this](api_family& family) {
    return [this, &family](exchange& x) { serve_generation(x, family); };
  };
  auto bind = [this](void (simulator::*f)(exchange&)) {
    return [this, f](exchange& x) { (this->*f)(x); };
  };
  return {
      {verb::post, "/generate", openai, data_plane, gen(generate_)},
      {verb::post, "/v1/chat/completions", openai, data_plane, gen(chat_)},
      {verb::post, "/v1/completions", openai, data_plane, gen(completions_)},
      {verb::post, "/v1/messages", anthropic, data_plane, gen(messages_)},
      {verb::post, "/v1/responses", openai, data_plane, bind(&simulator::responses_create)},
      {verb::get, "/v1/responses/{}", openai, data_plane, bind(&simulator::responses_get)},
      {verb::delete_, "/v1/responses/{}", openai, data_plane, bind(&simulator::responses_delete)},
      {verb::post, "/v1/responses/{}/cancel", openai, data_plane,
       bind(&simulator::responses_cancel)},
      {verb::get, "/v1/responses/{}/input_items", openai, data_plane,
       bind(&simulator::responses_input_items)},
      {verb::post, "/v1/embeddings", openai, data_plane, bind(&simulator::embeddings)},
      {verb::post, "/v1/rerank", openai, data_plane, bind(&simulator::rerank)},
      {verb::post, "/rerank", openai, data_plane, bind(&simulator::rerank)},
      {verb::get, "/v1/models", openai, info, bind(&simulator::models)},
      {verb::get, "/v1/models/{}", openai, info, bind(&simulator::model)},
      {verb::get, "/get_model_info", openai, info, bind(&simulator::model_info)},
      {verb::get, "/get_server_info", openai, info, bind(&simulator::server_info)},
      {verb::get, "/server_info", openai, info, bind(&simulator::server_info)},
      {verb::get, "/get_load", openai, info, bind(&simulator::load)},
      {verb::get, "/health_generate", openai, info, bind(&simulator::health)},
      {verb::get, "/health", openai, control, bind(&simulator::health)},
      {verb::post, "/flush_cache", openai, info, bind(&simulator::flush_cache)},
      {verb::get, "/flush_cache", openai, info, bind(&simulator::flush_cache)},
      {verb::get, "/sim/requests", openai, control, bind(&simulator::sim_requests)},
      {verb::delete_, "/sim/requests", openai, control, bind(&simulator::sim_clear_requests)},
      {verb::get, "/sim/config", openai, control, bind(&simulator::sim_get_config)},
      {verb::post, "/sim/config", openai, control, bind(&simulator::sim_set_config)},
      {verb::get, "/sim/stats", openai, control, bind(&simulator::sim_get_stats)},
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
  return {};
}

void simulator::stop() {
  server_.stop();
  if (bootstrap_) {
    bootstrap_->stop();
  }
}

std::uint16_t simulator::bootstrap_port() const noexcept {
  return bootstrap_ ? bootstrap_->port() : 0;
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
  if (ctx_->config.role != worker_role::regular) {
    // SGLang's scheduler refuses a disaggregated request without a room, on both sides.
    bool missing = req.bootstrap.size() != req.prompts.size();
    for (const auto& b : req.bootstrap) {
      missing = missing || !b.room;
    }
    if (missing) {
      ++ctx_->stats.rendezvous.rejected;
      const auto rid = body.contains("rid") && body["rid"].is_string()
                           ? body["rid"].get<std::string>()
                           : make_id("", ctx_->rng);
      respond_error(x, bad_request("Invalid request: Disaggregated request received without "
                                   "bootstrap room id. req.rid='" +
                                       rid + "'",
                                   "bootstrap_room"));
      return std::nullopt;
    }
  }
  return req;
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

void simulator::responses_get(exchange& x) {
  const auto& id = x.params.at(0);
  if (auto* stored = responses_.store().find(id)) {
    return respond(*x.reply, 200, dump(stored->response));
  }
  respond_error(x, make_error(error_code::not_found, "Response with id '" + id + "' not found."));
}

void simulator::responses_delete(exchange& x) {
  const auto& id = x.params.at(0);
  if (auto* stored = responses_.store().find(id)) {
    if (auto g = stored->running.lock()) {
      g->cancel();
    }
    responses_.store().erase(id);
    return respond(*x.reply, 200, dump({{"id", id}, {"object", "response"}, {"deleted", true}}));
  }
  respond_error(x, make_error(error_code::not_found, "Response with id '" + id + "' not found."));
}

void simulator::responses_cancel(exchange& x) {
  const auto& id = x.params.at(0);
  auto* stored = responses_.store().find(id);
  if (stored == nullptr) {
    return respond_error(
        x, make_error(error_code::not_found, "Response with id '" + id + "' not found."));
  }
  if (!stored->background) {
    return respond_error(
        x, bad_request("Only responses created with background=true can be cancelled.", "id"));
  }
  if (auto g = stored->running.lock()) {
    g->cancel(); // updates the stored response through the family's `ended`
  }
  respond(*x.reply, 200, dump(stored->response));
}

void simulator::responses_input_items(exchange& x) {
  const auto& id = x.params.at(0);
  auto* stored = responses_.store().find(id);
  if (stored == nullptr) {
    return respond_error(
        x, make_error(error_code::not_found, "Response with id '" + id + "' not found."));
  }
  const auto& items = stored->input_items;
  nlohmann::json first =
      items.empty() ? nlohmann::json() : nlohmann::json(items.front().value("id", ""));
  nlohmann::json last =
      items.empty() ? nlohmann::json() : nlohmann::json(items.back().value("id", ""));
  respond(*x.reply, 200,
          dump({{"object", "list"},
                {"data", items},
                {"first_id", std::move(first)},
                {"last_id", std::move(last)},
                {"has_more", false}}));
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

// -- worker information --

void simulator::models(exchange& x) {
  const auto& cfg = ctx_->config;
  respond(*x.reply, 200,
          dump({{"object", "list"},
                {"data", nlohmann::json::array({{{"id", cfg.model_id},
                                                 {"object", "model"},
                                                 {"created", started_at_},
                                                 {"owned_by", "sglang"},
                                                 {"root", cfg.model_id},
                                                 {"max_model_len", cfg.context_length}}})}}));
}

void simulator::model(exchange& x) {
  const auto& cfg = ctx_->config;
  if (x.params.at(0) != cfg.model_id) {
    return respond_error(x, make_error(error_code::model_not_found,
                                       "The model `" + x.params[0] + "` does not exist.", "model"));
  }
  respond(*x.reply, 200,
          dump({{"id", cfg.model_id},
                {"object", "model"},
                {"created", started_at_},
                {"owned_by", "sglang"},
                {"root", cfg.model_id},
                {"max_model_len", cfg.context_length}}));
}

void simulator::model_info(exchange& x) {
  const auto& cfg = ctx_->config;
  respond(*x.reply, 200,
          dump({{"model_path", cfg.model_id},
                {"tokenizer_path", cfg.model_id},
                {"served_model_name", cfg.model_id},
                {"is_generation", true},
                {"preferred_sampling_params", nullptr},
                {"weight_version", "default"},
                {"has_image_understanding", false},
                {"has_audio_understanding", false},
                {"model_type", "troupe_sim"},
                {"architectures", {"TroupeSimForCausalLM"}},
                {"vocab_size", vocab_size},
                {"context_length", cfg.context_length}}));
}

void simulator::server_info(exchange& x) {
  const auto& cfg = ctx_->config;
  const auto mode = cfg.role == worker_role::regular ? "null" : to_string(cfg.role);
  nlohmann::json info = {
      {"model_path", cfg.model_id},
      {"tokenizer_path", cfg.model_id},
      {"served_model_name", cfg.model_id},
      {"host", cfg.host},
      {"port", port()},
      {"disaggregation_mode", mode},
      {"disaggregation_bootstrap_port",
       cfg.role == worker_role::prefill ? nlohmann::json(bootstrap_port()) : nlohmann::json()},
      {"page_size", cfg.cache_block_tokens},
      {"context_length", cfg.context_length},
      {"max_total_num_tokens", cfg.cache_capacity_blocks * cfg.cache_block_tokens},
      {"tp_size", 1},
      {"dp_size", 1},
      {"version", version},
      {"internal_states",
       nlohmann::json::array({{{"load", ctx_->stats.active}, {"last_gen_throughput", 0.0}}})},
      {"sim", to_json(cfg)},
  };
  respond(*x.reply, 200, dump(info));
}

void simulator::load(exchange& x) {
  respond(*x.reply, 200,
          dump(nlohmann::json::array({{{"dp_rank", 0},
                                       {"num_reqs", ctx_->stats.active},
                                       {"num_waiting_reqs", 0},
                                       {"num_tokens", ctx_->stats.active_tokens}}})));
}

void simulator::health(exchange& x) {
  const auto status = static_cast<unsigned>(ctx_->config.health_status);
  if (status == 200) {
    return respond(*x.reply, 200, "");
  }
  respond_error(x,
                make_error(code_for_status(status),
                           "unhealthy (health_status=" + std::to_string(status) + ")"),
                status);
}

void simulator::flush_cache(exchange& x) {
  ctx_->cache.clear();
  respond(*x.reply, 200, "Cache flushed.\n", "text/plain");
}

// -- /sim: the control API of tests --

void simulator::sim_requests(exchange& x) {
  respond(*x.reply, 200, dump(ctx_->requests.to_json()));
}

void simulator::sim_clear_requests(exchange& x) {
  ctx_->requests.clear();
  respond(*x.reply, 200, R"({"status":"ok"})");
}

void simulator::sim_get_config(exchange& x) {
  respond(*x.reply, 200, dump(to_json(ctx_->config)));
}

void simulator::sim_set_config(exchange& x) {
  auto knobs = nlohmann::json::parse(x.req.body(), nullptr, false);
  if (knobs.is_discarded()) {
    return respond_error(x, make_error(error_code::invalid_json, "the body is not valid JSON"));
  }
  if (auto why = apply_knobs(ctx_->config, knobs)) {
    return respond_error(x, bad_request(*why));
  }
  ctx_->logger->info("configuration changed: {}", dump(knobs));
  respond(*x.reply, 200, dump(to_json(ctx_->config)));
}

void simulator::sim_get_stats(exchange& x) {
  respond(*x.reply, 200, dump(ctx_->stats.to_json(ctx_->cache)));
}

} // namespace troupe::sim
