#include "actors/fleet.hpp"

#include "services/metrics.hpp"

#include <algorithm>
#include <iterator>
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
  return index.service_of(model);
}

namespace {

constexpr std::size_t role_slot(protocol::worker_type t) {
  return static_cast<std::size_t>(t);
}

using entry_list = std::vector<const worker_entry*>;

/// Where `w` is in `list` (a group's list, in `seq` order), or `list.end()`: a binary search
/// by registration order, not a pass over 4,000 pointers; a scan if the order does not hold.
entry_list::const_iterator locate(const entry_list& list, const worker_entry* w) {
  auto at = std::lower_bound(list.begin(), list.end(), w,
                             [](auto* a, auto* b) { return a->seq < b->seq; });
  for (; at != list.end() && (*at)->seq == w->seq; ++at) {
    if (*at == w) {
      return at;
    }
  }
  return std::find(list.begin(), list.end(), w);
}

} // namespace

const candidate_group* fleet_index::find(protocol::worker_type role, std::string_view model) const {
  auto it = models_->find(model);
  return it == models_->end() ? nullptr : it->second[role_slot(role)].get();
}

model_service fleet_index::service_of(std::string_view model) const {
  model_service out;
  auto it = models_->find(model);
  if (it == models_->end()) {
    return out;
  }
  auto& g = it->second;
  using protocol::worker_type;
  out.regular = g[role_slot(worker_type::regular)] != nullptr;
  out.prefill = g[role_slot(worker_type::prefill)] != nullptr;
  out.decode = g[role_slot(worker_type::decode)] != nullptr;
  out.pd = out.prefill && out.decode;
  out.known = out.regular || out.prefill || out.decode;
  return out;
}

std::size_t fleet_index::model_count() const noexcept {
  return models_->size() - (models_->count("") ? 1 : 0);
}

void fleet_index::edit_group(model_map& map, const std::string& model, std::size_t slot,
                             std::size_t provider, const worker_entry& w, bool add) {
  auto& groups = map[model];
  auto g = std::make_shared<candidate_group>();
  const std::vector<const worker_entry*> none;
  const auto& old = groups[slot] ? groups[slot]->by_provider[provider] : none;
  for (std::size_t p = 0; groups[slot] && p < g->by_provider.size(); ++p) {
    if (p != provider) {
      g->by_provider[p] = groups[slot]->by_provider[p];
    }
  }
  // The edited list is built in one pass at its final size: a copy of the old one and an
  // insert would move (and at 4,000 workers reallocate) it twice.
  auto& list = g->by_provider[provider];
  list.reserve(old.size() + (add ? 1 : 0));
  if (add) {
    auto at = std::upper_bound(old.begin(), old.end(), &w,
                               [](auto* a, auto* b) { return a->seq < b->seq; });
    list.insert(list.end(), old.begin(), at);
    list.push_back(&w);
    list.insert(list.end(), at, old.end());
  } else if (auto at = locate(old, &w); at != old.end()) {
    list.insert(list.end(), old.begin(), at); // two copies of a block each, no loop
    list.insert(list.end(), std::next(at), old.end());
  } else {
    list = old;
  }
  g->providers = 0;
  for (std::size_t p = 0; p < g->by_provider.size(); ++p) {
    if (!g->by_provider[p].empty()) {
      g->providers |= 1u << p;
    }
  }
  groups[slot] = g->providers ? group_ptr{std::move(g)} : nullptr;
  if (!groups[0] && !groups[1] && !groups[2]) {
    map.erase(model);
  }
}

fleet_index fleet_index::edit(const worker_entry& w, bool add) const {
  if (w.models.empty()) {
    return *this; // serves nothing yet: in no group
  }
  auto next = std::make_shared<model_map>(*models_); // the groups are shared, not copied
  auto slot = role_slot(w.spec.type);
  auto provider = static_cast<std::size_t>(w.spec.provider);
  auto touch = [&](const std::string& model) { edit_group(*next, model, slot, provider, w, add); };
  touch("");
  for (std::size_t i = 0; i < w.models.size(); ++i) {
    // A model listed twice is in its group once.
    if (std::find(w.models.begin(), w.models.begin() + i, w.models[i]) == w.models.begin() + i &&
        !w.models[i].empty()) {
      touch(w.models[i]);
    }
  }
  fleet_index out;
  out.models_ = std::move(next);
  return out;
}

fleet_index fleet_index::with(const worker_entry& w) const {
  return edit(w, true);
}

fleet_index fleet_index::without(const worker_entry& w) const {
  return edit(w, false);
}

fleet_index fleet_index::replaced(const worker_entry& old, const worker_entry& next) const {
  if (old.spec.type != next.spec.type || old.spec.provider != next.spec.provider ||
      old.models.empty() || next.models.empty()) {
    return without(old).with(next);
  }
  auto map = std::make_shared<model_map>(*models_);
  auto slot = role_slot(old.spec.type);
  auto provider = static_cast<std::size_t>(old.spec.provider);
  auto serves = [](const worker_entry& w, const std::string& m) {
    return m.empty() || std::find(w.models.begin(), w.models.end(), m) != w.models.end();
  };
  auto swap_in = [&](const std::string& model) {
    auto it = map->find(model);
    if (it == map->end() || !it->second[slot]) {
      return false;
    }
    auto g = std::make_shared<candidate_group>(*it->second[slot]);
    auto& list = g->by_provider[provider];
    auto at = locate(list, &old);
    if (at == list.end()) {
      return false;
    }
    list[static_cast<std::size_t>(at - list.begin())] = &next;
    it->second[slot] = std::move(g);
    return true;
  };
  fleet_index out;
  out.models_ = map;
  // Models both serve: swapped in place; the others: dropped or added.
  bool ok = swap_in("");
  for (auto& m : old.models) {
    if (!m.empty() && serves(next, m)) {
      ok = swap_in(m) && ok;
    }
  }
  if (!ok) {
    return without(old).with(next);
  }
  worker_entry gone = old; // the models only `old` served
  gone.models.clear();
  for (auto& m : old.models) {
    if (!m.empty() && !serves(next, m) && !serves(gone, m)) {
      gone.models.push_back(m);
    }
  }
  worker_entry fresh = next; // the models only `next` serves
  fresh.models.clear();
  for (auto& m : next.models) {
    if (!m.empty() && !serves(old, m) && !serves(fresh, m)) {
      fresh.models.push_back(m);
    }
  }
  // Edit per model without the any-model group, which holds `next` already.
  auto edit_models = [&](const worker_entry& w, const worker_entry& as, bool add) {
    for (auto& m : w.models) {
      edit_group(*map, m, slot, provider, as, add);
    }
  };
  edit_models(gone, old, false);
  edit_models(fresh, next, true);
  return out;
}

fleet_index fleet_index::of(const worker_list& workers) {
  // One pass into groups of our own, frozen at the end: O(workers x their models).
  std::unordered_map<std::string, std::array<std::shared_ptr<candidate_group>, 3>,
                     protocol::string_hash, std::equal_to<>>
      groups;
  for (auto& w : workers) {
    if (w->models.empty()) {
      continue;
    }
    auto add = [&](const std::string& model) {
      auto& g = groups[model][role_slot(w->spec.type)];
      if (!g) {
        g = std::make_shared<candidate_group>();
      }
      g->by_provider[static_cast<std::size_t>(w->spec.provider)].push_back(w.get());
      g->providers |= provider_bit(w->spec.provider);
    };
    add("");
    for (std::size_t i = 0; i < w->models.size(); ++i) {
      if (!w->models[i].empty() && std::find(w->models.begin(), w->models.begin() + i,
                                             w->models[i]) == w->models.begin() + i) {
        add(w->models[i]);
      }
    }
  }
  auto map = std::make_shared<model_map>();
  for (auto& [model, roles] : groups) {
    auto& out = (*map)[model];
    for (std::size_t r = 0; r < roles.size(); ++r) {
      out[r] = std::move(roles[r]);
    }
  }
  fleet_index out;
  out.models_ = std::move(map);
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
