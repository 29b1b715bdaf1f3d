#include "apps/troupe-sim/bootstrap_server.hpp"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>

namespace troupe::sim {

namespace {

namespace http = transport::http;

constexpr std::string_view rooms_prefix = "/bootstrap/rooms/";

transport::response json_response(http::status status, const nlohmann::json& body) {
  transport::response res{status, 11};
  res.set(http::field::content_type, "application/json");
  res.body() = body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return res;
}

// The value of `name` in a query string (`a=1&b=2`), empty when absent.
std::string_view query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == name && eq != std::string_view::npos) {
      return pair.substr(eq + 1);
    }
  }
  return {};
}

} // namespace

bootstrap_server::bootstrap_server(net::io_context& ioc, std::string host, std::uint16_t port,
                                   room_board& board)
    : board_(board), server_(ioc, transport::server_options{.host = std::move(host), .port = port},
                             [this](transport::request&& req, transport::inbound_status status,
                                    std::shared_ptr<transport::reply_channel> reply) {
                               if (status != transport::inbound_status::complete) {
                                 return reply->respond(json_response(
                                     transport::status_of(status), {{"error", "request refused"}}));
                               }
                               handle(std::move(req), std::move(reply));
                             }) {}

boost::system::error_code bootstrap_server::start() {
  return server_.start();
}

void bootstrap_server::handle(transport::request&& req,
                              std::shared_ptr<transport::reply_channel> reply) {
  std::string_view target = req.target();
  auto qmark = target.find('?');
  auto path = target.substr(0, qmark);
  auto query = qmark == std::string_view::npos ? std::string_view{} : target.substr(qmark + 1);
  if (path == "/health") {
    return reply->respond(json_response(http::status::ok, {{"status", "ok"}}));
  }
  if (path.substr(0, rooms_prefix.size()) != rooms_prefix || path.size() == rooms_prefix.size()) {
    return reply->respond(json_response(http::status::not_found, {{"error", "not found"}}));
  }
  if (req.method() != http::verb::get) {
    return reply->respond(
        json_response(http::status::method_not_allowed, {{"error", "method not allowed"}}));
  }
  std::string room(path.substr(rooms_prefix.size()));
  std::int64_t wait_ms = 0;
  auto wait_text = query_param(query, "wait_ms");
  std::from_chars(wait_text.data(), wait_text.data() + wait_text.size(), wait_ms);
  wait_ms = std::clamp<std::int64_t>(wait_ms, 0, max_wait_ms);

  auto answer = [this, room, reply](bool ready) {
    auto state = ready ? room_state::ready : board_.state(room);
    reply->respond(json_response(ready ? http::status::ok : http::status::not_found,
                                 {{"room", room}, {"state", to_string(state)}}));
  };
  if (board_.state(room) == room_state::ready || wait_ms == 0) {
    return answer(board_.state(room) == room_state::ready);
  }
  auto wait = board_.wait(room, std::chrono::milliseconds{wait_ms}, answer);
  // The reply channel keeps the wait alive until the answer is sent or the client leaves.
  reply->on_disconnect([wait] { wait->cancel(); });
}

} // namespace troupe::sim
