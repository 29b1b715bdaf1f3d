#include "gateway/route_table.hpp"

#include "actors/errors.hpp"
#include "gateway/metered_reply.hpp"
#include "transport/header_fields.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <optional>
#include <random>
#include <span>
#include <spdlog/fmt/fmt.h>
#include <stdexcept>

namespace troupe::gateway {

namespace http = transport::http;

namespace {

/// The most segments a route's pattern may have: a lookup splits the request's path into an
/// array of this size (no allocation per request); a longer path matches no route.
constexpr std::size_t max_segments = 16;

/// Calls `f` with each non-empty segment of `path`, in order.
template <class F> void for_each_segment(std::string_view path, F&& f) {
  std::size_t i = 0;
  while (i < path.size()) {
    if (path[i] == '/') {
      ++i;
      continue;
    }
    auto j = path.find('/', i);
    if (j == std::string_view::npos) {
      j = path.size();
    }
    f(path.substr(i, j - i));
    i = j;
  }
}

/// The non-empty segments of pattern `path`.
std::vector<std::string> split_path(std::string_view path) {
  std::vector<std::string> out;
  for_each_segment(path, [&](std::string_view s) { out.emplace_back(s); });
  return out;
}

bool is_param(const std::string& segment) {
  return segment.size() > 2 && segment.front() == '{' && segment.back() == '}';
}

} // namespace

bool carries_key(const transport::request& req, const std::string& key) {
  if (auto it = req.find(http::field::authorization); it != req.end()) {
    std::string_view v = it->value();
    constexpr std::string_view bearer = "Bearer ";
    if (v.size() > bearer.size() && v.substr(0, bearer.size()) == bearer &&
        v.substr(bearer.size()) == key) {
      return true;
    }
  }
  if (auto it = req.find("x-api-key"); it != req.end()) {
    return it->value() == key;
  }
  return false;
}

void http_context::json(unsigned status, std::string body) const {
  auto res = actors::make_json_response(status, std::move(body), request_id);
  res.version(req.version());
  reply->respond(std::move(res));
}

void http_context::error(protocol::error_code code, std::string message, std::string param) const {
  reply->respond(actors::make_error_response({code, std::move(message), std::move(param)}, format,
                                             request_id, req.version()));
}

void route_table::add(http::verb method, std::string pattern, endpoint_handler handler,
                      protocol::api_format format, bool public_route) {
  auto segments = split_path(pattern);
  if (segments.size() > max_segments) {
    throw std::invalid_argument("route pattern with more than 16 segments: " + pattern);
  }
  routes_.push_back(
      {method, std::move(pattern), std::move(segments), std::move(handler), format, public_route});
  index_literal_paths();
}

void route_table::index_literal_paths() {
  // Recomputed whole on each add (a table has tens of routes, added once at start-up): the
  // answers point into `routes_`, which an add may move.
  literal_.clear();
  std::vector<http::verb> methods{http::verb::head};
  for (const auto& r : routes_) {
    if (std::find(methods.begin(), methods.end(), r.method) == methods.end()) {
      methods.push_back(r.method);
    }
  }
  for (const auto& r : routes_) {
    if (std::any_of(r.segments.begin(), r.segments.end(), is_param)) {
      continue;
    }
    std::string path;
    for (const auto& segment : r.segments) {
      path += '/';
      path += segment;
    }
    if (path.empty() || literal_.contains(path)) {
      continue;
    }
    literal_answers answers;
    for (auto method : methods) {
      answers.by_method.emplace_back(method, scan(method, path));
    }
    answers.otherwise = scan(http::verb::unknown, path);
    literal_.emplace(std::move(path), std::move(answers));
  }
}

route_table::match route_table::find(http::verb method, std::string_view path) const {
  if (auto it = literal_.find(path); it != literal_.end()) {
    for (const auto& [m, answer] : it->second.by_method) {
      if (m == method) {
        return answer;
      }
    }
    return it->second.otherwise;
  }
  return scan(method, path);
}

route_table::match route_table::scan(http::verb method, std::string_view path) const {
  match m;
  std::array<std::string_view, max_segments + 1> parts;
  std::size_t count = 0;
  for_each_segment(path, [&](std::string_view s) {
    if (count < parts.size()) {
      parts[count] = s;
    }
    ++count;
  });
  if (count > max_segments) {
    return m; // longer than any pattern
  }
  std::span<const std::string_view> segments(parts.data(), count);
  // The answer of route `r`, whose parameter segments hold `params`.
  auto answer = [&m](const route& r, std::vector<std::string>&& params) {
    m.handler = &r.handler;
    m.format = r.format;
    m.public_route = r.public_route;
    m.pattern = &r.pattern;
    m.params = std::move(params);
    return std::move(m);
  };
  // A HEAD no route names is answered by the path's GET route (RFC 9110 9.3.2: HEAD is GET
  // without the content; the transport drops the content), kept on the way.
  const route* get_route = nullptr;
  std::vector<std::string> get_params;
  bool head_route = false;
  bool get_seen = false;
  for (auto& r : routes_) {
    if (r.segments.size() != segments.size()) {
      continue;
    }
    std::vector<std::string> params;
    bool ok = true;
    for (std::size_t i = 0; i < segments.size() && ok; ++i) {
      if (is_param(r.segments[i])) {
        params.emplace_back(segments[i]);
      } else {
        ok = r.segments[i] == segments[i];
      }
    }
    if (!ok) {
      continue;
    }
    if (!m.path_known) {
      m.format = r.format;
      m.public_route = r.public_route;
      m.pattern = &r.pattern;
    }
    m.path_known = true;
    if (r.method == method) {
      return answer(r, std::move(params));
    }
    head_route = head_route || r.method == http::verb::head;
    get_seen = get_seen || r.method == http::verb::get;
    if (method == http::verb::head && r.method == http::verb::get && !get_route) {
      get_route = &r;
      get_params = std::move(params);
    }
    if (!m.allowed.empty()) {
      m.allowed += ", ";
    }
    m.allowed += std::string(http::to_string(r.method));
  }
  if (get_route) {
    m.allowed.clear();
    m.head_as_get = true;
    return answer(*get_route, std::move(get_params));
  }
  // Every GET route answers HEAD too: the 405's Allow says so.
  if (get_seen && !head_route) {
    m.allowed += ", HEAD";
  }
  return m;
}

namespace {

/// xoshiro256** (Blackman and Vigna): 256 bits of state, seeded whole from the OS's entropy
/// per thread, a few instructions per 64 bits. Request ids need to be unique across threads,
/// nodes and restarts, not secret; a 32-bit seed (what `mt19937_64{random_device{}()}` gets)
/// would make two threads' sequences equal once in 2^32 starts.
class id_bits {
public:
  id_bits() {
    std::random_device rd;
    for (auto& word : s_) {
      word = (std::uint64_t{rd()} << 32) | rd();
    }
    if ((s_[0] | s_[1] | s_[2] | s_[3]) == 0) {
      s_[0] = 1; // the one state the generator cannot leave
    }
  }

  std::uint64_t next() noexcept {
    auto result = std::rotl(s_[1] * 5, 7) * 9;
    auto t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = std::rotl(s_[3], 45);
    return result;
  }

private:
  std::array<std::uint64_t, 4> s_{};
};

/// Two lowercase hex digits per byte value.
constexpr auto hex_pairs = [] {
  constexpr char digits[] = "0123456789abcdef";
  std::array<char, 512> out{};
  for (int b = 0; b < 256; ++b) {
    out[2 * b] = digits[b >> 4];
    out[2 * b + 1] = digits[b & 0xf];
  }
  return out;
}();

} // namespace

std::string new_request_id() {
  thread_local id_bits bits;
  // 32 lowercase hex digits, by hand (snprintf cost ~1.5k instructions per request).
  std::string id(32, '0');
  for (int half = 0; half < 2; ++half) {
    auto word = bits.next();
    for (int i = 7; i >= 0; --i, word >>= 8) {
      std::memcpy(&id[half * 16 + 2 * i], &hex_pairs[2 * (word & 0xff)], 2);
    }
  }
  return id;
}

/// The request id the client gave in the first of `headers` it set (1 to 128 bytes), or a
/// fresh one.
std::string request_id_of(const transport::request& req, const transport::field_names& headers) {
  // The first field of each name in one pass (on the stack for the usual few names), then the
  // first name whose field qualifies.
  constexpr std::size_t few = 8;
  std::array<std::optional<std::string_view>, few> on_stack;
  std::vector<std::optional<std::string_view>> on_heap;
  std::span<std::optional<std::string_view>> first = on_stack;
  if (headers.size() <= few) {
    first = first.first(headers.size());
  } else {
    on_heap.resize(headers.size());
    first = on_heap;
  }
  transport::first_fields(req, headers, first);
  for (auto& value : first) {
    if (value && !value->empty() && value->size() <= 128) {
      return std::string(*value);
    }
  }
  return new_request_id();
}

namespace {

/// Answers a request the server cut short at one of its limits, in the route's format (the
/// connection closes after it).
void refuse_cut_short(http_context& ctx, transport::inbound_status status,
                      const actors::gateway_config& cfg) {
  using protocol::error_code;
  using transport::inbound_status;
  switch (status) {
  case inbound_status::payload_too_large:
    return ctx.error(error_code::payload_too_large, "the request body exceeds the limit of " +
                                                        std::to_string(cfg.max_payload_size) +
                                                        " bytes");
  case inbound_status::header_too_large:
    return ctx.error(error_code::header_too_large,
                     "the request head (request line and header fields) exceeds " +
                         std::to_string(cfg.max_request_header_bytes) + " bytes");
  case inbound_status::too_many_headers:
    return ctx.error(
        error_code::header_too_large,
        "the request has " + std::to_string(std::distance(ctx.req.begin(), ctx.req.end())) +
            " header fields; at most " + std::to_string(cfg.max_request_headers) + " are accepted");
  case inbound_status::header_timeout:
    return ctx.error(
        error_code::request_header_timeout,
        fmt::format("the request head was not complete within {:g} s",
                    std::chrono::duration<double>(cfg.request_header_timeout).count()));
  case inbound_status::complete:
    break;
  }
}

} // namespace

transport::request_handler make_front(actors::services_ptr svc,
                                      std::shared_ptr<const route_table> routes) {
  // The request id's header names, resolved once.
  auto id_headers = std::make_shared<const transport::field_names>(svc->cfg.request_id_headers);
  return [svc = std::move(svc), routes = std::move(routes), id_headers = std::move(id_headers)](
             transport::request&& req, transport::inbound_status status,
             std::shared_ptr<transport::reply_channel> reply) {
    http_context ctx;
    ctx.received = std::chrono::steady_clock::now();
    ctx.request_id = request_id_of(req, *id_headers);
    auto target = std::string_view{req.target()};
    auto path = target.substr(0, target.find('?'));
    auto m = routes->find(req.method(), path);
    ctx.format = m.format;
    if (svc->metrics) {
      // Unmatched paths share one label: clients cannot grow the scrape with made-up paths.
      std::string_view label = m.pattern ? std::string_view{*m.pattern} : "unmatched";
      reply = make_metered_reply(std::move(reply), svc->metrics, http::to_string(req.method()),
                                 label, ctx.received);
    }
    ctx.reply = std::move(reply);
    ctx.svc = svc;
    ctx.req = std::move(req);
    if (status != transport::inbound_status::complete) {
      return refuse_cut_short(ctx, status, svc->cfg);
    }
    if (!m.path_known) {
      return ctx.error(protocol::error_code::not_found, "no route for " +
                                                            std::string(ctx.req.method_string()) +
                                                            " " + std::string(path));
    }
    if (!m.public_route && !svc->cfg.api_key.empty() && !carries_key(ctx.req, svc->cfg.api_key)) {
      return ctx.error(protocol::error_code::unauthorized,
                       "missing or invalid API key (send Authorization: Bearer <key>)");
    }
    if (!m.handler) {
      auto res = actors::make_error_response({protocol::error_code::method_not_allowed,
                                              std::string(ctx.req.method_string()) +
                                                  " is not allowed on " + std::string(path) +
                                                  " (allowed: " + m.allowed + ")",
                                              {}},
                                             ctx.format, ctx.request_id, ctx.req.version());
      res.set(http::field::allow, m.allowed);
      return ctx.reply->respond(std::move(res));
    }
    ctx.params = std::move(m.params);
    (*m.handler)(ctx);
  };
}

} // namespace troupe::gateway
