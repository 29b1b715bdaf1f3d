#include "apps/troupe-sim/kv_server.hpp"

#include <nlohmann/json.hpp>
#include <optional>

namespace troupe::sim {

namespace {

namespace http = transport::http;

transport::response json_response(unsigned status, const nlohmann::json& body) {
  transport::response res{static_cast<http::status>(status), 11};
  res.set(http::field::content_type, "application/json");
  res.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return res;
}

std::optional<std::vector<std::uint64_t>> id_list(const nlohmann::json& body, const char* key) {
  auto it = body.find(key);
  if (it == body.end() || !it->is_array()) {
    return std::nullopt;
  }
  std::vector<std::uint64_t> out;
  for (const auto& v : *it) {
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0)) {
      return std::nullopt;
    }
    out.push_back(v.get<std::uint64_t>());
  }
  return out;
}

} // namespace

kv_server::kv_server(net::io_context& ioc, std::string host, std::uint16_t port, kv_store& store)
    : store_(store), server_(ioc, transport::server_options{.host = std::move(host), .port = port},
                             [this](transport::request&& req, transport::inbound_status,
                                    std::shared_ptr<transport::reply_channel> reply) {
                               handle(std::move(req), std::move(reply));
                             }) {}

boost::system::error_code kv_server::start() {
  return server_.start();
}

void kv_server::handle(transport::request&& req, std::shared_ptr<transport::reply_channel> reply) {
  std::string_view target = req.target();
  auto path = target.substr(0, target.find('?'));
  if (path == "/health") {
    return reply->respond(json_response(200, {{"status", "ok"}}));
  }
  if (path != "/kv/read") {
    return reply->respond(json_response(404, {{"error", "not found"}}));
  }
  if (req.method() != http::verb::post) {
    return reply->respond(json_response(405, {{"error", "method not allowed"}}));
  }
  auto body = nlohmann::json::parse(req.body(), nullptr, false);
  auto keys = body.is_object() ? id_list(body, "block_keys") : std::nullopt;
  if (!body.is_object() || !body.contains("engine_id") || !body["engine_id"].is_string() || !keys) {
    return reply->respond(
        json_response(400, {{"error", "a read needs 'engine_id' and 'block_keys'"}}));
  }
  const auto engine = body["engine_id"].get<std::string>();
  kv_read_result r;
  if (auto t = body.find("transfer_id"); t != body.end() && t->is_string()) {
    r = store_.read_transfer(engine, t->get<std::string>(), *keys);
  } else if (auto ids = id_list(body, "block_ids")) {
    r = store_.read(engine, *ids, *keys);
  } else {
    return reply->respond(
        json_response(400, {{"error", "a read needs 'block_ids' or 'transfer_id'"}}));
  }
  if (r.status != 200) {
    return reply->respond(json_response(r.status, {{"error", r.detail}}));
  }
  reply->respond(json_response(200, {{"blocks", r.blocks}}));
}

} // namespace troupe::sim
