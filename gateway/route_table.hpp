#pragma once

#include "actors/gateway_services.hpp"
#include "protocol/error.hpp"
#include "protocol/string_hash.hpp"
#include "transport/http_server.hpp"

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace troupe::gateway {

/// Everything an endpoint handler needs about one HTTP request.
struct http_context {
  transport::request req;
  std::shared_ptr<transport::reply_channel> reply;
  std::string request_id;
  std::vector<std::string> params; ///< Values of `{...}` segments of the route pattern.
  std::chrono::steady_clock::time_point received;
  actors::services_ptr svc;
  protocol::api_format format = protocol::api_format::openai;

  /// Answers with a JSON body.
  void json(unsigned status, std::string body) const;

  /// Answers with an error in the route's format.
  void error(protocol::error_code code, std::string message, std::string param = {}) const;
};

/// A small handler for one (method, path) route.
using endpoint_handler = std::function<void(http_context&)>;

/// Maps (method, path pattern) to handlers. Patterns are literal segments and `{name}`
/// segments matching any one segment, e.g. `/v1/responses/{id}/cancel`.
class route_table {
public:
  /// How a lookup ended.
  struct match {
    const endpoint_handler* handler = nullptr; ///< Null: no route for this method.
    protocol::api_format format = protocol::api_format::openai;
    bool public_route = false;            ///< Served without the API key.
    const std::string* pattern = nullptr; ///< The matched route's pattern (a metric label).
    bool path_known = false;              ///< Some method matches the path (else 404).
    std::string allowed;                  ///< Methods the path accepts, for 405's `Allow`.
    /// A HEAD answered by the path's GET route (`handler` is the GET's): the handler runs as
    /// for a GET (a proxied one asks its worker with a GET) and the transport, which knows
    /// the request was a HEAD, sends the head alone.
    bool head_as_get = false;
    std::vector<std::string> params;
  };

  route_table() = default;
  // A copy's index would point into the original's routes; a move keeps them where they are.
  route_table(const route_table&) = delete;
  route_table& operator=(const route_table&) = delete;
  route_table(route_table&&) noexcept = default;
  route_table& operator=(route_table&&) noexcept = default;

  /// Adds a route. `public_route` routes (health probes) need no API key.
  void add(transport::http::verb method, std::string pattern, endpoint_handler handler,
           protocol::api_format format = protocol::api_format::openai, bool public_route = false);

  /// Looks up `path` (without query) for `method`.
  match find(transport::http::verb method, std::string_view path) const;

private:
  /// `find` by a scan of every route (what the literal paths' answers are computed by).
  match scan(transport::http::verb method, std::string_view path) const;
  void index_literal_paths();

  /// The answers for a path that is some route's literal pattern, written as patterns are
  /// ("/v1/chat/completions": no parameter, no empty segment), by method: one hash lookup
  /// instead of a scan of the table on nearly every request.
  struct literal_answers {
    std::vector<std::pair<transport::http::verb, match>> by_method;
    match otherwise; ///< For a method no route has.
  };

  struct route {
    transport::http::verb method;
    std::string pattern;
    std::vector<std::string> segments;
    endpoint_handler handler;
    protocol::api_format format;
    bool public_route;
  };
  std::vector<route> routes_;
  std::unordered_map<std::string, literal_answers, protocol::string_hash, std::equal_to<>> literal_;
};

/// The transport handler of a node: request id, payload limit, authentication, route lookup
/// (404/405), then the route's handler.
transport::request_handler make_front(actors::services_ptr svc,
                                      std::shared_ptr<const route_table> routes);

/// True when `req` carries `key` as a Bearer token (or as `x-api-key`, as Anthropic clients
/// send it).
bool carries_key(const transport::request& req, const std::string& key);

/// A fresh request id (32 hex digits).
std::string new_request_id();

} // namespace troupe::gateway
