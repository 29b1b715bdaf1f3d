#include "actors/registry.hpp"

#include <caf/typed_event_based_actor.hpp>
#include <nlohmann/json.hpp>
#include <random>
#include <spdlog/spdlog.h>

#include "actors/errors.hpp"

namespace troupe::actors {

namespace {

struct registry_state {
  static inline const char* name = "registry";

  boost::asio::io_context* ioc = nullptr;
  std::shared_ptr<fleet_view> view;
  std::vector<fleet_listener> listeners;
  worker_proxy_config cfg;
  inspector_actor inspector;
  std::vector<std::shared_ptr<worker_entry>> workers; ///< Registration order.
  std::uint64_t version = 0;
  std::mt19937_64 rng{std::random_device{}()};
};

using self_ptr = registry_actor::stateful_pointer<registry_state>;

std::string new_worker_id(registry_state& st) {
  for (;;) {
    char buf[16];
    std::snprintf(buf, sizeof(buf), "w-%08x", static_cast<unsigned>(st.rng() & 0xffffffffu));
    std::string id = buf;
    bool taken = std::any_of(st.workers.begin(), st.workers.end(),
                             [&](auto& w) { return w->id == id; });
    if (!taken) {
      return id;
    }
  }
}

void publish(self_ptr self) {
  auto& st = self->state;
  auto snap = std::make_shared<fleet_snapshot>();
  snap->version = ++st.version;
  snap->workers.reserve(st.workers.size());
  for (auto& w : st.workers) {
    // Entries are copied on publication: a published entry is never mutated afterwards.
    snap->workers.push_back(std::make_shared<const worker_entry>(*w));
  }
  fleet_ptr ptr = std::move(snap);
  st.view->set(ptr);
  for (auto& l : st.listeners) {
    self->send(l, publish_atom_v, ptr);
  }
}

nlohmann::json inspect_state(self_ptr self) {
  auto& st = self->state;
  std::set<std::string> models;
  for (auto& w : st.workers) {
    models.insert(w->models.begin(), w->models.end());
  }
  return {{"kind", "registry"},
          {"name", "registry"},
          {"id", self->id()},
          {"workers", st.workers.size()},
          {"models", models.size()},
          {"version", st.version},
          {"listeners", st.listeners.size()},
          {"mailbox_size", self->mailbox().size()}};
}

registry_actor::behavior_type registry(self_ptr self, boost::asio::io_context* ioc,
                                       std::shared_ptr<fleet_view> view,
                                       std::vector<fleet_listener> listeners,
                                       worker_proxy_config cfg, inspector_actor inspector) {
  auto& st = self->state;
  st.inspector = std::move(inspector);
  st.ioc = ioc;
  st.view = std::move(view);
  st.listeners = std::move(listeners);
  st.cfg = std::move(cfg);
  return {
      [self](add_atom, protocol::worker_spec& spec) -> caf::result<std::string> {
        auto& st = self->state;
        std::string why;
        auto checked = protocol::check(std::move(spec), why);
        if (!checked) {
          return make_caf_error(protocol::error_code::bad_request, why);
        }
        for (auto& w : st.workers) {
          if (w->spec.url == checked->spec.url) {
            return make_caf_error(protocol::error_code::conflict,
                                  "worker " + checked->spec.url + " is already registered as " +
                                      w->id);
          }
        }
        auto entry = std::make_shared<worker_entry>();
        entry->id = new_worker_id(st);
        entry->spec = checked->spec;
        entry->url = checked->url;
        if (checked->spec.model_id) {
          entry->models = {*checked->spec.model_id};
        }
        entry->live = std::make_shared<worker_live>();
        entry->registered_at = std::chrono::system_clock::now();
        entry->proxy = make_worker_proxy(self->system(), *st.ioc, entry->id, std::move(*checked),
                                         entry->live, caf::actor_cast<worker_listener>(self),
                                         st.cfg);
        spdlog::info("registered worker {} {} ({})", entry->id, entry->spec.url,
                     to_string(entry->spec.type));
        register_with(st.inspector, "worker_proxy", "worker_proxy:" + entry->id, entry->proxy);
        st.workers.push_back(entry);
        publish(self);
        return entry->id;
      },
      [self](remove_atom, const std::string& id) -> bool {
        auto& st = self->state;
        auto it = std::find_if(st.workers.begin(), st.workers.end(),
                               [&](auto& w) { return w->id == id; });
        if (it == st.workers.end()) {
          return false;
        }
        self->send((*it)->proxy, drain_atom_v);
        deregister_from(st.inspector, (*it)->proxy);
        spdlog::info("removed worker {} {}", id, (*it)->spec.url);
        st.workers.erase(it);
        publish(self);
        return true;
      },
      [self](models_atom, const std::string& id, std::vector<std::string>& models) {
        auto& st = self->state;
        for (auto& w : st.workers) {
          if (w->id == id && w->models != models) {
            w->models = std::move(models);
            publish(self);
            return;
          }
        }
      },
      [self](stop_atom) {
        for (auto& w : self->state.workers) {
          self->send(w->proxy, drain_atom_v);
        }
        self->state.workers.clear();
        publish(self);
        self->quit();
      },
      [self](inspect_atom) { return inspect_state(self).dump(); },
  };
}

} // namespace

registry_actor make_registry(caf::actor_system& sys, boost::asio::io_context& ioc,
                             std::shared_ptr<fleet_view> view,
                             std::vector<fleet_listener> listeners, worker_proxy_config cfg,
                             inspector_actor inspector) {
  return sys.spawn(registry, &ioc, std::move(view), std::move(listeners), std::move(cfg),
                   std::move(inspector));
}

} // namespace troupe::actors
