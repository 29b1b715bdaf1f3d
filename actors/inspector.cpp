#include "actors/inspector.hpp"

#include "actors/errors.hpp"
#include "services/logs.hpp"

#include <algorithm>
#include <caf/typed_event_based_actor.hpp>
#include <deque>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace troupe::actors {

namespace {

using clock_type = std::chrono::steady_clock;
using json = nlohmann::json;

/// How asking one actor ended.
struct inspection {
  enum class outcome { ok, timeout, down, error };
  outcome result = outcome::error;
  json state;      ///< The actor's answer, when `ok`.
  std::string why; ///< What went wrong otherwise.
  std::chrono::microseconds latency{0};
};

std::string_view to_string(inspection::outcome o) {
  switch (o) {
  case inspection::outcome::ok:
    return "ok";
  case inspection::outcome::timeout:
    return "timeout";
  case inspection::outcome::down:
    return "down";
  case inspection::outcome::error:
    return "error";
  }
  return "error";
}

/// A registered actor.
struct member {
  std::string kind;
  std::string name;
  inspectable_actor handle;
  clock_type::time_point since;
};

using waiter = std::function<void(const inspection&)>;

struct inspector_state {
  static inline const char* name = "inspector";

  inspector_config cfg;
  std::shared_ptr<services::metrics> m;
  std::map<caf::actor_id, member> members; ///< By id: listings come out in spawn order.
  std::deque<caf::actor_id> queue;         ///< Waiting for a free slot.
  /// Who waits for the inspection of an actor (queued or in flight): asks are merged.
  std::unordered_map<caf::actor_id, std::vector<waiter>> waiting;
  /// Waiting for a mailbox-size read (the periodic gauge refresh), served after `queue`.
  std::deque<caf::actor_id> gauge_queue;
  std::unordered_set<caf::actor_id> gauge_pending; ///< Queued or in flight in `gauge_queue`.
  std::size_t outstanding = 0;
  std::uint64_t inspections = 0;
  std::uint64_t gauge_reads = 0;
  std::uint64_t timeouts = 0;
};

using self_ptr = inspector_actor::stateful_pointer<inspector_state>;

void pump(self_ptr self);

/// Hands the outcome of inspecting `id` to everyone waiting for it and updates its gauge.
void complete(self_ptr self, caf::actor_id id, inspection x) {
  auto& st = self->state;
  ++st.inspections;
  if (x.result == inspection::outcome::timeout) {
    ++st.timeouts;
  }
  if (auto it = st.members.find(id);
      it != st.members.end() && st.m && x.result == inspection::outcome::ok) {
    if (auto mb = x.state.find("mailbox_size"); mb != x.state.end() && mb->is_number()) {
      st.m->set_mailbox_size(it->second.name, mb->get<std::size_t>());
    }
  }
  auto node = st.waiting.extract(id);
  if (!node.empty()) {
    for (auto& w : node.mapped()) {
      w(x);
    }
  }
}

/// Classifies a failed ask.
inspection failed(const caf::error& err, std::chrono::milliseconds timeout) {
  inspection x;
  if (err == caf::sec::request_timeout) {
    x.result = inspection::outcome::timeout;
    x.why = "no answer within " + std::to_string(timeout.count()) + " ms";
  } else if (err == caf::sec::request_receiver_down) {
    x.result = inspection::outcome::down;
    x.why = "the actor terminated";
  } else {
    x.result = inspection::outcome::error;
    x.why = to_api_error(err).message;
  }
  return x;
}

/// Starts queued inspections while slots are free.
void pump(self_ptr self) {
  auto& st = self->state;
  while (st.outstanding < st.cfg.max_outstanding && !st.queue.empty()) {
    auto id = st.queue.front();
    st.queue.pop_front();
    auto it = st.members.find(id);
    if (it == st.members.end()) {
      complete(self, id, {inspection::outcome::down, {}, "not registered", {}});
      continue;
    }
    ++st.outstanding;
    auto started = clock_type::now();
    auto done = [self, id, started](inspection x) {
      --self->state.outstanding;
      x.latency =
          std::chrono::duration_cast<std::chrono::microseconds>(clock_type::now() - started);
      complete(self, id, std::move(x));
      pump(self);
    };
    // A CAF request timeout is fine here: inspection is off the hot path.
    self->request(it->second.handle, st.cfg.timeout, inspect_atom_v)
        .then(
            [done](std::string& answer) {
              inspection x;
              x.state = json::parse(answer, nullptr, false);
              if (x.state.is_object()) {
                x.result = inspection::outcome::ok;
              } else {
                x.result = inspection::outcome::error;
                x.why = "the actor's state is not a JSON object";
                x.state = nullptr;
              }
              done(std::move(x));
            },
            [done, timeout = st.cfg.timeout](caf::error& err) { done(failed(err, timeout)); });
  }
  while (st.outstanding < st.cfg.max_outstanding && !st.gauge_queue.empty()) {
    auto id = st.gauge_queue.front();
    st.gauge_queue.pop_front();
    auto it = st.members.find(id);
    if (it == st.members.end() || st.waiting.count(id) != 0) {
      // Gone, or a full inspection is on its way and will set the gauge.
      st.gauge_pending.erase(id);
      continue;
    }
    ++st.outstanding;
    auto done = [self, id] {
      --self->state.outstanding;
      self->state.gauge_pending.erase(id);
      ++self->state.gauge_reads;
      pump(self);
    };
    self->request(it->second.handle, st.cfg.timeout, inspect_atom_v, mailbox_atom_v)
        .then(
            [self, id, done](std::uint64_t size) {
              auto& st = self->state;
              if (auto who = st.members.find(id); who != st.members.end() && st.m) {
                st.m->set_mailbox_size(who->second.name, size);
              }
              done();
            },
            [self, done](caf::error& err) {
              if (err == caf::sec::request_timeout) {
                ++self->state.timeouts;
              }
              done();
            });
  }
}

/// Inspects actor `id` and calls `w` with the outcome (merged with any ask already pending).
void fetch(self_ptr self, caf::actor_id id, waiter w) {
  auto& st = self->state;
  auto [it, fresh] = st.waiting.try_emplace(id);
  it->second.push_back(std::move(w));
  if (fresh) {
    st.queue.push_back(id);
    pump(self);
  }
}

json own_state(self_ptr self) {
  auto& st = self->state;
  return {{"kind", "inspector"},
          {"name", "inspector"},
          {"id", self->id()},
          {"registered", st.members.size()},
          {"outstanding", st.outstanding},
          {"queued", st.queue.size()},
          {"inspections_total", st.inspections},
          {"gauge_reads_total", st.gauge_reads},
          {"gauge_queued", st.gauge_queue.size()},
          {"timeouts_total", st.timeouts},
          {"timeout_ms", st.cfg.timeout.count()},
          {"max_outstanding", st.cfg.max_outstanding},
          {"mailbox_size", self->mailbox().size()}};
}

/// The fields every entry of a listing has, from the registration and the outcome.
json entry(caf::actor_id id, const member& who, const inspection& x) {
  json e{{"id", id},
         {"kind", who.kind},
         {"name", who.name},
         {"status", to_string(x.result)},
         {"mailbox_size", nullptr},
         {"inspect_us", x.latency.count()}};
  if (x.result == inspection::outcome::ok) {
    if (auto mb = x.state.find("mailbox_size"); mb != x.state.end()) {
      e["mailbox_size"] = *mb;
    }
  } else {
    e["error"] = x.why;
  }
  return e;
}

/// The scalar fields of an actor's state: what a listing shows of it.
json summary_of(const json& state) {
  json out = json::object();
  if (!state.is_object()) {
    return out;
  }
  for (auto& [key, value] : state.items()) {
    if (key == "id" || key == "kind" || key == "name" || key == "mailbox_size" ||
        value.is_structured()) {
      continue;
    }
    out[key] = value;
  }
  return out;
}

/// Collects the inspections of one listing.
struct listing {
  /// Gets the listing (a JSON array) and how many actors matched the kinds asked for.
  std::function<void(std::string, std::uint64_t)> done;
  bool with_self = true; ///< The inspector's own entry comes first.
  std::uint64_t matched = 0;
  std::vector<std::pair<caf::actor_id, member>> who;
  std::vector<inspection> results;
  std::size_t remaining = 0;
};

void deliver(self_ptr self, listing& l) {
  json out = json::array();
  if (self->state.m) {
    self->state.m->set_mailbox_size("inspector", self->mailbox().size());
  }
  if (l.with_self) {
    auto own = own_state(self);
    json me{{"id", self->id()},
            {"kind", "inspector"},
            {"name", "inspector"},
            {"status", "ok"},
            {"mailbox_size", own["mailbox_size"]},
            {"inspect_us", 0},
            {"summary", summary_of(own)}};
    out.push_back(std::move(me));
  }
  for (std::size_t i = 0; i < l.who.size(); ++i) {
    auto e = entry(l.who[i].first, l.who[i].second, l.results[i]);
    e["summary"] = summary_of(l.results[i].state);
    out.push_back(std::move(e));
  }
  l.done(out.dump(-1, ' ', false, json::error_handler_t::replace), l.matched);
}

/// Lists the actors of `kinds` (every kind when empty), the inspector first, at most `limit`
/// of them in id order (0: all), each inspected now; `done` gets the listing.
void list(self_ptr self, const std::vector<std::string>& kinds, std::uint64_t limit,
          std::function<void(std::string, std::uint64_t)> done) {
  auto& st = self->state;
  auto wanted = [&](const std::string& kind) {
    return kinds.empty() || std::find(kinds.begin(), kinds.end(), kind) != kinds.end();
  };
  auto l = std::make_shared<listing>();
  l->done = std::move(done);
  l->with_self = wanted("inspector");
  l->matched = l->with_self ? 1 : 0;
  auto room = [&] { return limit == 0 || l->who.size() + (l->with_self ? 1 : 0) < limit; };
  for (auto& [id, who] : st.members) {
    if (!wanted(who.kind)) {
      continue;
    }
    ++l->matched;
    if (room()) {
      l->who.emplace_back(id, who);
    }
  }
  l->results.resize(l->who.size());
  l->remaining = l->who.size();
  if (l->remaining == 0) {
    deliver(self, *l);
    return;
  }
  for (std::size_t i = 0; i < l->who.size(); ++i) {
    fetch(self, l->who[i].first, [self, l, i](const inspection& x) {
      l->results[i] = x;
      if (--l->remaining == 0) {
        deliver(self, *l);
      }
    });
  }
}

void refresh(self_ptr self) {
  auto& st = self->state;
  if (st.m) {
    st.m->set_mailbox_size("inspector", self->mailbox().size());
  }
  for (auto& [id, who] : st.members) {
    if (st.gauge_pending.insert(id).second) {
      st.gauge_queue.push_back(id);
    }
  }
  pump(self);
}

void forget(self_ptr self, caf::actor_id id) {
  auto& st = self->state;
  if (auto it = st.members.find(id); it != st.members.end()) {
    if (st.m) {
      st.m->forget_actor(it->second.name);
    }
    st.members.erase(it);
  }
}

inspector_actor::behavior_type inspector(self_ptr self, inspector_config cfg,
                                         std::shared_ptr<services::metrics> m) {
  auto& st = self->state;
  st.cfg = cfg;
  st.m = std::move(m);
  self->set_down_handler([self](caf::down_msg& dm) { forget(self, dm.source.id()); });
  if (cfg.refresh_interval.count() > 0) {
    self->delayed_send(self, cfg.refresh_interval, refresh_atom_v);
  }
  return {
      [self](add_atom, std::string& kind, std::string& name, caf::actor& handle) {
        if (!handle) {
          return;
        }
        auto id = handle->id();
        self->monitor(handle);
        logs::inspector().debug("watching {} {} (actor {})", kind, name, id);
        self->state.members[id] =
            member{std::move(kind), std::move(name), caf::actor_cast<inspectable_actor>(handle),
                   clock_type::now()};
      },
      [self](remove_atom, caf::actor_id id) {
        if (auto it = self->state.members.find(id); it != self->state.members.end()) {
          self->demonitor(it->second.handle.address());
        }
        forget(self, id);
      },
      [self](list_atom) -> caf::result<std::string> {
        auto rp = self->make_response_promise<std::string>();
        list(self, {}, 0, [rp](std::string out, std::uint64_t) mutable { rp.deliver(out); });
        return rp;
      },
      [self](list_atom, std::vector<std::string>& kinds,
             std::uint64_t limit) -> caf::result<std::string, std::uint64_t, std::uint64_t> {
        auto rp = self->make_response_promise<std::string, std::uint64_t, std::uint64_t>();
        auto registered = static_cast<std::uint64_t>(self->state.members.size() + 1);
        list(self, kinds, limit, [rp, registered](std::string out, std::uint64_t matched) mutable {
          rp.deliver(std::move(out), registered, matched);
        });
        return rp;
      },
      [self](inspect_atom, caf::actor_id id) -> caf::result<std::string> {
        auto& st = self->state;
        if (id == self->id()) {
          auto own = own_state(self);
          member me{"inspector", "inspector", {}, clock_type::now()};
          auto e = entry(id, me, {inspection::outcome::ok, own, {}, {}});
          e["state"] = std::move(own);
          return e.dump();
        }
        auto it = st.members.find(id);
        if (it == st.members.end()) {
          return make_caf_error(protocol::error_code::not_found,
                                "no long-lived actor with id " + std::to_string(id));
        }
        auto rp = self->make_response_promise<std::string>();
        auto who = it->second;
        fetch(self, id, [rp, id, who](const inspection& x) mutable {
          auto e = entry(id, who, x);
          e["registered_ms_ago"] =
              std::chrono::duration_cast<std::chrono::milliseconds>(clock_type::now() - who.since)
                  .count();
          e["state"] = x.state;
          rp.deliver(e.dump(-1, ' ', false, json::error_handler_t::replace));
        });
        return rp;
      },
      [self](inspect_atom) { return own_state(self).dump(); },
      [self](refresh_atom) {
        refresh(self);
        self->delayed_send(self, self->state.cfg.refresh_interval, refresh_atom_v);
      },
  };
}

} // namespace

inspector_actor make_inspector(caf::actor_system& sys, inspector_config cfg,
                               std::shared_ptr<services::metrics> m) {
  return sys.spawn(inspector, cfg, std::move(m));
}

} // namespace troupe::actors
