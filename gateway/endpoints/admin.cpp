#include "actors/ask.hpp"
#include "actors/errors.hpp"
#include "actors/inspector.hpp"
#include "gateway/endpoints/admin_page.hpp"
#include "gateway/endpoints/endpoints.hpp"
#include "protocol/parse_number.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

namespace troupe::gateway {

namespace {

using verb = transport::http::verb;
using json = nlohmann::json;
using protocol::parse_number;

/// The key admin routes need: `--admin-api-key`, else `--api-key`, else none.
const std::string& admin_key(const actors::gateway_config& cfg) {
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

/// This node as members of a cluster name it: `--node-name`, by default its API address.
std::string node_name(const actors::gateway_config& cfg) {
  return cfg.node_name.empty() ? cfg.host + ":" + std::to_string(cfg.port) : cfg.node_name;
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

void fail_with(const http_context& ctx, const caf::error& e) {
  auto err = actors::to_api_error(e);
  ctx.error(err.code, err.message, err.param);
}

// -- GET /admin/actors, /admin/actors/{id} --

/// The io threads, their busy polling and their deferred writes (transport/io_loop.hpp).
json io_json(unsigned threads, const transport::io_loop_stats& io) {
  auto load = [](auto& a) { return a.load(std::memory_order_relaxed); };
  return {{"threads", threads},
          {"busy_poll_us", load(io.budget_us)},
          {"busy_poll_window_us", load(io.window_us)},
          {"busy_poll",
           {{"spins", load(io.spins)},
            {"hits", load(io.hits)},
            {"vetoes", load(io.vetoes)},
            {"window_changes", load(io.window_changes)},
            {"seconds", static_cast<double>(load(io.spin_ns)) / 1e9}}},
          {"send_batch", load(io.send_batch)},
          {"sends", {{"deferred", load(io.sends_deferred)}, {"flushes", load(io.send_flushes)}}}};
}

/// The `limit` query parameter of a listing: 0 when absent (list all), nullopt when it is not
/// a positive integer.
std::optional<std::uint64_t> limit_param(std::string_view target) {
  auto p = query_param(target, "limit");
  if (!p) {
    return 0;
  }
  auto v = parse_number<std::uint64_t>(*p);
  if (!v || *v == 0) {
    return std::nullopt;
  }
  return v;
}

/// The kinds `/admin/actors?kind=a,b` asks for (empty: every kind), or nullopt when the
/// parameter names none.
std::optional<std::vector<std::string>> actor_kinds(std::string_view target) {
  std::vector<std::string> kinds;
  auto p = query_param(target, "kind");
  if (!p) {
    return kinds;
  }
  auto rest = *p;
  while (!rest.empty()) {
    auto comma = rest.find(',');
    if (auto kind = rest.substr(0, comma); !kind.empty()) {
      kinds.emplace_back(kind);
    }
    if (comma == std::string_view::npos) {
      break;
    }
    rest = rest.substr(comma + 1);
  }
  if (kinds.empty()) {
    return std::nullopt;
  }
  return kinds;
}

void list_actors(http_context& ctx) {
  auto kinds = actor_kinds(ctx.req.target());
  if (!kinds) {
    return ctx.error(protocol::error_code::bad_request,
                     "kind must name at least one actor kind (e.g. kind=policy,registry)", "kind");
  }
  auto limit = limit_param(ctx.req.target());
  if (!limit) {
    return ctx.error(protocol::error_code::bad_request,
                     "limit must be a positive integer (the most actors to list)", "limit");
  }
  // Every running actor counts, short-lived ones (requests, PD legs) included, read before the
  // ask below spawns its own; the list holds the long-lived ones.
  auto head = "{\"node\":" + json(node_name(ctx.svc->cfg)).dump() +
              ",\"running\":" + std::to_string(ctx.svc->sys.registry().running()) +
              ",\"in_flight\":" + std::to_string(ctx.svc->tracker->size()) +
              ",\"io\":" + io_json(ctx.svc->cfg.io_threads, *ctx.svc->io).dump();
  actors::ask(
      ctx.svc->sys, ctx.svc->inspector,
      [ctx, head](const std::string& actors, std::uint64_t registered, std::uint64_t matched) {
        // The inspector's array is spliced in as it is: no second parse on the way out.
        ctx.json(200, head + ",\"registered\":" + std::to_string(registered) + ",\"matched\":" +
                          std::to_string(matched) + ",\"actors\":" + actors + "}");
      },
      [ctx](caf::error& e) { fail_with(ctx, e); }, list_atom_v, std::move(*kinds), *limit);
}

void get_actor(http_context& ctx) {
  auto id = parse_number<caf::actor_id>(ctx.params.at(0));
  if (!id) {
    return ctx.error(protocol::error_code::not_found,
                     "no long-lived actor with id '" + ctx.params.at(0) + "'");
  }
  actors::ask(
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

std::string hex(std::uint64_t x) {
  char buf[20];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(x));
  return buf;
}

std::int64_t ms_since(std::chrono::steady_clock::time_point t) {
  if (t == std::chrono::steady_clock::time_point{}) {
    return -1; // never heard
  }
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t)
      .count();
}

std::int64_t epoch_ms(std::chrono::system_clock::time_point t) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

void cluster_members(http_context& ctx) {
  auto fleet = ctx.svc->fleet->get();
  auto status = ctx.svc->cluster->get();
  auto node = node_name(ctx.svc->cfg);
  json members = json::array();
  std::map<std::string, int> counts{{"up", 0}, {"suspect", 0}, {"down", 0}};
  auto self_entry = [&] {
    return json{{"name", node},
                {"address", ctx.svc->cfg.host + ":" + std::to_string(ctx.svc->cfg.port)},
                {"state", "up"},
                {"self", true},
                {"last_heard_ms", 0},
                {"registry_version", fleet->version},
                {"shared_version", fleet->shared_version},
                {"registry_digest", hex(fleet->digest)},
                {"in_sync", true},
                {"workers", fleet->workers.size()}};
  };
  if (!status->enabled) {
    // Alone: this node is the only member.
    members.push_back(self_entry());
    counts["up"] = 1;
  }
  for (auto& m : status->enabled ? status->members : std::vector<services::member_status>{}) {
    if (m.self) {
      auto j = self_entry();
      j["cluster_address"] = m.cluster_address;
      j["incarnation"] = hex(m.incarnation);
      members.push_back(std::move(j));
      ++counts["up"];
      continue;
    }
    ++counts[m.state];
    members.push_back({{"name", m.name},
                       {"address", m.api_address},
                       {"cluster_address", m.cluster_address},
                       {"state", m.state},
                       {"self", false},
                       {"last_heard_ms", ms_since(m.last_heard)},
                       {"since", epoch_ms(m.since)},
                       {"reason", m.reason},
                       {"incarnation", hex(m.incarnation)},
                       {"registry_version", m.registry_version},
                       {"shared_version", m.shared_version},
                       {"registry_digest", hex(m.registry_digest)},
                       {"in_sync", m.state == "up" && m.registry_digest == fleet->digest},
                       {"workers", m.workers}});
  }
  json body{{"self", node},
            {"clustered", status->enabled},
            {"transport", status->enabled ? json(status->transport) : json()},
            {"registry_version", fleet->version},
            {"shared_version", fleet->shared_version},
            {"registry_digest", hex(fleet->digest)},
            {"members", std::move(members)},
            {"counts", counts}};
  auto conflicts = json::array();
  for (auto& c : status->name_conflicts) {
    conflicts.push_back({{"name", c.name},
                         {"member_address", c.member_address},
                         {"refused_address", c.refused_address},
                         {"since_ms", std::chrono::duration_cast<std::chrono::milliseconds>(
                                          c.since.time_since_epoch())
                                          .count()}});
  }
  body["name_conflicts"] = std::move(conflicts);
  ctx.json(200, body.dump(-1, ' ', false, json::error_handler_t::replace));
}

/// A worker an operator looks at first: not healthy, its breaker not closed, or not routable.
bool troubled(const actors::worker_entry& w) {
  return w.live->health.load(std::memory_order_relaxed) != actors::health_state::healthy ||
         w.live->breaker.load(std::memory_order_relaxed) != actors::breaker_state::closed ||
         w.models.empty();
}

/// The indices of the workers of `fleet` a view with `limit` (0: all) lists, in listing order:
/// all in fleet order; with a limit, the troubled ones first (`troubled`), then the others,
/// each in fleet order.
std::vector<std::size_t> workers_listed(const actors::fleet_snapshot& fleet, std::uint64_t limit) {
  std::vector<std::size_t> order(fleet.workers.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (limit == 0) {
    return order;
  }
  std::stable_partition(order.begin(), order.end(),
                        [&](std::size_t i) { return troubled(*fleet.workers[i]); });
  order.resize(std::min<std::uint64_t>(limit, order.size()));
  return order;
}

void workers_view(http_context& ctx) {
  auto limit = limit_param(ctx.req.target());
  if (!limit) {
    return ctx.error(protocol::error_code::bad_request,
                     "limit must be a positive integer (the most workers to list)", "limit");
  }
  auto fleet = ctx.svc->fleet->get();
  auto status = ctx.svc->cluster->get();
  auto node = node_name(ctx.svc->cfg);
  // Peers' shares of worker `id` as they last reported them, as f(member, load) (only members
  // up count: a node declared down no longer contributes).
  auto peer_loads = [&](const std::string& id, auto&& f) {
    for (auto& m : status->members) {
      if (m.self || m.state == "down") {
        continue;
      }
      auto it = m.loads.find(id);
      f(m, it == m.loads.end() ? 0 : it->second);
    }
  };
  // The totals cover the whole fleet, listed or not.
  long long total_load = 0;
  long long local_total = 0;
  std::map<std::string, long long> node_totals;
  json lacking_key = json::array();   // workers whose api key did not reach this node
  std::vector<long long> local_loads; // read once: a listed worker's row agrees with the totals
  local_loads.reserve(fleet->workers.size());
  for (auto& w : fleet->workers) {
    auto local = local_loads.emplace_back(w->live->local_load());
    local_total += local;
    total_load += local;
    peer_loads(w->id, [&](auto& m, auto n) {
      node_totals[m.name] += n;
      total_load += n;
    });
    if (w->key_missing) {
      lacking_key.push_back(w->id);
    }
  }
  json workers = json::array();
  for (auto i : workers_listed(*fleet, *limit)) {
    auto& w = fleet->workers[i];
    json by_node{{node, local_loads[i]}};
    long long sum = local_loads[i];
    peer_loads(w->id, [&](auto& m, auto n) {
      by_node[m.name] = n;
      sum += n;
    });
    auto j = to_json(*w);
    j["origin"] = w->origin;
    j["api_key_missing"] = w->key_missing;
    j["load_by_node"] = std::move(by_node);
    j["load_total"] = sum;
    workers.push_back(std::move(j));
  }
  json nodes = json::array({{{"name", node},
                             {"self", true},
                             {"load", local_total},
                             {"workers", fleet->workers.size()}}});
  for (auto& m : status->members) {
    if (!m.self && m.state != "down") {
      nodes.push_back({{"name", m.name},
                       {"self", false},
                       {"state", m.state},
                       {"load", node_totals[m.name]},
                       {"workers", m.workers}});
    }
  }
  json body{{"version", fleet->version},    {"total", fleet->workers.size()},
            {"listed", workers.size()},     {"load", total_load},
            {"nodes", std::move(nodes)},    {"workers_lacking_key", std::move(lacking_key)},
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
  add("/admin/cluster", cluster_members);
  add("/admin/workers", workers_view);
  // The page holds no data (it fetches the routes above with the key the operator enters), so
  // a browser can open it without a header.
  routes.add(verb::get, "/admin", page, protocol::api_format::openai, true);
}

} // namespace troupe::gateway
