#include "actors/ask.hpp"
#include "actors/endpoints/admin_page.hpp"
#include "actors/endpoints/endpoints.hpp"
#include "actors/errors.hpp"
#include "actors/inspector.hpp"

#include <charconv>
#include <nlohmann/json.hpp>

namespace troupe::actors {

namespace {

using verb = transport::http::verb;
using json = nlohmann::json;

/// The key admin routes need: `--admin-api-key`, else `--api-key`, else none.
const std::string& admin_key(const gateway_config& cfg) {
  return cfg.admin_api_key.empty() ? cfg.api_key : cfg.admin_api_key;
}

/// Admin routes check their own key (the front only knows the data-plane one).
endpoint_handler guarded(endpoint_handler handler) {
  return [handler = std::move(handler)](http_context& ctx) {
    auto& key = admin_key(ctx.svc->cfg);
    if (!key.empty() && !carries_key(ctx.req, key)) {
      return ctx.error(protocol::error_code::unauthorized,
                       "missing or invalid admin API key (send Authorization: Bearer <key>)");
    }
    handler(ctx);
  };
}

/// This node as members of a cluster name it: its API address.
std::string node_name(const gateway_config& cfg) {
  return cfg.host + ":" + std::to_string(cfg.port);
}

/// The value of query parameter `key` in `target`, if present (no percent-decoding: admin
/// parameters are numbers).
std::optional<std::string_view> query_param(std::string_view target, std::string_view key) {
  auto q = target.find('?');
  if (q == std::string_view::npos) {
    return std::nullopt;
  }
  auto rest = target.substr(q + 1);
  while (!rest.empty()) {
    auto amp = rest.find('&');
    auto pair = rest.substr(0, amp);
    auto eq = pair.find('=');
    if (pair.substr(0, eq) == key) {
      return eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1);
    }
    if (amp == std::string_view::npos) {
      break;
    }
    rest = rest.substr(amp + 1);
  }
  return std::nullopt;
}

template <class T> std::optional<T> parse_number(std::string_view s) {
  T value{};
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc{} || end != s.data() + s.size()) {
    return std::nullopt;
  }
  return value;
}

void fail_with(const http_context& ctx, const caf::error& e) {
  auto err = to_api_error(e);
  ctx.error(err.code, err.message, err.param);
}

// -- GET /admin/actors, /admin/actors/{id} --

void list_actors(http_context& ctx) {
  auto node = node_name(ctx.svc->cfg);
  ask(
      ctx.svc->sys, ctx.svc->inspector,
      [ctx, node](const std::string& actors) {
        // The inspector's array is spliced in as it is: no second parse on the way out.
        ctx.json(200, "{\"node\":" + json(node).dump() + ",\"actors\":" + actors + "}");
      },
      [ctx](caf::error& e) { fail_with(ctx, e); }, list_atom_v);
}

void get_actor(http_context& ctx) {
  auto id = parse_number<caf::actor_id>(ctx.params.at(0));
  if (!id) {
    return ctx.error(protocol::error_code::not_found,
                     "no long-lived actor with id '" + ctx.params.at(0) + "'");
  }
  ask(
      ctx.svc->sys, ctx.svc->inspector, [ctx](const std::string& state) { ctx.json(200, state); },
      [ctx](caf::error& e) { fail_with(ctx, e); }, inspect_atom_v, *id);
}

// -- GET /admin/requests --

void list_requests(http_context& ctx) {
  std::int64_t older_than = 0;
  if (auto p = query_param(ctx.req.target(), "older_than_ms")) {
    auto v = parse_number<std::int64_t>(*p);
    if (!v || *v < 0) {
      return ctx.error(protocol::error_code::bad_request,
                       "older_than_ms must be a non-negative integer (milliseconds)",
                       "older_than_ms");
    }
    older_than = *v;
  }
  auto& tracker = *ctx.svc->tracker;
  auto requests = tracker.list(std::chrono::milliseconds{older_than});
  json body{{"node", node_name(ctx.svc->cfg)},
            {"in_flight", tracker.size()},
            {"older_than_ms", older_than},
            {"total", requests.size()},
            {"requests", std::move(requests)}};
  ctx.json(200, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

// -- GET /admin/cluster, /admin/workers --

void cluster_view(http_context& ctx) {
  // One member (this node) until the cluster lands: the shape already carries a list, the
  // states and each member's own registry version, so peers slot in without a new format.
  auto fleet = ctx.svc->fleet->get();
  auto node = node_name(ctx.svc->cfg);
  json self{{"name", node},
            {"address", node},
            {"state", "up"},
            {"self", true},
            {"last_heard_ms", 0},
            {"registry_version", fleet->version},
            {"workers", fleet->workers.size()}};
  json body{{"self", node},
            {"registry_version", fleet->version},
            {"members", json::array({std::move(self)})},
            {"counts", {{"up", 1}, {"suspect", 0}, {"down", 0}}}};
  ctx.json(200, body.dump());
}

void workers_view(http_context& ctx) {
  auto fleet = ctx.svc->fleet->get();
  auto node = node_name(ctx.svc->cfg);
  json workers = json::array();
  long long total_load = 0;
  for (auto& w : fleet->workers) {
    auto j = to_json(*w);
    auto load = w->live->load();
    total_load += load;
    // Per-node load: this node's in-flight count is the only contribution until peers share
    // theirs; fleet-wide load is their sum.
    j["load_by_node"] = {{node, load}};
    j["load_total"] = load;
    workers.push_back(std::move(j));
  }
  json nodes = json::array(
      {{{"name", node}, {"self", true}, {"load", total_load}, {"workers", fleet->workers.size()}}});
  json body{{"version", fleet->version},
            {"total", fleet->workers.size()},
            {"load", total_load},
            {"nodes", std::move(nodes)},
            {"workers", std::move(workers)}};
  ctx.json(200, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

// -- GET /admin --

void page(http_context& ctx) {
  transport::response res{transport::http::status::ok, ctx.req.version()};
  res.set(transport::http::field::content_type, "text/html; charset=utf-8");
  res.set(transport::http::field::cache_control, "no-store");
  res.set("x-request-id", ctx.request_id);
  res.body() = std::string(admin_page_html());
  ctx.reply->respond(std::move(res));
}

} // namespace

void add_admin_routes(route_table& routes) {
  // Admin routes are "public" to the front: they check the admin key themselves.
  auto add = [&](std::string pattern, endpoint_handler h) {
    routes.add(verb::get, std::move(pattern), guarded(std::move(h)), protocol::api_format::openai,
               true);
  };
  add("/admin/actors", list_actors);
  add("/admin/actors/{id}", get_actor);
  add("/admin/requests", list_requests);
  add("/admin/cluster", cluster_view);
  add("/admin/workers", workers_view);
  // The page holds no data (it fetches the routes above with the key the operator enters), so
  // a browser can open it without a header.
  routes.add(verb::get, "/admin", page, protocol::api_format::openai, true);
}

} // namespace troupe::actors
