#include "actors/fleet.hpp"

#include "services/metrics.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace troupe::actors {

bool worker_entry::serves(std::string_view model) const {
  return model.empty() ? !models.empty()
                       : std::find(models.begin(), models.end(), model) != models.end();
}

protocol::engine_runtime runtime_of(const worker_entry& w) {
  if (w.spec.runtime) {
    return *w.spec.runtime;
  }
  auto r = w.live ? w.live->report.load() : nullptr;
  return r && r->runtime ? *r->runtime : protocol::engine_runtime::sglang;
}

protocol::kv_connector connector_of(const worker_entry& w) {
  if (w.spec.connector != protocol::kv_connector::unset) {
    return w.spec.connector;
  }
  auto r = w.live ? w.live->report.load() : nullptr;
  return r ? r->connector : protocol::kv_connector::unset;
}

std::string kv_engine_id_of(const worker_entry& w) {
  if (!w.spec.kv_engine_id.empty()) {
    return w.spec.kv_engine_id;
  }
  auto r = w.live ? w.live->report.load() : nullptr;
  return r ? r->kv_engine_id : std::string{};
}

nlohmann::json to_json(const worker_entry& w) {
  auto registered =
      std::chrono::duration_cast<std::chrono::seconds>(w.registered_at.time_since_epoch()).count();
  return {
      {"id", w.id},
      {"url", w.spec.url},
      {"worker_type", protocol::to_string(w.spec.type)},
      {"bootstrap_port",
       w.spec.bootstrap_port ? nlohmann::json(*w.spec.bootstrap_port) : nlohmann::json()},
      {"model_id", w.spec.model_id ? nlohmann::json(*w.spec.model_id) : nlohmann::json()},
      {"models", w.models},
      {"provider", w.spec.provider == protocol::provider_kind::none
                       ? nlohmann::json()
                       : nlohmann::json(protocol::to_string(w.spec.provider))},
      {"api_key_set", !w.spec.api_key.empty()},
      // The engine and (vLLM) KV config in effect, and whether the registration gave them.
      {"runtime", protocol::to_string(runtime_of(w))},
      {"runtime_source", w.spec.runtime                                            ? "registered"
                         : w.live->report.load() && w.live->report.load()->runtime ? "reported"
                                                                                   : "default"},
      {"kv_connector", connector_of(w) == protocol::kv_connector::unset
                           ? nlohmann::json()
                           : nlohmann::json(protocol::to_string(connector_of(w)))},
      {"kv_engine_id",
       kv_engine_id_of(w).empty() ? nlohmann::json() : nlohmann::json(kv_engine_id_of(w))},
      {"health", to_string(w.live->health.load())},
      {"circuit_breaker", to_string(w.live->breaker.load())},
      {"routable", !w.models.empty() && w.live->routable()},
      {"load", w.live->load()},
      {"requests_total", w.live->requests.load()},
      {"failures_total", w.live->failures.load()},
      {"registered_at", registered},
  };
}

const worker_entry* fleet_snapshot::find(std::string_view id) const {
  for (auto& w : workers) {
    if (w->id == id) {
      return w.get();
    }
  }
  return nullptr;
}

model_service fleet_snapshot::service_of(std::string_view model) const {
  model_service out;
  for (auto& w : workers) {
    if (!w->serves(model)) {
      continue;
    }
    out.known = true;
    switch (w->spec.type) {
    case protocol::worker_type::regular:
      out.regular = true;
      break;
    case protocol::worker_type::prefill:
      out.prefill = true;
      break;
    case protocol::worker_type::decode:
      out.decode = true;
      break;
    }
  }
  out.pd = out.prefill && out.decode;
  return out;
}

bool fleet_snapshot::any_routable() const {
  return std::any_of(workers.begin(), workers.end(),
                     [](auto& w) { return !w->models.empty() && w->live->routable(); });
}

void watch_fleet(services::metrics& m, std::shared_ptr<const fleet_view> view) {
  m.watch_workers([view = std::move(view)] {
    auto snap = view->get();
    std::vector<services::worker_gauges> out;
    out.reserve(snap->workers.size());
    for (auto& w : snap->workers) {
      services::worker_gauges g;
      g.url = w->spec.url;
      g.requests_active = w->live->local_load(); // this node's: summing nodes gives the fleet
      g.healthy = w->live->health.load() == health_state::healthy;
      switch (w->live->breaker.load()) {
      case breaker_state::closed:
        g.breaker = 0;
        break;
      case breaker_state::open:
        g.breaker = 1;
        break;
      case breaker_state::half_open:
        g.breaker = 2;
        break;
      }
      out.push_back(std::move(g));
    }
    return out;
  });
}

} // namespace troupe::actors
