#include "gateway/endpoints/endpoints.hpp"

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

namespace troupe::gateway {

namespace {

using verb = transport::http::verb;
using json = nlohmann::json;

/// One routable model: the earliest registration among its workers, and who serves it.
struct model_card {
  std::int64_t created = 0;
  std::string owned_by;
};

/// The models this node can route now, by id (sorted: the same fleet gives the same list).
std::map<std::string, model_card> routable_models(const actors::fleet_snapshot& fleet) {
  std::map<std::string, model_card> out;
  std::map<std::string, std::pair<bool, bool>> halves; // model -> (prefill, decode) routable
  auto note = [&](const actors::worker_entry& w, const std::string& model) {
    auto created =
        std::chrono::duration_cast<std::chrono::seconds>(w.registered_at.time_since_epoch())
            .count();
    auto owner = w.spec.provider == protocol::provider_kind::none
                     ? std::string{"self_hosted"}
                     : std::string(protocol::to_string(w.spec.provider));
    auto [it, inserted] = out.try_emplace(model, model_card{created, owner});
    if (!inserted) {
      // Whatever the registration order: self-hosted wins, then the first provider by name.
      auto& card = it->second;
      card.created = std::min(card.created, created);
      if (card.owned_by != "self_hosted" && (owner == "self_hosted" || owner < card.owned_by)) {
        card.owned_by = owner;
      }
    }
  };
  for (auto& w : fleet.workers) {
    if (!w->live->routable()) {
      continue;
    }
    for (auto& m : w->models) {
      switch (w->spec.type) {
      case protocol::worker_type::regular:
        note(*w, m);
        break;
      case protocol::worker_type::prefill:
        halves[m].first = true;
        break;
      case protocol::worker_type::decode:
        halves[m].second = true;
        break;
      }
    }
  }
  // A model with only half a pair cannot be served: it is not advertised.
  for (auto& [model, h] : halves) {
    if (h.first && h.second) {
      for (auto& w : fleet.workers) {
        if (w->spec.type != protocol::worker_type::regular && w->serves(model)) {
          note(*w, model);
        }
      }
    }
  }
  return out;
}

json model_object(const std::string& id, const model_card& card) {
  return {{"id", id}, {"object", "model"}, {"created", card.created}, {"owned_by", card.owned_by}};
}

void list_models(http_context& ctx) {
  auto models = routable_models(*ctx.svc->fleet->get());
  if (models.empty()) {
    return ctx.error(protocol::error_code::service_unavailable,
                     "no model is available: no healthy worker is registered");
  }
  json data = json::array();
  for (auto& [id, card] : models) {
    data.push_back(model_object(id, card));
  }
  ctx.json(200, json{{"object", "list"}, {"data", std::move(data)}}.dump());
}

/// `s` with `%XX` escapes decoded (SDKs escape the `/` of ids such as `org/model`).
std::string percent_decode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') {
      return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
      return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
      return c - 'A' + 10;
    }
    return -1;
  };
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
      out.push_back(static_cast<char>(hex(s[i + 1]) * 16 + hex(s[i + 2])));
      i += 2;
    } else {
      out.push_back(s[i]);
    }
  }
  return out;
}

void get_model(http_context& ctx) {
  auto models = routable_models(*ctx.svc->fleet->get());
  // `/v1/models/{id}` or, for ids with one slash sent unescaped, `/v1/models/{org}/{name}`.
  std::string id;
  for (auto& p : ctx.params) {
    id += (id.empty() ? "" : "/") + percent_decode(p);
  }
  auto it = models.find(id);
  if (it == models.end()) {
    return ctx.error(protocol::error_code::model_not_found, "the model '" + id + "' does not exist",
                     "model");
  }
  ctx.json(200, model_object(it->first, it->second).dump());
}

void readiness(http_context& ctx) {
  auto fleet = ctx.svc->fleet->get();
  auto healthy = std::count_if(fleet->workers.begin(), fleet->workers.end(),
                               [](auto& w) { return !w->models.empty() && w->live->routable(); });
  json body{{"status", healthy > 0 ? "ready" : "not_ready"},
            {"healthy_workers", healthy},
            {"total_workers", fleet->workers.size()}};
  ctx.json(healthy > 0 ? 200 : 503, body.dump());
}

} // namespace

void add_info_routes(route_table& routes) {
  auto alive = [](http_context& ctx) { ctx.json(200, R"({"status":"ok"})"); };
  routes.add(verb::get, "/health", alive, protocol::api_format::openai, true);
  routes.add(verb::get, "/liveness", alive, protocol::api_format::openai, true);
  routes.add(verb::get, "/readiness", readiness, protocol::api_format::openai, true);
  routes.add(verb::get, "/v1/models", list_models);
  routes.add(verb::get, "/v1/models/{id}", get_model);
  routes.add(verb::get, "/v1/models/{org}/{name}", get_model);
}

} // namespace troupe::gateway
